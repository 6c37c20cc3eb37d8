"""Compaction on the Responses front: a last `compaction_trigger` (Codex's auto-compaction) and
`POST /v1/responses/compact`. A chat upstream writes the summary when asked, which the client gets sealed in one
`compaction` item and passes back as a user turn; a Responses upstream gets the request as it is and its own
compaction item goes to the client, and back to it, unchanged."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from app.codecs.responses.compaction import INTRO, UNREADABLE
from app.config import parse_config
from app.engine.compaction import PROMPT
from tests.support import Upstream, completion
from tests.support.responses import sdk, streamed
from tests.support.responses_upstream import RESPONSES_PROVIDER, response, scripted_responses
from tests.support.responses_upstream import message as output_message
from tests.support.upstream import mock_upstreams

HISTORY: Any = [
    {"role": "user", "content": "Convert 250 USD to EUR and then run the tests."},
    {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd": "pytest"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "12 passed"},
]
SHELL: Any = [{"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_chat_upstream_writes_the_summary_the_client_keeps_and_passes_back(
    upstream: Upstream, gateway_factory: Any, stream: bool
) -> None:
    client, _ = await gateway_factory()
    api = sdk(client)
    summary = completion("The user wants 250 USD in EUR; the tests ran: 12 passed.")
    upstream.script(streamed(summary) if stream else summary)
    trigger: Any = [*HISTORY, {"type": "compaction_trigger"}]
    if stream:
        async with api.responses.stream(model="fast", input=trigger, tools=SHELL, store=False) as events:
            kinds = [event.type async for event in events]
            answer = await events.get_final_response()
        assert "response.output_text.delta" not in kinds, "the summary is not shown as text"
    else:
        answer = await api.responses.create(model="fast", input=trigger, tools=SHELL, store=False)
    (item,) = answer.output
    assert item.type == "compaction" and item.encrypted_content.startswith("toolsift.summary.v1.")
    sent = upstream.requests[0]
    assert sent["messages"][-1] == {"role": "user", "content": PROMPT} and sent["tool_choice"] == "none"
    assert sent["tools"][0]["function"]["name"] == "exec_command", "tools kept for the cache"
    upstream.script(completion("Done."))
    compacted: Any = [HISTORY[0], item.model_dump(exclude_none=True), {"role": "user", "content": "go on"}]
    await api.responses.create(model="fast", input=compacted, tools=SHELL, store=False)
    turns = upstream.requests[1]["messages"]
    assert turns[1]["role"] == "user" and turns[1]["content"].startswith(INTRO)
    assert "12 passed" in turns[1]["content"] and turns[2] == {"role": "user", "content": "go on"}


async def test_compact_endpoint_answers_the_apis_compaction_object(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("Summary: tests pass."))
    compacted = await sdk(client).responses.compact(model="fast", input=HISTORY)
    assert compacted.object == "response.compaction"
    kinds = [item.type for item in compacted.output]
    assert kinds == ["message", "compaction"], "the user messages, then one compaction item"
    assert compacted.usage is not None and compacted.usage.total_tokens > 0
    assert upstream.requests[0]["messages"][-1]["content"] == PROMPT


async def test_a_trigger_that_is_not_last_is_refused(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk(client).responses.create(model="fast", input=[{"type": "compaction_trigger"}, *HISTORY])
    assert refused.value.body["param"] == "input[0]" and upstream.requests == []  # type: ignore[index]


async def test_an_upstreams_own_compaction_cannot_be_read_by_a_chat_upstream(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion("ok"))
    foreign: Any = {"type": "compaction", "encrypted_content": "gAAAAopaque"}
    await sdk(client).responses.create(model="fast", input=[foreign, {"role": "user", "content": "go on"}])
    assert upstream.requests[0]["messages"][0] == {"role": "user", "content": UNREADABLE}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_a_responses_upstream_compacts_itself(gateway_factory: Any, stream: bool) -> None:
    config = parse_config(
        {
            "providers": {"resp": RESPONSES_PROVIDER},
            "models": {"gpt": {"provider": "resp", "model": "g"}},
            "tool_discovery": {"semantic": {"enabled": False}},
        },
        environ={},
    )
    own = {"id": "cmp_up", "type": "compaction", "encrypted_content": "gAAAA-upstream-own"}
    with mock_upstreams() as router:
        sent, replies = scripted_responses(router)
        client, _ = await gateway_factory(config)
        api = sdk(client)
        replies += [response(own), response(output_message("Going on."))]
        trigger: Any = [*HISTORY, {"type": "compaction_trigger"}]
        if stream:
            async with api.responses.stream(model="gpt", input=trigger, tools=SHELL, store=False) as events:
                answer = await events.get_final_response()
        else:
            answer = await api.responses.create(model="gpt", input=trigger, tools=SHELL, store=False)
        (item,) = answer.output
        assert item.type == "compaction" and item.encrypted_content == "gAAAA-upstream-own"
        assert sent[0]["input"][-1] == {"type": "compaction_trigger"}, "the request as it is"
        assert all(PROMPT not in str(entry) for entry in sent[0]["input"])
        passed: Any = [HISTORY[0], item.model_dump(exclude_none=True), {"role": "user", "content": "go on"}]
        await api.responses.create(model="gpt", input=passed, tools=SHELL, store=False)
    assert sent[1]["input"][1] == {"type": "compaction", "encrypted_content": "gAAAA-upstream-own"}
