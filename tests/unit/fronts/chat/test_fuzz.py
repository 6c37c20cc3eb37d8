"""Property test of the HTTP API: whatever the body, no 500 and every error in OpenAI's shape.

Bodies are written as text, so they can hold what Python's decoder accepts but JSON and our encoder do not:
`NaN`, `Infinity`, `1e999`, integers past 4,300 digits, lone surrogates (in values and keys), deep nesting.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Upstream, completion, make_config, mock_upstreams


class Raw(str):
    """JSON text written as is."""


HOSTILE = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "1e999", "-1e999", '"\\ud800"', '"a\\udfffb"', "9" * 4301, "-" + "9" * 4400]
).map(Raw) | st.integers(129, 1500).map(lambda depth: Raw("[" * depth + "]" * depth))
KEYS = st.text(max_size=10) | st.just(Raw('"\\udc00"'))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | HOSTILE,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=20,
)
TOOL_CHOICE = st.fixed_dictionaries(
    {"type": st.sampled_from(["function", "custom"]) | JSON}, optional={"function": JSON | st.just({"name": "x"})}
)
PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image_url"])},
    optional={"text": JSON, "image_url": JSON | st.fixed_dictionaries({"url": JSON})},
)
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "developer", "wizard", 7])
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES},
    optional={
        "content": st.none() | st.text(max_size=30) | st.lists(PART | JSON, max_size=2),
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.text(max_size=5),
                    "function": st.fixed_dictionaries({"name": st.text(max_size=8), "arguments": st.text(max_size=20)}),
                }
            ),
            max_size=2,
        ),
        "tool_call_id": st.text(max_size=5),
    },
)
TOOL = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["function", "other"]),
        "function": st.fixed_dictionaries({"name": st.text(max_size=70)}, optional={"parameters": JSON}),
    },
    optional={"defer_loading": st.booleans() | JSON},
)
BODY = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(["fast", "other"]) | JSON,
        "messages": st.lists(MESSAGE, max_size=3) | JSON,
        "tools": st.lists(TOOL, max_size=2) | JSON,
        "stream": st.booleans() | JSON,
        "stream_options": st.fixed_dictionaries({}, optional={"include_usage": JSON}) | JSON,
        "n": st.integers(-2, 3) | JSON,
        "tool_choice": st.sampled_from(["auto", "none", "required"]) | TOOL_CHOICE | JSON,
        "parallel_tool_calls": JSON,
        "stop": st.lists(st.text(max_size=5), max_size=2) | JSON,
        "tool_set": st.sampled_from(["money", "nope"]) | JSON,
        "session_id": JSON,
        "temperature": JSON,
    },
)


def dumps(value: Any) -> str:
    """JSON text of `value`, with `Raw` parts written as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(key) if isinstance(key, Raw) else json.dumps(key)}: {dumps(item)}"
                               for key, item in value.items()) + "}"  # fmt: skip
    if isinstance(value, list):
        return "[" + ", ".join(dumps(item) for item in value) + "]"
    return json.dumps(value)


def _bodies(count: int) -> list[Any]:
    """Draw request bodies with hypothesis (the app is async, so the requests are sent afterwards)."""
    bodies: list[Any] = []

    @settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=BODY | JSON)
    def collect(body: Any) -> None:
        bodies.append(body)

    collect()
    return bodies


async def test_no_body_makes_a_500(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.route.side_effect = lambda request: httpx.Response(200, json=completion("ok"))
    await _post_all(client, _bodies(300))


async def test_no_body_makes_a_500_through_the_anthropic_translation(gateway_factory: Any) -> None:
    """The translator reads more of the body (tool_choice, stop, image parts) than the OpenAI path does."""
    providers = {"up": {"type": "anthropic", "base_url": "http://anthropic.test/v1", "api_key": "k", "max_retries": 0}}
    reply = {"id": "m", "type": "message", "role": "assistant", "model": "c", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    with mock_upstreams() as router:
        router.post("http://anthropic.test/v1/messages").mock(side_effect=lambda _: httpx.Response(200, json=reply))
        client, _ = await gateway_factory(make_config(providers=providers))
        await _post_all(client, _bodies(300))


async def _post_all(client: httpx.AsyncClient, bodies: list[Any]) -> None:
    for body in bodies:
        text = dumps(body)
        response = await client.post("/v1/chat/completions", content=text, headers={"content-type": "application/json"})
        assert response.status_code != 500, (text[:300], response.text)
        if response.status_code >= 400:
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["message"], (text, response.text)
            assert "Internal gateway error" not in error["message"], (text[:300], response.text)
