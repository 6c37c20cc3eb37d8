"""`count_tokens` cannot freeze the gateway: whatever a body holds (one letter repeated 32,000 times once took 29 s
on the event loop), it is parsed and counted in the worker pool, one count at a time, in time linear in its size."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from app.common import tokens
from tests.support import Upstream, chat_body, completion


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Where and how many at a time the token counts ran."""
    seen: dict[str, Any] = {"threads": set(), "running": 0, "most": 0}
    real = tokens.count_text

    def spy(text: str, exact_chars: int | None = None) -> int:
        seen["threads"].add(threading.current_thread().name)
        seen["running"] += 1
        seen["most"] = max(seen["most"], seen["running"])
        try:
            return real(text, exact_chars)
        finally:
            seen["running"] -= 1

    monkeypatch.setattr(tokens, "count_text", spy)
    return seen


def letters(count: int) -> dict[str, Any]:
    return {"model": "fast", "messages": [{"role": "user", "content": "a" * count}]}


async def test_a_long_word_is_counted_in_the_pool_and_the_chat_beside_it_is_served(
    upstream: Upstream, gateway_factory: Any, counted: dict[str, Any]
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("served"))
    counts = [client.post("/v1/messages/count_tokens", json=letters(size)) for size in (32_000, 1_000_000)] * 3
    answers = await asyncio.gather(client.post("/v1/chat/completions", json=chat_body("hi")), *counts)
    assert answers[0].json()["choices"][0]["message"]["content"] == "served"
    for answer, size in zip(answers[1:], [32_000, 1_000_000] * 3, strict=True):
        assert answer.status_code == 200, answer.text
        assert size // 5 < answer.json()["input_tokens"] < size // 3, "an estimate of a quarter token a letter"
    assert counted["threads"] and all(name.startswith("toolsift-work") for name in counted["threads"])
    assert counted["most"] == 1, "one count at a time: a flood of counts never fills the pool"


def test_a_run_of_one_letter_or_punctuation_is_estimated_and_ordinary_text_is_exact() -> None:
    assert tokens.count_text("a" * 1_000_000) == 250_000
    assert tokens.count_text("-" * 40_000 + " " + "_-" * 20_000) == tokens.count_text("-" * 40_000) + 10_001
    prose = "The quick brown fox jumps over the lazy dog. " * 200
    assert tokens.count_text(prose) == tokens.count_text(prose, exact_chars=10**9)
    assert tokens.count_text(prose, exact_chars=100) == tokens.count_text(prose[:100]) + (len(prose) - 100 + 3) // 4
