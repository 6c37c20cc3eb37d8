"""Property test of what comes back from the upstream: valid answers with any one part replaced by random JSON
(or removed), and random JSON whole, plain and streamed, OpenAI-compatible and Anthropic. Whatever the upstream
sends, the client never gets a 500 or an internal error event, and every error is in OpenAI's shape."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Upstream, chat_body, completion, events, sse_reply
from tests.support.anthropic import anthropic_gateway, message, scripted_anthropic, streamed, tool_use
from tests.support.upstream import mock_upstreams

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
REMOVED = object()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*prefix, key))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    changed = copy.deepcopy(value)
    parent = changed
    for key in path[:-1]:
        parent = parent[key]
    if new is REMOVED:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return changed


@st.composite
def _mutated(draw: st.DrawFn, valid: Any) -> Any:
    path = draw(st.sampled_from(list(_paths(valid))))
    return _replace(valid, path, draw(JSON | st.just(REMOVED)) if path else draw(JSON))


@st.composite
def _one_changed(draw: st.DrawFn, sequence: list[Any]) -> list[Any]:
    position = draw(st.sampled_from(range(len(sequence))))
    return [*sequence[:position], draw(_mutated(sequence[position])), *sequence[position + 1 :]]


def _draw(strategy: st.SearchStrategy[Any], count: int) -> list[Any]:
    """Draw examples with hypothesis (the app is async, so the requests are sent afterwards)."""
    drawn: list[Any] = []

    @settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(example=strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn


VALID_COMPLETIONS = [
    completion("hello"),
    completion(calls=[("weather__get_alerts", {"region": "EU"}), ("my_client_tool", {"a": 1})]),
    completion(calls=[("search_tools", {"query": "currency"})]),
]
VALID_CHUNKS = [
    chunk
    for reply in (sse_reply(["a", "b"], usage=(3, 4)), sse_reply(calls=[("weather__get_alerts", {"region": "EU"})]))
    for chunk in events(reply.content.decode())
    if isinstance(chunk, dict)
]
CLIENT_TOOL = {"type": "function", "function": {"name": "my_client_tool", "parameters": {"type": "object"}}}


def _assert_clean(response: httpx.Response, sent: Any) -> None:
    assert response.status_code in (200, 502), (sent, response.status_code, response.text)
    if response.status_code == 502:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}, (sent, error)
        return
    for item in events(response.text) if response.headers["content-type"].startswith("text/event-stream") else []:
        if isinstance(item, dict) and "error" in item:
            assert item["error"]["type"] != "server_error", (sent, item)


async def test_no_completion_makes_a_500(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    answers = _draw(st.one_of(*(_mutated(valid) for valid in VALID_COMPLETIONS)) | JSON, 150)
    for answer in answers:
        upstream.replies[:] = [httpx.Response(200, content=json.dumps(answer).encode())]
        body = chat_body("x", tools=[CLIENT_TOOL])
        _assert_clean(await client.post("/v1/chat/completions", json=body), answer)


async def test_no_stream_chunk_makes_an_internal_error(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    for chunks in _draw(_one_changed(VALID_CHUNKS), 150):
        content = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
        upstream.replies[:] = [httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content)]
        body = chat_body("x", tools=[CLIENT_TOOL], stream=True, stream_options={"include_usage": True})
        _assert_clean(await client.post("/v1/chat/completions", json=body), chunks)


async def test_no_anthropic_answer_makes_a_500(gateway_factory: Any) -> None:
    with mock_upstreams() as router:
        _, replies = scripted_anthropic(router, validate=False)  # a fuzzed answer's calls are themselves invalid
        client = await anthropic_gateway(gateway_factory)
        await _anthropic_fuzz(client, replies)


async def _anthropic_fuzz(client: Any, replies: list[httpx.Response]) -> None:
    valid = [message([{"type": "text", "text": "hi"}, tool_use("weather__get_alerts", {"region": "EU"})], "tool_use")]
    for answer in _draw(st.one_of(*(_mutated(v) for v in valid)) | JSON, 100):
        final = [httpx.Response(200, json=message([{"type": "text", "text": "done"}], "end_turn")) for _ in "12345"]
        replies[:] = [httpx.Response(200, content=json.dumps(answer).encode()), *final]
        _assert_clean(await client.post("/v1/chat/completions", json={**chat_body("x"), "model": "sonnet"}), answer)
    stream_events = events(streamed("hello", ("weather__get_alerts", {"a": 1})).content.decode())
    for sent in _draw(_one_changed(stream_events), 100):
        content = "".join(f"data: {json.dumps(event)}\n\n" for event in sent)
        replies[:] = [httpx.Response(200, headers={"content-type": "text/event-stream"}, content=content) for _ in "12"]
        replies += [streamed("done") for _ in "12345"]
        body = {**chat_body("x", stream=True), "model": "sonnet"}
        _assert_clean(await client.post("/v1/chat/completions", json=body), sent)


async def test_a_negative_usage_is_read_not_a_500(upstream: Upstream, gateway_factory: Any) -> None:
    """An upstream's usage is any integer; the per-identity token metric only counts up (found by the fuzz above)."""
    client, _ = await gateway_factory()
    answer = completion("hi")
    answer["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": -5}
    upstream.replies[:] = [httpx.Response(200, json=answer)]
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "hi"
