"""A local OpenAI-compatible upstream that answers from a script, served by uvicorn in a thread.

Integration tests push the replies they want, run the real gateway against it, and read back every request
the gateway sent, so they can assert on exactly what went upstream.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ScriptedUpstream:
    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedUpstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)

    def script(self, *replies: dict[str, Any]) -> None:
        with self._lock:
            self.replies = list(replies)
            self.requests.clear()
            self.headers.clear()

    def tool_names(self, call: int) -> list[str]:
        return [tool["function"]["name"] for tool in self.requests[call].get("tools", [])]

    async def _complete(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        with self._lock:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
            reply = self.replies.pop(0) if self.replies else None
        if reply is None:
            return JSONResponse({"error": {"message": "script exhausted", "type": "test_error"}}, status_code=500)
        return JSONResponse(reply)
