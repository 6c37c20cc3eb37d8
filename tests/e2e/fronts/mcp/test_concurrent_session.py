"""One MCP front session, twelve calls at once, five times over, through a served gateway whose store is Redis:
every call answers, and every search keeps the tools it enabled (each a call the client can then make)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.mcp import FINANCE, mcp_client, names, serve_mcp_gateway


@pytest.fixture(scope="module")
def gateway(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp_gateway(
        tmp_path_factory.mktemp("concurrent"),
        auth={"api_keys": ["key-erin"]},
        sessions={"redis_url": redis_url},
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_twelve_concurrent_calls_on_one_session_all_answer_five_times_over(gateway: str, mode: Any) -> None:
    for _ in range(5):
        async with mcp_client(f"{gateway}/mcp", "key-erin", mode=mode) as session:
            searches = [session.call_tool_mcp("search_tools", {"tool_names": [name]}) for name in FINANCE]
            calls = [session.call_tool_mcp("weather__get_current_weather", {"city": "Paris"}) for _ in range(6)]
            answers = await asyncio.gather(*searches, *calls)  # each call's own timeout (30 s) bounds a hang
            assert [answer.is_error for answer in answers] == [False] * 12
            listed = set(await names(session))
            assert {f"finance__{name}" for name in FINANCE} <= listed, "every concurrent search kept what it enabled"
