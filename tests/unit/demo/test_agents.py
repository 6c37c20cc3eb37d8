"""The demo model reading coding agents' requests as the gateway sends them on: Claude Code's prompt among its
`<system-reminder>` blocks and system entries, and a command to run given to the client's own shell tool (Claude
Code's `Bash`, Codex CLI's `exec_command`)."""

from __future__ import annotations

import json
from typing import Any

from app.demo.model import LABEL, respond

SEARCH = {"type": "function", "function": {"name": "search_tools", "description": "Search tools: money convert.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}  # fmt: skip
BASH = {"type": "function", "function": {"name": "Bash", "description": "Executes a given bash command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"},
                       "description": {"type": "string"}}, "required": ["command"]}}}  # fmt: skip
EXEC = {"type": "function", "function": {"name": "exec_command", "description": "Runs a command in a PTY.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}}  # fmt: skip
REMINDER = "<system-reminder>\nAttribution for git commits: end them with Co-Authored-By.\n</system-reminder>\n"


def claude_code_turns(prompt: str) -> list[dict[str, Any]]:
    """Claude Code's first request as a chat upstream gets it: its system prompt, the prompt after a reminder, then
    its environment as a system entry."""
    return [
        {"role": "system", "content": [{"type": "text", "text": "You are a Claude agent. Run tools as asked."}]},
        {"role": "user", "content": [{"type": "text", "text": REMINDER}, {"type": "text", "text": prompt}]},
        {"role": "system", "content": [{"type": "text", "text": "# Environment\n - Shell: bash\n - Platform: linux"}]},
    ]


def _call(reply: Any) -> tuple[str, dict[str, Any]]:
    (call,) = reply.tool_calls
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def test_the_prompt_is_found_among_claude_codes_reminders_and_system_entries() -> None:
    reply = respond({"messages": claude_code_turns("Please convert 12.5 GBP into JPY"), "tools": [SEARCH, BASH]})
    assert _call(reply) == ("search_tools", {"query": "convert gbp jpy"})


def test_a_command_to_run_goes_to_claude_codes_bash_then_its_output_is_the_answer() -> None:
    turns = claude_code_turns("Run `echo hi > hello.txt && ls` in the shell.")
    reply = respond({"messages": turns, "tools": [SEARCH, BASH]})
    assert _call(reply) == ("Bash", {"command": "echo hi > hello.txt && ls"})
    turns += [
        {"role": "assistant", "content": None, "tool_calls": reply.tool_calls},
        {"role": "tool", "tool_call_id": reply.tool_calls[0]["id"], "content": "hello.txt"},
    ]
    answer = respond({"messages": turns, "tools": [SEARCH, BASH]})
    assert not answer.tool_calls and answer.content is not None
    assert answer.content.startswith(LABEL) and "`Bash`" in answer.content and "hello.txt" in answer.content


def test_codexs_exec_command_takes_the_command_as_cmd() -> None:
    asked = {"role": "user", "content": 'Execute "pwd" please'}
    assert _call(respond({"messages": [asked], "tools": [SEARCH, EXEC]})) == ("exec_command", {"cmd": "pwd"})


def test_no_shell_call_without_a_command_spelled_out_or_a_shell_tool() -> None:
    vague = respond({"messages": claude_code_turns("Run the numbers: convert 5 USD to EUR"), "tools": [SEARCH, BASH]})
    assert _call(vague)[0] == "search_tools"
    quoted = {"role": "user", "content": "Run `ls` in the shell."}
    no_shell = respond({"messages": [quoted], "tools": [SEARCH]})
    assert _call(no_shell)[0] == "search_tools"
