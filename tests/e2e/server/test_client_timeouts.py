"""Slow clients against `toolsift serve` over real sockets: headers and bodies have deadlines."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support import free_port, served_gateway

HEADERS = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    path = tmp_path_factory.mktemp("slow") / "config.json"
    path.write_text(json.dumps({"client_header_timeout": 1, "client_body_timeout": 1.5}))
    port = free_port()
    with served_gateway(path, port):
        yield "127.0.0.1", port


def _trickle(address: tuple[str, int], head: bytes, data: bytes, count: int) -> list[bytes]:
    """`count` connections send `head` at once, then `data` a byte at a time, round robin, until the gateway
    closes each one (a connection still open after 20 s fails the test); returns what each connection received."""
    sockets = [socket.create_connection(address) for _ in range(count)]
    for sock in sockets:
        sock.sendall(head)
        sock.setblocking(False)
    received = [b""] * count
    open_ = set(range(count))
    started = time.monotonic()
    position = 0
    while open_ and time.monotonic() - started < 20:
        for index in list(open_):
            try:
                chunk = sockets[index].recv(65536)
                received[index] += chunk
                if not chunk:
                    open_.discard(index)
                    continue
            except BlockingIOError:
                pass
            except ConnectionResetError:
                open_.discard(index)
                continue
            try:
                sockets[index].send(data[position % len(data) : position % len(data) + 1])
            except (BrokenPipeError, ConnectionResetError):
                open_.discard(index)
        position += 1
        time.sleep(0.1)
    for sock in sockets:
        sock.close()
    assert not open_, "every slow connection was closed"
    return received


def test_headers_sent_a_byte_at_a_time_are_cut_off(gateway: tuple[str, int]) -> None:
    received = _trickle(gateway, b"", HEADERS + b"x-slow: " + b"a" * 10_000, 30)
    for answer in received:
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert b'"code": "request_timeout"' in answer and b"did not arrive within" in answer
    assert httpx.get(f"http://{gateway[0]}:{gateway[1]}/healthz", timeout=2).status_code == 200


def test_a_trickling_body_is_cut_off_with_408(gateway: tuple[str, int]) -> None:
    head = HEADERS + b"content-length: 100000\r\n\r\n"
    received = _trickle(gateway, head, b'{"model": "x", "messages": []}', 10)
    for answer in received:
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert b"The request body did not arrive within the gateway's 1.5s limit." in answer


def test_a_connection_that_never_sends_is_closed_and_keep_alive_is_not_cut(gateway: tuple[str, int]) -> None:
    idle = socket.create_connection(gateway, timeout=10)  # recv raises if the gateway holds it open for 10 s
    assert idle.recv(100) == b""
    with httpx.Client(base_url=f"http://{gateway[0]}:{gateway[1]}") as client:
        assert client.get("/healthz").status_code == 200
        time.sleep(1.5)  # idle between requests is keep-alive's business, not the header timeout's
        again = client.get("/v1/models")
        assert again.status_code == 200
        assert client.post("/v1/chat/completions", json={"model": "x"}).status_code == 400


def _answer(address: tuple[str, int], data: bytes) -> tuple[bytes, dict[str, str], bytes]:
    """Send `data`, read until the gateway closes; the status line, headers and body it wrote."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = {name.decode().lower(): value.decode() for name, _, value in (line.partition(b": ") for line in lines)}
    return status, headers, body


def test_answers_written_without_the_app_carry_a_request_id_and_a_json_error(gateway: tuple[str, int]) -> None:
    body_late = HEADERS + b"x-request-id: mine-408\r\ncontent-length: 100\r\n\r\n{"
    status, headers, body = _answer(gateway, body_late)
    assert status == b"HTTP/1.1 408 Request Timeout" and headers["x-request-id"] == "mine-408", "the client's id"
    assert json.loads(body)["error"]["code"] == "request_timeout"
    status, headers, _ = _answer(gateway, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert status.startswith(b"HTTP/1.1 408 ") and headers["x-request-id"].startswith("req_")
    status, headers, body = _answer(gateway, b"NOT HTTP AT ALL\r\n\r\n")
    assert status == b"HTTP/1.1 400 Bad Request" and headers["x-request-id"].startswith("req_")
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == "invalid_http" and error["message"].startswith("Invalid HTTP request received")
