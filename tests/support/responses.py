"""The Responses API tests' shared pieces: the official SDK on the in-memory gateway, scripted streams."""

from __future__ import annotations

from typing import Any

import httpx
import openai

from tests.support.gateway import UPSTREAM
from tests.support.scripted import _as_stream

NOTE = {"title": "groceries", "body": "milk"}
# The test upstream, refusing requests with hosted tools it cannot run rather than leaving them out.
REFUSING = {
    "up": {"base_url": UPSTREAM, "api_key": "sk-test-secret", "max_retries": 0, "unsupported_hosted_tools": "refuse"}
}


def sdk(client: httpx.AsyncClient, key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url="http://gw/v1", api_key=key, http_client=client, max_retries=0)


def streamed(reply: dict[str, Any]) -> httpx.Response:
    """A scripted completion as an OpenAI-compatible upstream streams it (words, call fragments, usage last)."""
    body = "".join(_as_stream(reply, include_usage=True))
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())
