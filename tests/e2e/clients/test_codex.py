"""Codex CLI, unchanged (`codex exec`, the version pinned in tests/package.json), against `toolsift serve` with a
scripted chat-completions upstream and a real stdio MCP server: a prompt runs to its end; a deferred MCP tool is
searched and run in the gateway; Codex's own shell tool (`exec_command`) runs in a temporary directory and the
answer continues with its output; with a GPT-5-class model name its freeform `apply_patch` tool works."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import SERVERS, ScriptedUpstream, completion, free_port, served_gateway
from tests.support.clients import package_version
from tests.support.codex import run_codex

PLAIN_MODEL = "fast"  # an alias: Codex knows nothing of it and sends its default tools (a namespace among them)
GPT5_MODEL = "gpt-5.5"  # a name Codex knows: it sends apply_patch as a freeform custom tool, and tool_search


@pytest.fixture(scope="module")
def gateway(scripted: ScriptedUpstream, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = {
        "providers": {"up": {"base_url": scripted.base_url, "api_key": "sk-up", "max_retries": 0}},
        "default_provider": "up",
        "models": {PLAIN_MODEL: {"provider": "up", "model": "gpt-test-mini"}},
        "mcpServers": {
            "finance": {"command": sys.executable, "args": [str(SERVERS / "finance.py")], "defer_loading": True}
        },
        "tool_discovery": {"enabled": True, "semantic": {"enabled": False}},
        "auth": {"api_keys": ["key-codex"]},
    }
    path = tmp_path_factory.mktemp("codex-gateway") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port()) as base:
        yield f"{base}/v1"


def run(gateway: str, tmp_path: Path, prompt: str, model: str = PLAIN_MODEL) -> tuple[str, Path]:
    """Codex's final answer (its stdout) and the directory it worked in; it must have ended well."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    finished = run_codex(prompt, gateway, model, workdir, tmp_path / "codex-home", key="key-codex")
    assert finished.returncode == 0, f"codex {package_version('@openai/codex')} failed:\n{finished.stderr[-3000:]}"
    return finished.stdout, workdir


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def test_a_prompt_runs_to_its_end(scripted: ScriptedUpstream, gateway: str, tmp_path: Path) -> None:
    scripted.script(completion("Hello from the scripted upstream."))
    answer, _ = run(gateway, tmp_path, "Say hello.")
    assert "Hello from the scripted upstream." in answer
    (sent,) = scripted.requests
    prompt = {"role": "user", "content": [{"type": "text", "text": "Say hello."}]}
    assert sent["messages"][-1] == prompt, "the prompt is the last user turn"
    names = tool_names(sent)
    assert "exec_command" in names and "search_tools" in names
    assert "multi_agent_v1__spawn_agent" in names, "a namespace's functions are served"
    assert "web_search" not in json.dumps(sent), "the hosted web search is left out"


def test_a_deferred_mcp_tool_is_searched_and_run_in_the_gateway(
    scripted: ScriptedUpstream, gateway: str, tmp_path: Path
) -> None:
    convert = {"amount": 250, "from_currency": "USD", "to_currency": "EUR"}
    scripted.script(  # found tools run through call_tool, a chat upstream's default
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("call_tool", {"name": "finance__convert_currency", "arguments": convert})]),
        completion("250 USD is about 230 EUR."),
    )
    answer, _ = run(gateway, tmp_path, "Convert 250 USD to EUR.")
    assert "250 USD is about 230 EUR." in answer
    assert len(scripted.requests) == 3, "one Codex request, three upstream rounds"
    assert "finance__convert_currency" not in tool_names(scripted.requests[0])
    assert "finance__convert_currency" in json.dumps(scripted.requests[1]["messages"][-1]), "found by search"
    assert tool_names(scripted.requests[2]) == tool_names(scripted.requests[0]), "the tools array never changed"
    result = scripted.requests[2]["messages"][-1]
    assert result["role"] == "tool" and "EUR" in result["content"], "the MCP tool ran in the gateway"


def test_codex_runs_its_own_shell_tool_and_continues(scripted: ScriptedUpstream, gateway: str, tmp_path: Path) -> None:
    command = "printf 'made by codex' > made.txt && cat made.txt"
    scripted.script(completion(calls=[("exec_command", {"cmd": command})]), completion("Created made.txt."))
    answer, workdir = run(gateway, tmp_path, "Create made.txt with the text 'made by codex'.")
    assert (workdir / "made.txt").read_text() == "made by codex", "Codex ran the command in its directory"
    assert "Created made.txt." in answer
    assert len(scripted.requests) == 2, "the call went back to Codex, which sent its output in a second request"
    call, output = scripted.requests[1]["messages"][-2:]
    assert call["tool_calls"][0]["function"]["name"] == "exec_command"
    assert output["role"] == "tool" and "made by codex" in output["content"]


def test_a_gpt5_class_model_gets_apply_patch_as_a_freeform_tool(
    scripted: ScriptedUpstream, gateway: str, tmp_path: Path
) -> None:
    patch = "*** Begin Patch\n*** Add File: patched.txt\n+patched by codex\n*** End Patch\n"
    scripted.script(completion(calls=[("apply_patch", {"input": patch})]), completion("Patched."))
    answer, workdir = run(gateway, tmp_path, "Add patched.txt.", model=GPT5_MODEL)
    assert (workdir / "patched.txt").read_text() == "patched by codex\n", "Codex applied the freeform patch"
    assert "Patched." in answer
    first, second = scripted.requests
    apply_patch = next(tool["function"] for tool in first["tools"] if tool["function"]["name"] == "apply_patch")
    assert list(apply_patch["parameters"]["properties"]) == ["input"] and "Begin Patch" in apply_patch["description"]
    assert "tool_search" in tool_names(first), "Codex's own tool search is a client tool"
    output = second["messages"][-1]
    assert output["role"] == "tool" and "patched.txt" in output["content"]
