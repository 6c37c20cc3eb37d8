"""A response the store cannot take is never claimed stored: it answers `store: false` with the
`x-toolsift-warning` header (the answer the model already paid for still goes out), its stream's last event says
`store: false`, and a later GET finds nothing, as the answer said. The caller's other responses stay."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.support import Upstream, completion, free_port, make_config
from tests.support.responses import sdk, streamed

SHARE = 16 * 1024  # the caller's share of the response store, in bytes


def events_of(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


async def stream(client: httpx.AsyncClient, text: str) -> tuple[httpx.Response, list[dict[str, Any]]]:
    answer = await client.post("/v1/responses", json={"model": "fast", "input": text, "stream": True})
    return answer, events_of(answer.text)


async def test_a_response_over_the_callers_share_is_not_claimed_and_evicts_nothing(
    upstream: Upstream, gateway_factory: Any
) -> None:
    config = make_config(responses_store={"max_bytes_per_identity": SHARE})
    client, _ = await gateway_factory(config)
    api = sdk(client)
    upstream.script(*[completion(f"answer {n}") for n in range(3)], streamed(completion("answer 3")))
    kept = [await api.responses.create(model="fast", input=f"small {n}") for n in range(2)]
    raw = await api.responses.with_raw_response.create(model="fast", input="big " * SHARE)
    big = raw.parse()
    assert big.output_text == "answer 2", "the answer the model gave still goes out"
    assert big.store is False and "not stored" in raw.headers["x-toolsift-warning"]
    with pytest.raises(openai.NotFoundError):
        await api.responses.retrieve(big.id)
    assert [(await api.responses.retrieve(made.id)).output_text for made in kept] == ["answer 0", "answer 1"]

    answer, events = await stream(client, "big again " * SHARE)
    assert answer.status_code == 200 and events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["store"] is False
    assert events[-1]["sequence_number"] == events[-2]["sequence_number"] + 1
    with pytest.raises(openai.NotFoundError):
        await api.responses.retrieve(events[-1]["response"]["id"])
    assert (await api.responses.retrieve(kept[0].id)).output_text == "answer 0"


async def test_a_store_that_is_down_answers_store_false_with_a_warning(
    upstream: Upstream, gateway_factory: Any
) -> None:
    """The first create finds the store down as it saves; the next know it before they start (the circuit is open),
    so a stream's `response.created` says `store: false` too, with the header."""
    config = make_config(sessions={"redis_url": f"redis://127.0.0.1:{free_port()}/0"})
    client, _ = await gateway_factory(config)
    api = sdk(client)
    upstream.script(completion("answer 0"), streamed(completion("answer 1")), completion("answer 2"))
    raw = await api.responses.with_raw_response.create(model="fast", input="hello")
    first = raw.parse()
    assert first.output_text == "answer 0" and first.store is False
    assert raw.headers["x-toolsift-warning"] == "response not stored: the response store is unavailable"
    answer, events = await stream(client, "hello again")
    assert answer.headers["x-toolsift-warning"].startswith("response not stored")
    said = {event["type"]: event["response"]["store"] for event in events if "response" in event}
    assert said == {"response.created": False, "response.in_progress": False, "response.completed": False}
    unstored = await api.responses.create(model="fast", input="and again", store=False)
    assert unstored.store is False, "a response not asked to be stored says so, as ever"
