"""A client's request read by its front's codec and written by the provider's codec of the same format is the
body the client sent: every field the official SDKs name, over the corpus (tests/unit/codecs/corpus/) and every
body the goldens record the gateway sending an upstream of the format it came in (its own turns and tools
included, which a second reading must keep as they are).

Chat completions and Messages pass through exactly. A Responses upstream is sent the conversation whole, stored
nowhere (`store: false`), so what only a stored item means goes: item ids and statuses. What else the gateway
changes there is stated in `responses_expected`, each with its reason.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.round_trip import (
    GOLDEN,
    chat_round_trip,
    corpus,
    golden_rounds,
    messages_round_trip,
    responses_round_trip,
)

SAME_FORMAT = {"chat_to_openai": "openai", "messages_to_anthropic": "anthropic", "responses_to_responses": "responses"}
GOLDEN_BODIES = {
    f"{name}{variant}_{mode}[{index}]": (wire, body)
    for name, wire in SAME_FORMAT.items()
    for variant in ("", "_native")
    for mode in ("plain", "stream")
    for index, body in enumerate(golden_rounds(f"{name}{variant}_{mode}"))
}
CODECS = {"openai": chat_round_trip, "anthropic": messages_round_trip, "responses": responses_round_trip}


@pytest.mark.parametrize("name", sorted(corpus("openai_chat", "request")))
def test_chat_requests_pass_through(name: str) -> None:
    body = corpus("openai_chat", "request")[name]
    assert chat_round_trip(body) == body


@pytest.mark.parametrize("name", [*sorted(corpus("anthropic", "request")), "request_plain", "request_tools"])
def test_messages_requests_pass_through(name: str) -> None:
    found = corpus("anthropic", "request").get(name)
    body = found if found is not None else json.loads((GOLDEN / "anthropic" / f"{name}.json").read_text())["anthropic"]
    assert messages_round_trip(body) == body


def test_the_corpus_carries_what_the_issue_names() -> None:
    """The Anthropic bodies hold thinking with its signature, redacted thinking and `tool_reference` blocks; the
    Responses bodies a reasoning item with its `encrypted_content` (a test over a corpus without them proves
    nothing about them)."""
    anthropic = json.dumps(corpus("anthropic", "request"))
    for needle in ('"signature": "sig-one"', '"redacted_thinking"', '"tool_reference"', '"stop_sequences"'):
        assert needle in anthropic
    assert '"encrypted_content": "gAAAA-opaque"' in json.dumps(corpus("responses", "request"))
    assert '"logprobs": true' in json.dumps(corpus("openai_chat", "request"))


@pytest.mark.parametrize("name", sorted(GOLDEN_BODIES))
def test_what_the_gateway_sent_reads_back_the_same(name: str) -> None:
    wire, body = GOLDEN_BODIES[name]
    assert CODECS[wire](body) == body


OWN_ITEMS = ("reasoning", "web_search_call")  # the upstream's own items, sent back whole but for their ids
OWN_FIELDS = ("metadata", "background")  # the gateway's own: it keeps the response and answers in the foreground


def responses_expected(body: dict[str, Any]) -> dict[str, Any]:
    """What a Responses upstream is sent for `body`, by the gateway's stated rules."""
    expected = {key: value for key, value in body.items() if key not in (*OWN_FIELDS, "instructions", "input")}
    items = body["input"] if isinstance(body["input"], list) else [{"type": "message", "role": "user",
                                                                      "content": body["input"]}]  # fmt: skip
    # Instructions and developer messages go as system messages, for every upstream alike (as the goldens record).
    system = [{"type": "message", "role": "system", "content": body["instructions"]}] if "instructions" in body else []
    expected["input"] = [*system, *(_stateless(item) for item in items)]
    # A deferred tool is loaded by the gateway's own tool search where it is found, not listed.
    expected["tools"] = [tool for tool in body.get("tools", []) if not tool.get("defer_loading")]
    return {**expected, "store": False}


def _stateless(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "local_shell_call_output":  # answered as Codex CLI answers a shell call, which OpenAI takes
        return {"type": "function_call_output", "call_id": item["id"], "output": item["output"]}
    # An id names a stored item, which the upstream never kept; messages and calls are written again from the
    # engine's model, which keeps no status (a shell call goes as the completed call it is).
    gone = ("id",) if item["type"] in OWN_ITEMS else ("id", "status")
    item = {key: value for key, value in item.items() if key not in gone}
    if item.get("role") == "developer":
        item["role"] = "system"
    if item["type"] == "local_shell_call":
        item["status"] = "completed"
    return item


@pytest.mark.parametrize("name", sorted(corpus("responses", "request")))
def test_responses_requests_go_on_as_stated(name: str) -> None:
    body = corpus("responses", "request")[name]
    assert responses_round_trip(body) == responses_expected(body)
