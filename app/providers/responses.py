"""OpenAI's Responses API as an upstream (`"type": "openai_responses"`): the round written by the Responses codec,
each answer (or stream event) checked once and read once by it.

Nothing is kept upstream (`store: false`): the gateway keeps conversations itself and sends the whole one every
round, the upstream's reasoning included as the encrypted items it gave, which it asks for whenever the round
reasons. The hosted tools OpenAI runs (web search, file search, code interpreter, image generation, remote MCP)
are passed on to it, and their calls come back to a Responses client as they came.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

from app.codecs.responses.answer_types import Response, StreamEvent
from app.codecs.responses.answers import StreamDecoder, delta_from_response, failed, failure
from app.codecs.responses.requests import request_body, with_reasoning_kept
from app.common.errors import GatewayError
from app.config import ProviderConfig
from app.core.model import Delta, JsonObject, UpstreamRequest
from app.providers.base import HttpProvider, refuse_threads, upstream_error

HOSTED_TOOLS = frozenset(
    {
        "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11", "file_search",
        "code_interpreter", "image_generation", "mcp",
    }
)  # fmt: skip
# An error a response reports in its body, by its code: what a client would have got as an HTTP status.
ERROR_STATUS = {
    "rate_limit_exceeded": 429, "insufficient_quota": 429, "invalid_prompt": 400, "context_length_exceeded": 400,
    "server_error": 502, "vector_store_timeout": 504,
}  # fmt: skip


class ResponsesProvider(HttpProvider):
    hosted_tools = HOSTED_TOOLS

    def __init__(self, name: str, config: ProviderConfig, unset_key_variable: str | None = None) -> None:
        auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        super().__init__(name, config, auth, unset_key_variable)

    async def complete(self, request: UpstreamRequest) -> Delta:
        refuse_threads(request)
        response = await self.post_json("/responses", with_reasoning_kept(request_body(request)), check=self._response)
        problem = failed(response)
        if problem is not None:
            raise self.reported(problem)
        return delta_from_response(response)

    def _response(self, answer: JsonObject) -> JsonObject:
        return self.checked(Response, answer, "response")

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        refuse_threads(request)
        decoder = StreamDecoder()
        body = with_reasoning_kept(request_body(request))
        async for event in self.stream_events("/responses", body):
            problem = failure(event)
            if problem is not None:
                raise self.reported(problem)
            for delta in decoder.deltas(self.checked(StreamEvent, event, "stream event")):
                yield delta
            if decoder.finished:
                return
        raise GatewayError(
            502, f"Upstream provider '{self.name}' ended the stream before the response was complete.",
            "upstream_error", code="upstream_incomplete_stream",
        )  # fmt: skip

    def reported(self, error: JsonObject) -> GatewayError:
        """An error the upstream reported in a response or a stream, as the error its HTTP status would have
        made (a rate limit a 429, anything else a 502)."""
        status = ERROR_STATUS.get(str(error.get("code")), 502)
        return upstream_error(self.name, status, json.dumps({"error": error}).encode())
