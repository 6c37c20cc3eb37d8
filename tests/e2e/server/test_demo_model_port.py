"""The demo model's own port is guarded like the gateway's: a cross-origin `text/plain` POST (what any web page can
send without a preflight) is refused before any work, and a body past the gateway's `max_request_bytes` is
refused with a 413 instead of being read whole."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.demo.server import DemoModel

CHAT = {"messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def model() -> Iterator[DemoModel]:
    running = DemoModel(max_body_bytes=64 * 1024).start()
    yield running
    running.stop()


def test_the_demo_port_refuses_what_the_gateway_refuses(model: DemoModel) -> None:
    url = f"{model.base_url}/chat/completions"
    page = httpx.post(url, content=b'{"messages": []}', headers={"origin": "https://pages.example",
                                                                 "content-type": "text/plain"})  # fmt: skip
    assert page.status_code == 403 and page.json()["error"]["code"] == "origin_not_allowed"
    plain = httpx.post(url, content=b'{"messages": []}', headers={"content-type": "text/plain"})
    assert plain.status_code == 415
    rebound = httpx.post(url, json=CHAT, headers={"host": "rebound.example"})
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "host_not_allowed"
    huge = httpx.post(url, content=b"x" * (1024 * 1024), headers={"content-type": "application/json"})
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"
    answered = httpx.post(url, json=CHAT)
    assert answered.status_code == 200 and answered.json()["model"] == "toolsift-demo"
