"""A request's deferred tools are indexed off the event loop, once per distinct list, on every front: 512 tools
with long descriptions used to block every other request while the stemmer read them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from app.discovery import index as index_module
from tests.support import Upstream, chat_body, completion

COUNT = 512


VOCABULARY = "read write file search list create delete update issue branch commit review".split()


def _description(i: int) -> str:
    """About 2 KB, the words a real tool list repeats."""
    return f"Tool {i}: " + " ".join(f"{VOCABULARY[j % len(VOCABULARY)]}{j % 40}" for j in range(250))


def chat_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": f"tool_{i}", "description": _description(i), "parameters": {"type": "object"}},
            "defer_loading": True,
        }
        for i in range(COUNT)
    ]


def responses_tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": f"tool_{i}", "description": _description(i), "parameters": {"type": "object"},
         "defer_loading": True}
        for i in range(COUNT)
    ]  # fmt: skip


def messages_tools() -> list[dict[str, Any]]:
    return [
        {"name": f"tool_{i}", "description": _description(i), "input_schema": {"type": "object"}, "defer_loading": True}
        for i in range(COUNT)
    ]


MESSAGES = {"model": "fast", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
BODIES: dict[str, Callable[[], tuple[str, dict[str, Any]]]] = {
    "chat": lambda: ("/v1/chat/completions", chat_body("hi", tools=chat_tools())),
    "responses": lambda: ("/v1/responses", {"model": "fast", "input": "hi", "tools": responses_tools()}),
    "messages": lambda: ("/v1/messages", {**MESSAGES, "tools": messages_tools()}),
}


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Every index built: (its tool count, whether it was built on the event loop's thread)."""
    seen: list[tuple[int, bool]] = []
    real = index_module.ToolIndex.__init__

    def spy(self: Any, entries: Any, *args: Any, **kwargs: Any) -> None:
        seen.append((len(entries), threading.current_thread() is threading.main_thread()))
        real(self, entries, *args, **kwargs)

    monkeypatch.setattr(index_module.ToolIndex, "__init__", spy)
    return seen


@pytest.mark.parametrize("front", sorted(BODIES))
async def test_client_tools_are_indexed_off_the_loop_once(
    front: str, upstream: Upstream, gateway_factory: Any, built: list[tuple[int, bool]]
) -> None:
    client, _ = await gateway_factory()
    built.clear()  # what start-up built for the MCP servers
    path, body = BODIES[front]()
    ticks = 0
    stop = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    beating = asyncio.ensure_future(heartbeat())
    for _ in range(2):
        upstream.script(completion("ok"))
        response = await client.post(path, json=body)
        assert response.status_code == 200, response.text
    stop.set()
    await beating
    clients = [on_loop for count, on_loop in built if count == COUNT]
    assert clients == [False], f"client tools indexed {len(clients)} times, on the loop: {clients}"
    assert ticks > 2, "the event loop did not run while the tools were indexed"
