"""End to end as a user runs it: `toolsift serve` in its own process, the bundled example servers and the
third-party `mcp-server-time` over stdio, a local scripted upstream, and the official OpenAI SDK as client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support import ROOT, ScriptedUpstream, completion, free_port

pytestmark = pytest.mark.skipif(
    shutil.which("mcp-server-time", path=str(Path(sys.executable).parent)) is None,
    reason="mcp-server-time is a dev dependency",
)


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = json.loads((ROOT / "config.json").read_text())
    for server in config["mcpServers"].values():
        server["args"] = [str(ROOT / arg) for arg in server["args"]]
    config["mcpServers"]["time"] = {
        "command": "mcp-server-time",
        "args": ["--local-timezone", "UTC"],
        "defer_loading": True,
    }
    config["tool_sets"]["clock"] = {"description": "time only", "servers": {"time": True}}
    workdir = tmp_path_factory.mktemp("integration-gateway")
    config["mcpServers"]["slow"] = {
        "command": "python",
        "args": [str(ROOT / "tests" / "servers" / "slow.py")],
        "env": {"SLOW_MARKER": str(workdir / "slow-marker.txt")},
    }
    config["stream_keepalive_seconds"] = 0.3
    config["providers"]["openai"]["deferral"] = "tools"  # found tools join `tools`, as these tests read them
    config["providers"]["claude"] = {
        "type": "anthropic",
        "base_url": scripted.base_url,
        "api_key": "sk-ant-integration",
        "deferral": "tools",
    }
    config["models"]["claude"] = {"provider": "claude", "model": "claude-sonnet-4-5"}
    path = workdir / "config.json"
    path.write_text(json.dumps(config))
    port = free_port()
    env = {**os.environ, "OPENAI_API_KEY": "sk-integration-secret", "OPENAI_BASE_URL": scripted.base_url}
    toolsift = Path(sys.executable).parent / "toolsift"
    log = (path.parent / "gateway.log").open("w")
    process = subprocess.Popen(
        [str(toolsift), "serve", "--config", str(path), "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError("gateway exited:\n" + (path.parent / "gateway.log").read_text())
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("gateway did not start:\n" + (path.parent / "gateway.log").read_text())
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(15)
        log.close()
        written = (path.parent / "gateway.log").read_text()
        assert "sk-integration-secret" not in written
        assert "toolsift.http request id=" in written and "HTTP Request:" not in written, "one line per request"


@pytest.fixture
def client(gateway: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway}/v1", api_key="unused-by-the-gateway", max_retries=0)


def test_health_reports_every_server_up_before_the_port_opened(gateway: str) -> None:
    health = httpx.get(f"{gateway}/healthz").json()
    assert health["status"] == "ok"
    counts = {name: server["tools"] for name, server in health["servers"].items()}
    assert counts == {"weather": 4, "notes": 9, "calendar": 8, "finance": 7, "textkit": 11, "time": 2, "slow": 1}
    assert all(server["state"] == "up" and server["transport"] == "stdio" for server in health["servers"].values())


def test_search_by_query_then_mcp_call_then_answer(client: openai.OpenAI, scripted: ScriptedUpstream) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"query": "create a note"})]),
        completion(calls=[("notes__create_note", {"title": "Groceries", "body": "eggs, milk"})]),
        completion("Saved your note."),
    )
    reply = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "Note: eggs, milk"}])
    assert reply.choices[0].message.content == "Saved your note."
    assert reply.usage is not None and reply.usage.total_tokens == 45
    stats: dict[str, Any] = reply.model_extra["tool_discovery"]  # type: ignore[index]
    assert stats["rounds"] == 3 and stats["search_calls"] == 1 and stats["tools_called"] == ["notes__create_note"]

    first = scripted.tool_names(0)
    assert first == [
        "weather__get_current_weather",
        "weather__get_forecast",
        "weather__get_alerts",
        "weather__get_air_quality",
        "slow__long_report",
        "search_tools",
    ]
    assert scripted.requests[0]["model"] == "gpt-4.1-mini"
    assert scripted.headers[0]["authorization"] == "Bearer sk-integration-secret"
    second = scripted.tool_names(1)
    assert second[:6] == first and "notes__create_note" in second[6:]
    created = json.loads(scripted.requests[2]["messages"][-1]["content"])
    assert created["title"] == "Groceries" and created["id"].startswith("note-")


def test_search_by_server_runs_a_third_party_server(client: openai.OpenAI, scripted: ScriptedUpstream) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"server_name": "time"})]),
        completion(calls=[("time__get_current_time", {"timezone": "Asia/Tokyo"})]),
        completion("It is evening in Tokyo."),
    )
    reply = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "Time in Tokyo?"}])
    assert reply.choices[0].message.content == "It is evening in Tokyo."
    assert scripted.tool_names(1)[-2:] == ["time__get_current_time", "time__convert_time"]
    result = scripted.requests[2]["messages"][-1]["content"]
    assert "Asia/Tokyo" in result and not result.startswith("Error")


def test_exact_names_and_a_client_tool_returned_to_the_sdk(client: openai.OpenAI, scripted: ScriptedUpstream) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"tool_names": ["convert_currency", "open_ticket"]})]),
        completion(calls=[("open_ticket", {"summary": "refund"})]),
    )
    tools: list[Any] = [
        {
            "type": "function",
            "function": {
                "name": "open_ticket",
                "description": "Open a support ticket",
                "parameters": {"type": "object"},
            },
            "defer_loading": True,
        }
    ]
    reply = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "refund"}], tools=tools)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    assert [call.function.name for call in choice.message.tool_calls] == ["open_ticket"]  # type: ignore[union-attr]
    assert scripted.tool_names(1)[-2:] == ["finance__convert_currency", "open_ticket"]
    assert "open_ticket" not in scripted.tool_names(0)


def test_tool_set_from_extra_body_restricts_discovery(client: openai.OpenAI, scripted: ScriptedUpstream) -> None:
    scripted.script(completion(calls=[("search_tools", {"query": "weather forecast note"})]), completion("nothing"))
    client.chat.completions.create(
        model="fast", messages=[{"role": "user", "content": "x"}], extra_body={"tool_set": "clock"}
    )
    assert scripted.tool_names(0) == ["search_tools"]
    assert "No tools found" in scripted.requests[1]["messages"][-1]["content"]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="fast", messages=[{"role": "user", "content": "x"}], extra_body={"tool_set": "nope"}
        )
    assert "Available tool sets: clock, money, planner" in str(caught.value)


def test_bad_bodies_get_openai_errors(client: openai.OpenAI, gateway: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="fast", messages=[])
    assert caught.value.body["param"] == "messages"  # type: ignore[index]
    response = httpx.post(
        f"{gateway}/v1/chat/completions", content=b"{oops", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]


def test_sdk_streaming_through_search_mcp_call_and_answer(client: openai.OpenAI, scripted: ScriptedUpstream) -> None:
    script = (
        completion(calls=[("search_tools", {"query": "exchange rates currency"})], usage=(50, 5)),
        completion(calls=[("finance__convert_currency", {"amount": 10, "from_currency": "EUR", "to_currency": "USD"})]),
        completion("Ten euros are about 10.87 US dollars today.", usage=(70, 7)),
    )
    scripted.script(*script)
    stream = client.chat.completions.create(
        model="fast",
        messages=[{"role": "user", "content": "10 EUR in USD?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Ten euros are about 10.87 US dollars today."
    assert len([chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]) >= 5
    assert len({chunk.id for chunk in chunks}) == 1
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices and chunk.choices[0].finish_reason] == [
        "stop"
    ]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 55 + 15 + 77
    assert all(request["stream"] is True for request in scripted.requests)
    converted = scripted.requests[2]["messages"][-1]["content"]
    assert "USD" in converted and not converted.startswith("Error")

    scripted.script(*script)
    plain = client.chat.completions.create(model="fast", messages=[{"role": "user", "content": "10 EUR in USD?"}])
    assert plain.choices[0].message.content == text


def test_disconnect_mid_stream_cancels_the_running_mcp_call(
    gateway: str, scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory
) -> None:
    marker = next(Path(tmp_path_factory.getbasetemp()).glob("integration-gateway*")) / "slow-marker.txt"
    scripted.script(completion(calls=[("slow__long_report", {"topic": "tides"})]), completion("never sent"))
    body = {"model": "fast", "stream": True, "messages": [{"role": "user", "content": "report"}]}
    with httpx.stream("POST", f"{gateway}/v1/chat/completions", json=body, timeout=10) as response:
        for line in response.iter_lines():
            if line.startswith(": keep-alive"):
                break  # the tool is running: hang up
    deadline = time.monotonic() + 10
    while marker.read_text() != "cancelled" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.read_text() == "cancelled"
    time.sleep(0.5)
    assert len(scripted.requests) == 1, "no further upstream round after the client left"


@pytest.mark.parametrize("stream", [False, True])
def test_the_same_sdk_code_works_against_an_anthropic_upstream(
    client: openai.OpenAI, scripted: ScriptedUpstream, stream: bool
) -> None:
    scripted.script(
        completion(calls=[("search_tools", {"query": "exchange rates"})], usage=(40, 4)),
        completion(calls=[("finance__get_exchange_rates", {"base": "EUR"})], usage=(60, 6)),
        completion("The euro buys about 1.09 dollars.", usage=(80, 8)),
    )
    messages: Any = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "EUR rates?"}]
    if stream:
        chunks = list(
            client.chat.completions.create(
                model="claude", messages=messages, stream=True, stream_options={"include_usage": True}
            )
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
        reasons = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        usage = chunks[-1].usage
    else:
        reply = client.chat.completions.create(model="claude", messages=messages)
        text, reasons, usage = reply.choices[0].message.content or "", [reply.choices[0].finish_reason], reply.usage
    assert text == "The euro buys about 1.09 dollars."
    assert reasons == ["stop"]
    assert usage is not None and usage.prompt_tokens == 180 and usage.completion_tokens == 18
    first = scripted.requests[0]
    assert first["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert first["max_tokens"] == 4096 and first["model"] == "claude-sonnet-4-5"
    assert first["tools"][-1]["name"] == "search_tools" and "input_schema" in first["tools"][-1]
    assert scripted.headers[0]["x-api-key"] == "sk-ant-integration"
    result = scripted.requests[2]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "USD" in result["content"]
