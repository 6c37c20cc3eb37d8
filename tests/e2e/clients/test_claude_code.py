"""Claude Code itself (`claude -p`, the version pinned in tests/package.json, or the newest under
`make check-clients`) against a gateway served by uvicorn, with the settings docs/fronts-and-clients.md gives, and a
scripted upstream speaking chat completions or Anthropic's Messages: a prompt runs to the end, a deferred MCP tool of
the gateway is searched and run server-side, its own Bash tool runs and it carries on with the result, and with
`auto_defer_client_tools` the upstream gets a fraction of the tool tokens it sent (its MCP tools deferred too)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.common import tokens
from app.config import parse_config
from tests.support import SERVERS, ScriptedUpstream, completion
from tests.support.claude_code import ServedGateway, run_claude

KEEP = ["Bash", "Read", "Edit", "ToolSearch"]
CONVERT = {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}


@pytest.fixture(scope="module")
def side() -> Iterator[ScriptedUpstream]:
    """Where its small model's calls go (a newer release may make some): always the same short answer."""
    server = ScriptedUpstream().start()
    server.fallback = completion("OK")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, side: ScriptedUpstream) -> Iterator[ServedGateway]:
    finance = {"command": sys.executable, "args": [str(SERVERS / "finance.py")], "defer_loading": True}
    config = parse_config(
        {
            "providers": {
                "up": {"base_url": scripted.base_url, "api_key": "sk-up", "max_retries": 0},
                "anthropic": {"type": "anthropic", "base_url": scripted.base_url, "api_key": "sk-an", "max_retries": 0},
                "side": {"base_url": side.base_url, "api_key": "sk-side", "max_retries": 0},
            },
            "models": {
                "claude": {"provider": "up", "model": "up-model"},
                "claude-native": {"provider": "anthropic", "model": "claude-up"},
                "fast": {"provider": "side", "model": "up-small"},
            },
            "mcpServers": {"finance": finance},
            "tool_discovery": {
                "semantic": {"enabled": False},
                "auto_defer_client_tools": {"min_tokens": 10000, "keep": KEEP},
            },
        },
        environ={},
    )
    served = ServedGateway(config).start()
    yield served
    served.stop()


def _tool_tokens(tools: list[dict[str, Any]]) -> int:
    return tokens.count_text(json.dumps(tools, ensure_ascii=False))


@pytest.mark.parametrize("model", ["claude", "claude-native"])
def test_a_prompt_runs_to_the_end_at_the_first_try(
    gateway: ServedGateway, scripted: ScriptedUpstream, tmp_path: Path, model: str
) -> None:
    scripted.script(completion("Hello from the gateway."))
    gateway.exchanges.clear()
    result, _ = run_claude(gateway.base_url, "Say hello.", tmp_path, model=model)
    assert result["is_error"] is False and result["result"] == "Hello from the gateway."
    assert [exchange.status for exchange in gateway.exchanges] == [200], "no refusal, no retry without betas"
    sent = gateway.exchanges[0].json()
    roles = [message["role"] for message in sent["messages"]]
    assert len(scripted.requests) == 1 and "Say hello." in json.dumps(scripted.requests[0]["messages"])
    if model == "claude-native":  # what it sent reached Anthropic's format as it was, betas and all
        assert scripted.requests[0]["messages"] == sent["messages"]
        assert scripted.headers[0]["anthropic-beta"] == gateway.exchanges[0].headers["anthropic-beta"]
        assert all(scripted.requests[0][key] == sent[key] for key in ("thinking", "context_management") if key in sent)
    elif "system" in roles:  # its mid-conversation system entries, where they stood
        chat_roles = [message["role"] for message in scripted.requests[0]["messages"]]
        assert chat_roles == ["system", *roles]


def test_it_searches_and_runs_a_deferred_mcp_tool_server_side(
    gateway: ServedGateway, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    scripted.script(  # a chat upstream's default deferral: found tools run through call_tool
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("call_tool", {"name": "finance__convert_currency", "arguments": CONVERT})]),
        completion("250 USD is about 230 EUR."),
    )
    result, _ = run_claude(gateway.base_url, "Convert 250 USD to EUR.", tmp_path)
    assert result["result"] == "250 USD is about 230 EUR."
    assert "finance__convert_currency" in json.dumps(scripted.requests[1]["messages"][-1]), "found, defined in text"
    assert scripted.requests[1]["tools"] == scripted.requests[0]["tools"], "the tools array never changes"
    ran = scripted.requests[2]["messages"][-1]
    assert ran["role"] == "tool" and "EUR" in ran["content"], "the MCP tool ran in the gateway"


def test_it_runs_its_own_bash_tool_and_carries_on_with_the_result(
    gateway: ServedGateway, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    command = "echo made-by-claude-code > made.txt && wc -c made.txt"
    scripted.script(
        completion(calls=[("Bash", {"command": command, "description": "Create made.txt"})]),
        completion("Created made.txt."),
    )
    result, work = run_claude(gateway.base_url, "Create a file made.txt in this directory.", tmp_path)
    assert result["result"] == "Created made.txt." and result["is_error"] is False
    assert (work / "made.txt").read_text() == "made-by-claude-code\n"
    back = scripted.requests[1]["messages"][-1]
    assert back["role"] == "tool" and back["tool_call_id"] == "call_0_Bash" and "made.txt" in back["content"]


def test_auto_deferral_sends_a_fraction_of_its_tool_tokens_upstream(
    gateway: ServedGateway, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    """With its own tool search off it sends every tool, its MCP tools (`mcp__textkit__*`) too: the gateway defers
    them; a deferred one the model finds comes back to it as `tool_use`, it runs it and carries on."""
    textkit = {"command": sys.executable, "args": [str(SERVERS / "textkit.py")]}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"textkit": textkit}}))
    count = "mcp__textkit__count_words"
    scripted.script(  # found tools run through call_tool, a chat upstream's default
        completion(calls=[("search_tools", {"tool_names": [count]})]),
        completion(calls=[("call_tool", {"name": count, "arguments": {"text": "one two three"}})]),
        completion("Three words."),
    )
    gateway.exchanges.clear()
    result, _ = run_claude(
        gateway.base_url,
        "Count the words in: one two three",
        tmp_path,
        env={"ENABLE_TOOL_SEARCH": "false"},
        args=("--mcp-config", str(tmp_path / "mcp.json")),
    )
    assert result["result"] == "Three words."
    first = gateway.exchanges[0].json()
    assert count in [tool["name"] for tool in first["tools"]]
    sent, carried = _tool_tokens(first["tools"]), _tool_tokens(scripted.requests[0]["tools"])
    print(f"\nClaude Code sent {len(first['tools'])} tools, {sent:,} tokens (o200k); the first upstream call carried "
          f"{len(scripted.requests[0]['tools'])}, {carried:,} tokens (-{100 - 100 * carried // sent}%)")  # fmt: skip
    assert carried * 4 < sent
    assert [tool["function"]["name"] for tool in scripted.requests[0]["tools"]][-2:] == ["search_tools", "call_tool"]
    later = [turn for exchange in gateway.exchanges[1:] for turn in exchange.json()["messages"]]
    blocks = [block for turn in later if isinstance(turn["content"], list) for block in turn["content"]]
    assert any(block.get("name") == count for block in blocks), "it got the call under the tool's own name"
    ran = scripted.requests[2]["messages"][-1]  # Claude Code ran its own MCP tool and sent the result back
    assert ran["role"] == "tool" and '"words":3' in ran["content"].replace(" ", "")
    assert scripted.requests[2]["tools"] == scripted.requests[0]["tools"], "the tools array never changed"


def test_a_tool_its_own_tool_search_loaded_comes_back_to_it(
    gateway: ServedGateway, scripted: ScriptedUpstream, tmp_path: Path
) -> None:
    """By default it defers its MCP tools itself: its `ToolSearch` answers with a `tool_reference`, and the tool
    it loaded that way is the model's to call, back to it as `tool_use`."""
    textkit = {"command": sys.executable, "args": [str(SERVERS / "textkit.py")]}
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"textkit": textkit}}))
    count = "mcp__textkit__count_words"
    scripted.script(
        completion(calls=[("ToolSearch", {"query": f"select:{count}"})]),
        completion(calls=[(count, {"text": "one two three"})]),
        completion("Three words."),
    )
    args = ("--mcp-config", str(tmp_path / "mcp.json"))
    result, _ = run_claude(gateway.base_url, "Count the words in: one two three", tmp_path, args=args)
    assert result["result"] == "Three words."
    assert count in [tool["function"]["name"] for tool in scripted.requests[1]["tools"]]
    ran = scripted.requests[2]["messages"][-1]
    assert ran["role"] == "tool" and '"words":3' in ran["content"].replace(" ", "")
