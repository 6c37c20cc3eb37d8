"""`initialize` answered over stdio before the gateway is imported, and the server told of it afterwards.

Importing the gateway and its MCP libraries takes about a second, and an MCP client's connect timeout runs
from the spawn. So `toolsift mcp --stdio` first reads the client's first message straight from fd 0 (what came
with it is kept) and, when it is `initialize`, answers it on fd 1 at once
(app/fronts/mcp/handshake.py). Once the server is built, it runs on pipes standing in for fd 0 and 1: what was
read is replayed to it, so its session is initialized as usual, and its own answer to that `initialize` is
dropped on the way out; everything else passes through unchanged.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

READ_LIMIT = 1 << 20  # the longest first message read here; a longer one is passed on unanswered


class EarlyInitialize:
    def __init__(self, answer: Callable[[Any], dict[str, Any]]) -> None:
        self.answer = answer
        self.first = b""
        self.answered: Any = None  # the id of the `initialize` answered here
        self._read = threading.Event()
        threading.Thread(target=self._first_message, name="mcp-initialize", daemon=True).start()

    def _first_message(self) -> None:
        """Read up to the end of the first line (what came with it is replayed too), and answer it."""
        try:
            read = bytearray()
            while len(read) < READ_LIMIT and b"\n" not in read:
                chunk = os.read(0, 65536)
                if not chunk:
                    break
                read += chunk
            self.first = bytes(read)
            message = _message(self.first.split(b"\n", 1)[0])
            if message is not None and message.get("method") == "initialize" and "id" in message:
                result = {"jsonrpc": "2.0", "id": message["id"], "result": self.answer(message.get("params"))}
                os.write(1, json.dumps(result, separators=(",", ":")).encode() + b"\n")
                self.answered = message["id"]
        finally:
            self._read.set()

    def wait(self) -> None:
        self._read.wait()

    def install(self) -> None:
        """Put the pipes in place of fd 0 and 1 (after `wait`): the first message first, then the rest of stdin;
        out, everything but the server's answer to the `initialize` already answered."""
        stdin, stdout = os.dup(0), os.dup(1)
        read_in, write_in = os.pipe()
        read_out, write_out = os.pipe()
        os.dup2(read_in, 0)
        os.dup2(write_out, 1)
        os.close(read_in)
        os.close(write_out)
        threading.Thread(target=_copy_in, args=(self.first, stdin, write_in), daemon=True).start()
        threading.Thread(target=_copy_out, args=(read_out, stdout, self.answered), daemon=True).start()


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _copy_in(first: bytes, source: int, sink: int) -> None:
    try:
        _write_all(sink, first)
        while chunk := os.read(source, 65536):
            _write_all(sink, chunk)
    except OSError:
        pass
    finally:
        os.close(sink)  # the server reads the end of input


def _copy_out(source: int, sink: int, answered: Any) -> None:
    with os.fdopen(source, "rb", buffering=65536) as lines:
        for line in lines:
            if answered is not None:
                message = _message(line)
                if message is not None and message.get("id") == answered and "method" not in message:
                    answered = None  # the server's own answer to it: the client has one already
                    continue
            try:
                _write_all(sink, line)
            except OSError:
                return


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
