"""Each wire format's codec both ways over one body: a client's request read by the front's codec and written by
the provider's codec of the same format, as one round the engine sends on with the client's own tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.codecs.anthropic.requests import chat_request as messages_request
from app.codecs.anthropic.requests import request_body as anthropic_body
from app.codecs.openai_chat.requests import chat_request as chat_request
from app.codecs.openai_chat.requests import to_openai
from app.codecs.responses.requests import chat_request as responses_request
from app.codecs.responses.requests import request_body as responses_body
from app.core.model import ChatRequest, UpstreamRequest
from app.fronts.chat_wire import parse_chat_request
from app.fronts.messages_wire import parse_messages_request
from app.fronts.responses_wire import parse_responses_request
from tests.support import ROOT

CORPUS = ROOT / "tests" / "unit" / "codecs" / "corpus"
GOLDEN = ROOT / "tests" / "golden"


def corpus(wire: str, kind: str) -> dict[str, Any]:
    """The corpus's bodies of one format and kind (`request`, `answer`), by file name."""
    return {path.stem: json.loads(path.read_text()) for path in sorted((CORPUS / wire).glob(f"{kind}_*.json"))}


def golden_rounds(name: str) -> list[dict[str, Any]]:
    """The bodies one golden file records the gateway sending upstream, round by round."""
    return json.loads((GOLDEN / "upstream" / f"{name}.json").read_text())  # type: ignore[no-any-return]


def _round(request: ChatRequest) -> UpstreamRequest:
    """The request as the round the engine sends: its own tools, the deferred ones as the upstream defers them."""
    tools = [tool.spec for tool in request.tools if not tool.deferred]
    deferred = [tool.spec for tool in request.tools if tool.deferred]
    return UpstreamRequest(
        request.model, request.messages, tools, request.options, request.stream, request.hosted_tools, deferred
    )


def _raw(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()


def chat_round_trip(body: dict[str, Any]) -> dict[str, Any]:
    return to_openai(_round(chat_request(*parse_chat_request(_raw(body)))))


def messages_round_trip(body: dict[str, Any], beta: str | None = None) -> dict[str, Any]:
    request = messages_request(*parse_messages_request(_raw(body), 2000, 512), beta)
    return anthropic_body(_round(request), 4096)


def responses_round_trip(body: dict[str, Any]) -> dict[str, Any]:
    return responses_body(_round(responses_request(parse_responses_request(_raw(body), 2000, 512))))


def path_of(name: str) -> Path:
    return CORPUS / name
