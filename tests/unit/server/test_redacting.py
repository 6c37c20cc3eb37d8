"""The one exit of every HTTP answer: a configured secret written by any route, whole body or stream, leaves as
`[redacted]`, with the body's length told right."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.common import redaction
from app.server.redacting import RedactedAnswers

SECRET = "sk-exit-4b8e1f0a9c"


@pytest.fixture(autouse=True)
def secret() -> Iterator[None]:
    token = redaction.register([SECRET])
    yield
    redaction.unregister(token)


async def whole(request: Request) -> Response:
    return PlainTextResponse(f"the key is {SECRET}, again {SECRET}")


async def streamed(request: Request) -> Response:
    async def parts() -> AsyncIterator[str]:
        yield f"data: {SECRET}\n\n"
        yield "data: fine\n\n"

    return StreamingResponse(parts(), media_type="text/event-stream")


def client() -> httpx.AsyncClient:
    app = RedactedAnswers(Starlette(routes=[Route("/whole", whole), Route("/stream", streamed)]))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw")


async def test_a_whole_body_is_redacted_and_its_length_is_what_is_sent() -> None:
    async with client() as http:
        response = await http.get("/whole")
    assert response.text == "the key is [redacted], again [redacted]"
    assert response.headers["content-length"] == str(len(response.content))


async def test_every_event_of_a_stream_is_redacted() -> None:
    async with client() as http:
        response = await http.get("/stream")
    assert response.text == "data: [redacted]\n\ndata: fine\n\n"


async def test_a_request_secret_is_redacted_for_that_request() -> None:
    other = "caller-own-key-77aa"

    async def echo(request: Request) -> Response:
        redaction.add_request_secret(other)
        return PlainTextResponse(f"you sent {other}")

    app = RedactedAnswers(Starlette(routes=[Route("/echo", echo)]))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as http:
        assert (await http.get("/echo")).text == "you sent [redacted]"
