"""`tokens_per_day` at the engine's entry: every way of asking spends from the same budget. An upstream that reports
no usage (a stream, a plain answer without `usage`, a run_task's model) is counted with the gateway's tokenizer, and
a client that leaves mid-answer is charged what it was sent, so no way of asking escapes the day's budget."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from app.common.identity import Identity
from app.config.identities import IdentityLimits
from app.core.model import CallFragment, ChatRequest, ClientTool, Delta, Message, Options, StopReason, ToolSpec, Usage
from app.engine.admission import DAY, LimitExceeded
from app.engine.caller import Caller
from app.engine.events import ContentDelta
from app.engine.gateway import Gateway
from app.store import Key
from tests.support import make_config
from tests.support.engine import ScriptedProvider

ANSWER = "word " * 150  # about 150 tokens


def _identity(name: str = "alice", budget: int = 100) -> Identity:
    return Identity(name, limits=IdentityLimits(tokens_per_day=budget), named=True)


NO_SERVERS: dict[str, Any] = {"mcpServers": {}, "tool_sets": {}}  # no MCP server: none is started


def _ask(stream: bool = False, max_tokens: int | None = 200) -> ChatRequest:
    return ChatRequest("fast", [Message("user", "Tell me a story.")], [], Options(max_tokens=max_tokens), stream=stream)


@pytest.fixture
async def engine() -> AsyncIterator[tuple[Gateway, ScriptedProvider]]:
    provider = ScriptedProvider("up")
    gateway = Gateway(make_config(mcp_front={"run_task": {"model": "fast"}}, **NO_SERVERS), providers={"up": provider})
    await gateway.start()
    yield gateway, provider
    await gateway.stop()


async def _counted(gateway: Gateway, identity: str = "alice") -> int:
    found = await gateway.limits.store.get(Key("limit", identity, f"tokens:{int(time.time() // DAY)}"))
    return int(found or 0)


async def _run(gateway: Gateway, request: ChatRequest, caller: Caller) -> None:
    async for _ in gateway.run(request, caller):
        pass


async def test_an_answer_without_upstream_usage_is_limited_like_one_with_it(
    engine: tuple[Gateway, ScriptedProvider],
) -> None:
    """The same answer, reported (a plain answer with `usage`) or not (one without, a stream not asked for it):
    each spends about the same from its identity's budget, and each identity's next request is refused."""
    gateway, provider = engine
    ways = {"plain-usage": (False, Usage(10, 150, 160)), "plain": (False, None), "stream": (True, None)}
    for name, (stream, usage) in ways.items():
        provider.script.append(Delta(content=ANSWER, stop=StopReason(), usage=usage))
        caller = Caller(_identity(name))
        await _run(gateway, _ask(stream), caller)
        assert 140 <= await _counted(gateway, name) <= 200, name  # the reservation (200 and more) settled
        with pytest.raises(LimitExceeded):
            await _run(gateway, _ask(stream), caller)
    assert len(provider.rounds) == 3


async def test_a_client_that_leaves_mid_answer_is_charged_what_it_was_sent(
    engine: tuple[Gateway, ScriptedProvider],
) -> None:
    gateway, provider = engine
    provider.script.append(Delta(content=ANSWER))  # the stream's first piece; the client leaves after it
    run = gateway.run(_ask(stream=True, max_tokens=5000), Caller(_identity(budget=10_000)))
    async for event in run:
        if isinstance(event, ContentDelta):
            break
    await run.aclose()
    assert 140 <= await _counted(gateway) <= 200  # not the 5,000 reserved, not nothing


async def test_run_task_spends_from_its_callers_budget(engine: tuple[Gateway, ScriptedProvider]) -> None:
    """A run_task is admitted with the MCP request that carried it, and still reserves and spends its tokens."""
    gateway, provider = engine
    assert gateway.tasks is not None
    provider.script += [Delta(content=ANSWER, stop=StopReason()), Delta(content="again", stop=StopReason())]
    caller = Caller(_identity(), admitted=True)
    first = await gateway.tasks.run("Tell me a story.", None, caller=caller)
    assert first.error is None and first.answer == ANSWER
    assert 140 <= await _counted(gateway) <= 200
    second = await gateway.tasks.run("Tell me another.", None, caller=caller)
    assert second.error is not None and "100 upstream tokens a day" in second.error
    assert len(provider.rounds) == 1


async def test_a_call_of_the_clients_own_tool_is_counted_where_the_upstream_reports_nothing(
    engine: tuple[Gateway, ScriptedProvider],
) -> None:
    gateway, provider = engine
    arguments = json.dumps({"text": ANSWER})
    provider.script.append(Delta(calls=[CallFragment(0, "call_0", "write", arguments)], stop=StopReason("tool_calls")))
    tool = ClientTool(
        ToolSpec("write", "Write a text.", {"type": "object", "properties": {"text": {"type": "string"}}})
    )
    request = _ask()
    request.tools.append(tool)
    await _run(gateway, request, Caller(_identity(budget=10_000)))
    assert 150 <= await _counted(gateway) <= 220  # the prompt, the tool's definition and the call's 150 words


@pytest.mark.parametrize(("max_tokens", "reserved"), [(None, 700), (300, 300)])
async def test_while_a_request_runs_it_holds_its_estimate(max_tokens: int | None, reserved: int) -> None:
    """Its prompt's tokens and its `max_tokens`, or `limits.default_output_tokens` where it sets none."""
    provider = ScriptedProvider("up", Delta(content="ok", stop=StopReason(), usage=Usage(10, 5, 15)))
    gateway = Gateway(make_config(limits={"default_output_tokens": 700}, **NO_SERVERS), providers={"up": provider})
    await gateway.start()
    try:
        run = gateway.run(_ask(max_tokens=max_tokens), Caller(_identity()))
        await anext(run)  # routed: admitted, its estimate reserved
        assert reserved < await _counted(gateway) < reserved + 20  # and a few tokens of prompt
        async for _ in run:
            pass
        assert await _counted(gateway) == 15
    finally:
        await gateway.stop()
