"""Bad input and failing parts: each gets a clear OpenAI-shaped error and nothing else is lost."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.config import parse_config
from tests.support import UPSTREAM, Upstream, chat_body, completion, make_config


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body["error"]) == {"message", "type", "param", "code"}
    error: dict[str, Any] = body["error"]
    return error


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[1, 2]", None, "must be a JSON object"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "model", "is required"),
        (b'{"model": "fast"}', "messages", "is required"),
        (b'{"model": "fast", "messages": []}', "messages", "at least 1"),
        (b'{"model": "fast", "messages": "hi"}', "messages", "valid list"),
        (b'{"model": "fast", "messages": [{"role": "wizard", "content": "x"}]}', "messages[0].role", "Input should be"),
        (b'{"model": 7, "messages": [{"role": "user", "content": "x"}]}', "model", "valid string"),
        (b'{"model": "fast", "messages": [{"role": "tool", "content": "x"}]}', "messages[0].tool_call_id", "required"),
        (
            b'{"model": "fast", "messages": [{"role": "user"}], "tools": [{"type": "function"}]}',
            "tools[0].function",
            "required",
        ),
        (
            b'{"model": "fast", "messages": [{"role": "user"}], '
            b'"tools": [{"type": "function", "function": {"name": "bad name!"}}]}',
            "tools[0].function.name",
            "pattern",
        ),
        (b'{"model": "fast", "messages": [{"role": "user"}], "stream": "yes"}', "stream", "boolean"),
    ],
)
async def test_bad_bodies_are_400(
    upstream: Upstream, gateway_factory: Any, body: bytes, param: str | None, words: str
) -> None:
    client, _ = await gateway_factory()
    response = await client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    error = _error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert words in error["message"]
    assert upstream.requests == []


_USER = b'"model": "fast", "messages": [{"role": "user", "content": "x"}]'


@pytest.mark.parametrize(
    ("extra", "param", "words"),
    [
        (b'"temperature": NaN', "temperature", "NaN, which is not JSON"),
        (b'"temperature": Infinity', "temperature", "Infinity"),
        (b'"logit_bias": {"5": -Infinity}', "logit_bias.5", "-Infinity"),
        (b'"top_p": 1e999', "top_p", "out of range"),
        (b'"seed": ' + b"7" * 4301, "seed", "more than 4,300 digits"),
        (b'"metadata": {"a": "\\ud800"}', "metadata.a", "lone UTF-16 surrogate"),
        (b'"metadata": {"\\udfff": 1}', "metadata", "key with a lone UTF-16 surrogate"),
        (b'"user": ' + b"[" * 995 + b"]" * 995, None, "nested more than 128 levels"),
        (b'"user": ' + b"[" * 200 + b"]" * 200, None, "nested more than 128 levels"),
        (b'"stream": true, "stream_options": "yes"', "stream_options", "valid dictionary."),
        (b'"stream_options": [true]', "stream_options", "valid dictionary."),
        (b'"stream_options": {"include_usage": "yes"}', "stream_options.include_usage", "boolean"),
        (b'"n": 2', "n", "must be 1"),
        (b'"n": "1"', "n", "valid integer"),
        (b'"tools": [{"type": "function", "function": {"name": "f"}, "defer_loading": "yes"}]',
         "tools[0].defer_loading", "boolean"),
        (b'"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function"}',
         "tool_choice", "needs 'function'"),
        (b'"tool_choice": 5', "tool_choice", "valid string"),
        (b'"parallel_tool_calls": "no"', "parallel_tool_calls", "boolean"),
        (b'"stop": 5', "stop", "valid string"),
        (b'"metadata": {"x": [' + b",".join([b"[]"] * 100_001) + b"]}", None, "more than 100,000 JSON values"),
    ],
)  # fmt: skip
async def test_what_python_tolerates_or_the_gateway_reads_is_400(
    upstream: Upstream, gateway_factory: Any, extra: bytes, param: str | None, words: str
) -> None:
    client, _ = await gateway_factory()
    body = b"{" + _USER + b", " + extra + b"}"
    response = await client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    error = _error(response, 400)
    assert error["param"] == param and words in error["message"], error
    assert upstream.requests == []


async def test_content_parts_the_translators_read_are_checked(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    for part, words in (
        ({"type": "image_url", "image_url": "https://x.example/a.png"}, "'image_url' must be an object"),
        ({"type": "image_url", "image_url": {"url": 5}}, "'image_url' must be an object"),
        ({"type": "text", "text": {"a": 1}}, "'text' must be a string"),
    ):
        body = chat_body({"role": "user", "content": [{"type": "text", "text": "hi"}, part]})
        error = _error(await client.post("/v1/chat/completions", json=body), 400)
        assert error["param"] == "messages[0].content" and "part 1: " + words in error["message"]
    assert upstream.requests == []
    upstream.script(completion("ok"))
    emoji = b'{"model": "fast", "messages": [{"role": "user", "content": "\\ud83d\\ude00 [[[x]]]"}], "n": 1}'
    fine = await client.post("/v1/chat/completions", content=emoji, headers={"content-type": "application/json"})
    assert fine.status_code == 200, "a surrogate pair, brackets in text and n=1 are fine"
    assert upstream.requests[0]["messages"][-1]["content"] == "\U0001f600 [[[x]]]"


async def test_huge_payload_is_413(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(max_request_bytes=4096))
    response = await client.post("/v1/chat/completions", json=chat_body("x" * 10_000))
    assert "larger than" in _error(response, 413)["message"]
    assert upstream.requests == []


async def test_unknown_tool_set_is_400_naming_the_available_ones(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    response = await client.post("/v1/chat/completions", json=chat_body("x", tool_set="nope"))
    error = _error(response, 400)
    assert error["param"] == "tool_set" and "money, notes_only" in error["message"]


async def test_tool_set_naming_unknown_tools_is_400(upstream: Upstream, gateway_factory: Any) -> None:
    config = make_config(tool_sets={"bad": {"servers": {"finance": ["convert_currency", "teleport"]}}})
    client, _ = await gateway_factory(config)
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x", tool_set="bad")), 400)
    assert "teleport" in error["message"] and "convert_currency" in error["message"]


async def test_upstream_error_keeps_status_and_message(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        httpx.Response(
            429, json={"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
        )
    )
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 429)
    assert "Rate limit reached" in error["message"] and error["code"] == "rate_limit_exceeded"
    upstream.script(httpx.Response(500, text="<html>oops</html>"))
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 500)
    assert "oops" in error["message"]


async def test_upstream_unreachable_is_502_and_timeout_is_504(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(httpx.ConnectError("refused"))
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 502)
    assert "unreachable" in error["message"] and UPSTREAM in error["message"]
    upstream.script(httpx.ReadTimeout("slow"))
    assert _error(await client.post("/v1/chat/completions", json=chat_body("x")), 504)["code"] == "upstream_timeout"
    upstream.script(httpx.Response(200, text="not json"))
    assert (
        _error(await client.post("/v1/chat/completions", json=chat_body("x")), 502)["code"]
        == "upstream_invalid_response"
    )


async def test_upstream_failure_mid_loop_is_reported(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    upstream.script(
        completion(calls=[("search_tools", {"query": "notes"})]), httpx.Response(503, json={"error": "busy"})
    )
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 503)
    assert "busy" in error["message"]


async def test_missing_api_key_names_the_variable_and_never_calls_upstream(
    upstream: Upstream, gateway_factory: Any
) -> None:
    config = parse_config(
        {"providers": {"openai": {"base_url": UPSTREAM, "api_key": "${OPENAI_API_KEY}"}}, "mcpServers": {}}, environ={}
    )
    client, _ = await gateway_factory(config, targets={})
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 503)
    assert "OPENAI_API_KEY" in error["message"]
    assert upstream.requests == []
    health = await client.get("/healthz")
    assert health.status_code == 200


async def test_no_provider_at_all_is_a_clear_error(gateway_factory: Any) -> None:
    client, _ = await gateway_factory(parse_config({}, environ={}), targets={})
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 503)
    assert error["code"] == "model_not_found"


async def test_secrets_never_appear_in_responses_or_logs(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = await gateway_factory()
    upstream.script(httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}}))
    caplog.set_level("DEBUG")
    response = await client.post(
        "/v1/chat/completions", json=chat_body("x"), headers={"Authorization": "Bearer client-key"}
    )
    assert response.status_code == 401
    assert "sk-test-secret" not in response.text and "sk-test-secret" not in caplog.text
    assert upstream.headers[0]["authorization"] == "Bearer sk-test-secret", "the client's key is never forwarded"


async def test_unknown_route_is_an_openai_error(gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    assert _error(await client.get("/v1/nothing"), 404)["type"] == "not_found_error"


async def test_request_log_line_and_request_id(
    upstream: Upstream, gateway_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = await gateway_factory()
    upstream.script(completion(calls=[("search_tools", {"query": "slug"})]), completion("ok"))
    caplog.set_level("INFO", logger="toolsift")
    response = await client.post("/v1/chat/completions", json=chat_body("x"), headers={"x-request-id": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("request "))
    assert "id=abc-123" in line and "status=200" in line and "rounds=2" in line and "searches=1" in line
    assert "model=fast" in line and "provider=up" in line
    response = await client.post(
        "/v1/chat/completions", json=chat_body("x"), headers={"x-request-id": "bad id\nforged=1"}
    )
    assert response.headers["x-request-id"].startswith("req_")


async def test_a_server_that_fails_to_start_is_down_and_the_others_work(
    upstream: Upstream, gateway_factory: Any
) -> None:
    from tests.support import example_targets

    servers = {
        "weather": {"command": "unused"},
        "broken": {"command": "toolsift-no-such-command-xyz", "defer_loading": True},
        "notes": {"command": "unused", "defer_loading": True},
    }
    config = make_config(mcpServers=servers, tool_sets={}, mcp_startup_timeout=10)
    client, _ = await gateway_factory(config, targets=example_targets("weather", "notes"))
    health = (await client.get("/healthz")).json()
    assert health["status"] == "degraded"
    assert health["servers"]["broken"]["state"] == "down" and health["servers"]["broken"]["error"]
    assert health["servers"]["weather"] == {
        "state": "up",
        "transport": "memory",
        "tools": 4,
        "deferred": False,
        "error": None,
    }
    upstream.script(completion(calls=[("search_tools", {"server_name": "broken"})]), completion("ok"))
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    assert response.status_code == 200
    assert "Unknown server 'broken'" in upstream.requests[1]["messages"][-1]["content"]
    assert "notes" in upstream.requests[1]["messages"][-1]["content"]


async def test_models_lists_aliases(gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    body = (await client.get("/v1/models")).json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == ["fast"]


async def test_gateway_bug_is_500_with_request_id_and_no_traceback(
    upstream: Upstream, gateway_factory: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from app.engine.loop import ChatLoop

    async def broken(self: Any, request: Any) -> Any:
        raise KeyError("internal detail")
        yield  # an async generator, as the loop's events are

    monkeypatch.setattr(ChatLoop, "events", broken)
    client, _ = await gateway_factory()
    response = await client.post("/v1/chat/completions", json=chat_body("x"))
    error = _error(response, 500)
    assert response.headers["x-request-id"] in error["message"]
    assert "internal detail" not in response.text and "Traceback" not in response.text
    assert "internal detail" in caplog.text, "the traceback goes to the log"


async def test_too_many_messages_or_tools_is_400(upstream: Upstream, gateway_factory: Any) -> None:
    client, _ = await gateway_factory(make_config(max_messages=3, max_client_tools=1))
    many = [{"role": "user", "content": str(i)} for i in range(4)]
    error = _error(await client.post("/v1/chat/completions", json={"model": "fast", "messages": many}), 400)
    assert error["param"] == "messages" and "at most 3" in error["message"]
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(2)]
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x", tools=tools)), 400)
    assert error["param"] == "tools"
    assert upstream.requests == []


async def test_the_request_deadline_ends_a_slow_exchange(upstream: Upstream, gateway_factory: Any) -> None:
    import asyncio

    client, _ = await gateway_factory(make_config(request_deadline=0.3))

    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return httpx.Response(200, json=completion("late"))

    upstream.route.side_effect = slow
    error = _error(await client.post("/v1/chat/completions", json=chat_body("x")), 504)
    assert error["code"] == "request_deadline"


async def test_readyz_and_cors(gateway_factory: Any) -> None:
    client, _ = await gateway_factory()
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    closed = await client.options("/v1/chat/completions", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers, "no CORS unless configured"
    client, _ = await gateway_factory(make_config(cors_origins=["https://app.example"]))
    opened = await client.options("/v1/chat/completions", headers=preflight)
    assert opened.headers["access-control-allow-origin"] == "https://app.example"
    posted = await client.post(
        "/v1/chat/completions", json={"model": "nope"}, headers={"Origin": "https://app.example"}
    )
    assert posted.status_code == 400 and posted.headers["access-control-allow-origin"] == "https://app.example"
