"""A Responses upstream's answers reach a Responses client as the upstream gave them, plain and streamed, over the
corpus (tests/unit/codecs/corpus/responses/answer_*.json): reasoning items with their `encrypted_content`, summary
or full text, hosted calls (a web search with its sources), calls of the client's tools, the text in the
message's own parts (annotations, logprobs, a refusal), why a response is incomplete, and every usage figure.

What the gateway changes, stated: the response is its own (it stores it, under its own id, with the request's
settings echoed), so each item has an id of that response, of the same kind as the upstream's (`rs_`, `ws_`,
`fc_`, `msg_`), and the text is one message item of the gateway's (which says `completed`).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.responses_upstream import codex_gateway
from tests.support.round_trip import corpus, sse_data

ANSWERS = corpus("responses", "answer")
LOOKUP = {"type": "function", "name": "lookup_order", "parameters": {"type": "object", "properties": {}}}
ASK = {"model": "codex", "input": "order 7?", "tools": [LOOKUP], "include": ["reasoning.encrypted_content"]}


@pytest.fixture
async def gateway(gateway_factory: Any) -> Any:
    async with codex_gateway(gateway_factory) as (client, _, replies):
        yield client, replies


def _unnamed(item: dict[str, Any]) -> dict[str, Any]:
    shown = {key: value for key, value in item.items() if key != "id"}
    return {**shown, "status": "completed"} if item["type"] == "message" else shown


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", sorted(ANSWERS))
async def test_a_responses_answer_reaches_a_responses_client_as_it_came(gateway: Any, name: str, stream: bool) -> None:
    client, replies = gateway
    answer = ANSWERS[name]
    replies.append(answer)  # streamed as OpenAI streams it when the gateway asks for a stream
    reply = await client.post("/v1/responses", json={**ASK, "stream": stream})
    assert reply.status_code == 200, reply.text
    got = sse_data(reply.text)[-1]["response"] if stream else reply.json()
    assert [_unnamed(item) for item in got["output"]] == [_unnamed(item) for item in answer["output"]]
    kinds = [item["id"].split("_")[0] for item in got["output"]]
    assert kinds == [item["id"].split("_")[0] for item in answer["output"]]
    assert (got["status"], got["incomplete_details"]) == (answer["status"], answer["incomplete_details"])
    assert got["usage"] == answer["usage"]
