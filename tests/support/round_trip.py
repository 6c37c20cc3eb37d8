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
from app.fronts.chat.wire import parse_chat_request
from app.fronts.messages.wire import parse_messages_request
from app.fronts.responses.wire import parse_responses_request
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


def anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """`message` as Anthropic streams it: each block opened, its text, thinking, signature, citations or input in
    deltas, and closed; the stop and the end's own fields in `message_delta`."""
    ending = ("stop_reason", "stop_sequence", "container", "stop_details")
    start = {**message, "content": [], **{key: None for key in ending if key in message}}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(message["content"]):
        kind, deltas = block["type"], []
        if kind == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
            deltas += [{"type": "citations_delta", "citation": cited} for cited in block.get("citations") or ()]
        elif kind == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]},
                      {"type": "signature_delta", "signature": block["signature"]}]  # fmt: skip
        elif kind == "tool_use":
            opened = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        else:
            opened = block
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events += [{"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas]
        events.append({"type": "content_block_stop", "index": index})
    delta = {key: message[key] for key in ending if key in message}
    events += [{"type": "message_delta", "delta": delta, "usage": message["usage"]}, {"type": "message_stop"}]
    return events


def sse_data(text: str) -> list[Any]:
    """The JSON data of each event of an SSE body (`[DONE]` left out)."""
    lines = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def message_of_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The message an Anthropic stream's events make, put together as the SDKs do."""
    message: dict[str, Any] = {}
    inputs: dict[int, str] = {}
    for event in events:
        kind = event["type"]
        if kind == "message_start":
            message = {**event["message"], "content": []}
        elif kind == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta = message["content"][event["index"]], event["delta"]
            if delta["type"] == "input_json_delta":
                inputs[event["index"]] = inputs.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "citations_delta":
                block.setdefault("citations", []).append(delta["citation"])
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            else:
                field = "text" if delta["type"] == "text_delta" else "thinking"
                block[field] += delta[field]
        elif kind == "content_block_stop" and event["index"] in inputs:
            message["content"][event["index"]]["input"] = json.loads(inputs.pop(event["index"]))
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event["usage"]}
    return message


CHUNK_FIELDS = ("id", "created", "model", "system_fingerprint", "service_tier")  # what every chunk repeats


def chat_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """`completion` as an OpenAI stream's chunks: text and refusal a token a chunk with its logprobs, reasoning,
    each tool call's head then its arguments, the finish, then usage."""
    base = {"object": "chat.completion.chunk", **{key: completion[key] for key in CHUNK_FIELDS if key in completion}}
    choice, chunks = completion["choices"][0], []
    message, logprobs = choice["message"], choice.get("logprobs") or {}

    def chunk(delta: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **more}]}

    chunks.append(chunk({"role": "assistant", "content": ""}))
    for field in ("reasoning_content", "reasoning"):
        if message.get(field):
            chunks.append(chunk({field: message[field]}))
    for field in ("content", "refusal"):
        tokens = logprobs.get(field) or []
        if tokens:  # a token a chunk, its text as its logprob's token
            for token in tokens:
                other = "refusal" if field == "content" else "content"
                chunks.append(chunk({field: token["token"]}, logprobs={field: [token], other: None}))
        elif message.get(field):
            chunks.append(chunk({field: message[field]}))
    for index, call in enumerate(message.get("tool_calls") or ()):
        head = {"index": index, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
        chunks.append(chunk({"tool_calls": [head]}))
        rest = {"index": index, "function": {"arguments": call["function"]["arguments"]}}
        chunks.append(chunk({"tool_calls": [rest]}))
    chunks.append(chunk({}, finish_reason=choice["finish_reason"]))
    if "usage" in completion:
        chunks.append({**base, "choices": [], "usage": completion["usage"]})
    return chunks


def streamable(completion: dict[str, Any]) -> dict[str, Any]:
    """What of a completion a stream can say: the fields every chunk repeats, the message's text, refusal, reasoning
    and calls (a chunk has no annotations), logprobs, the finish and usage; nulls are things not said."""
    choice = completion["choices"][0]
    message = {key: value for key, value in choice["message"].items() if value is not None and key != "annotations"}
    said = {key: completion[key] for key in CHUNK_FIELDS if completion.get(key) is not None}
    result = {**said, "object": "chat.completion",
              "choices": [{"index": 0, "message": message, "finish_reason": choice["finish_reason"]}]}  # fmt: skip
    if choice.get("logprobs"):
        result["choices"][0]["logprobs"] = choice["logprobs"]
    if "usage" in completion:
        result["usage"] = completion["usage"]
    return result


def completion_of_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The completion a stream's chunks make, put together as the SDKs do."""
    said = {key: chunks[0][key] for key in CHUNK_FIELDS if chunks[0].get(key) is not None}
    message: dict[str, Any] = {}
    calls: dict[int, dict[str, Any]] = {}
    logprobs: dict[str, Any] = {}
    choice: dict[str, Any] = {"index": 0}
    usage = None
    for chunk in chunks:
        usage = chunk.get("usage") or usage
        for part in chunk["choices"]:
            for key, value in part["delta"].items():
                if key == "tool_calls":
                    for piece in value:
                        call = calls.setdefault(piece["index"], {"function": {"arguments": ""}})
                        call.update({k: piece[k] for k in ("id", "type") if k in piece})
                        call["function"]["name"] = piece.get("function", {}).get("name") or call["function"].get("name")
                        call["function"]["arguments"] += piece.get("function", {}).get("arguments") or ""
                elif isinstance(value, str) and key != "role":
                    message[key] = message.get(key, "") + value
                elif value is not None:
                    message[key] = value
            for key, tokens in (part.get("logprobs") or {}).items():
                if tokens is not None:
                    logprobs[key] = [*(logprobs.get(key) or []), *tokens]
                else:
                    logprobs.setdefault(key, None)
            if part.get("finish_reason"):
                choice["finish_reason"] = part["finish_reason"]
    message = {key: value for key, value in message.items() if value != ""}
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    choice["message"] = message
    if any(tokens for tokens in logprobs.values()):
        choice["logprobs"] = logprobs
    result = {**said, "object": "chat.completion", "choices": [choice]}
    return {**result, "usage": usage} if usage is not None else result
