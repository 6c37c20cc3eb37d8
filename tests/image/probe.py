"""The checks `make test-image` (tests/image/run) makes of a running container, from outside it, as a user would:
the standard library only, so the host's python3 runs it without the project's environment.

    probe.py demo URL --logs 'podman logs NAME'
    probe.py scale URL --api-key KEY --redis HOST --upstream-port PORT
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEMO_PROMPT = "Convert 250 USD to EUR and save the result as a note."  # the README's curl example
CONSOLE_LINK = re.compile(r"/console#key=(\S+)")


def call(url: str, body: Any = None, key: str | None = None, timeout: float = 60) -> tuple[int, Any]:
    """Status and body (JSON when it is JSON) of a GET, or of a POST of `body`."""
    headers = {"content-type": "application/json"} if body is not None else {}
    if key:
        headers["authorization"] = f"Bearer {key}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, raw, kind = response.status, response.read(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as error:
        status, raw, kind = error.code, error.read(), error.headers.get("content-type", "")
    return status, json.loads(raw) if "json" in kind else raw.decode("utf-8", "replace")


def wait_healthy(base: str, seconds: float = 180) -> dict[str, Any]:
    """/healthz once every MCP server is up (the image's servers start with the gateway)."""
    deadline, last = time.monotonic() + seconds, "no answer"
    while time.monotonic() < deadline:
        try:
            status, body = call(f"{base}/healthz", timeout=5)
            if status == 200 and body["status"] == "ok":
                return dict(body)
            last = f"{status} {body}"
        except OSError as error:
            last = str(error)
        time.sleep(1)
    raise SystemExit(f"probe: {base}/healthz not ok after {seconds:.0f} s: {last}")


def wait_ready(base: str, seconds: float = 180) -> None:
    """/readyz 200, as a load balancer waits for it: started, and search by meaning ready (tools embedded)."""
    deadline, last = time.monotonic() + seconds, "no answer"
    while time.monotonic() < deadline:
        try:
            status, body = call(f"{base}/readyz", timeout=5)
            if status == 200:
                return
            last = f"{status} {body}"
        except OSError as error:
            last = str(error)
        time.sleep(1)
    raise SystemExit(f"probe: {base}/readyz not ready after {seconds:.0f} s: {last}")


def check(condition: bool, what: str, seen: Any = "") -> None:
    if not condition:
        raise SystemExit(f"probe: FAILED: {what} {seen}")
    print(f"probe: ok: {what}")


def demo(base: str, logs: str) -> None:
    health = wait_healthy(base)
    check(set(health["servers"]) == {"weather", "notes", "calendar", "finance", "textkit"}, "/healthz: 5 servers up")
    status, answer = call(f"{base}/v1/chat/completions", {"model": "fast", "messages": [{"role": "user", "content":
                                                                                       DEMO_PROMPT}]})  # fmt: skip
    check(status == 200, "a chat answers", answer)
    content = answer["choices"][0]["message"]["content"]
    called = answer["tool_discovery"]["tools_called"]
    check(content.startswith("[demo model") and "EUR" in content, "the demo model's answer", content)
    check(called == ["finance__convert_currency", "notes__create_note"], "found and called the tools", called)
    status, page = call(f"{base}/console")
    check(status == 200 and "console.js" in page, "the console page")
    printed = subprocess.run(shlex.split(logs), capture_output=True, text=True, check=True)
    link = CONSOLE_LINK.search(printed.stdout + printed.stderr)
    check(link is not None, "toolsift demo printed the console's link with its key")
    assert link is not None
    status, body = call(f"{base}/admin/servers")
    check(status == 401, "the admin API without the key refused through the published port", body)
    status, body = call(f"{base}/admin/servers", key=link.group(1))
    check(status == 200 and len(body["servers"]) == 5, "the admin API with the printed key", body)


class Upstream(BaseHTTPRequestHandler):
    """A chat-completions upstream that answers every request with one fixed text."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({
            "id": "chatcmpl-image", "object": "chat.completion", "created": 0, "model": "image",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "from the upstream"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def redis_keys(host: str) -> int:
    with socket.create_connection((host, 6379), timeout=5) as connection:
        connection.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
        return int(connection.recv(64).decode().strip().lstrip(":"))


def scale(base: str, key: str, redis: str) -> None:
    wait_healthy(base)
    wait_ready(base)
    check(call(f"{base}/v1/models")[0] == 401, "no gateway key: refused")
    before = redis_keys(redis)
    created = [call(f"{base}/v1/responses", {"model": "fast", "input": "hello"}, key=key) for _ in range(4)]
    check(all(status == 200 for status, _ in created), "responses created through the workers", created)
    check(redis_keys(redis) > before, "stored in Redis")
    # Whichever of the two workers answers, it finds every stored response.
    read = [call(f"{base}/v1/responses/{response['id']}", key=key) for _, response in created for _ in range(3)]
    found = [status == 200 and "from the upstream" in json.dumps(body) for status, body in read]
    check(all(found), "every stored response read back, 3 times each", read)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["demo", "scale"])
    parser.add_argument("base")
    parser.add_argument("--logs", default="")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--redis", default="127.0.0.1")
    parser.add_argument("--upstream-port", type=int, default=0)
    args = parser.parse_args()
    if args.what == "demo":
        demo(args.base, args.logs)
        return
    # On every interface: the gateway's container reaches it at the bridge network's gateway address.
    upstream = ThreadingHTTPServer(("0.0.0.0", args.upstream_port), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        scale(args.base, args.api_key, args.redis)
    finally:
        upstream.shutdown()


if __name__ == "__main__":
    sys.exit(main())
