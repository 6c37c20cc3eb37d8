"""Property test of the HTTP API: whatever the body, no 500 and every error in OpenAI's shape."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Upstream, completion

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
ROLES = st.sampled_from(["system", "user", "assistant", "tool", "developer", "wizard", 7])
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES},
    optional={
        "content": st.none() | st.text(max_size=30) | st.lists(JSON, max_size=2),
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
        "tool_set": st.sampled_from(["money", "nope"]) | JSON,
        "session_id": JSON,
        "temperature": JSON,
    },
)


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
    for body in _bodies(200):
        response = await client.post(
            "/v1/chat/completions", content=json.dumps(body), headers={"content-type": "application/json"}
        )
        assert response.status_code != 500, (body, response.text)
        if response.status_code >= 400:
            error = response.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["message"], (body, response.text)
