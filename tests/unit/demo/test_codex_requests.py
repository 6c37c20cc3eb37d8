"""The demo model reading Codex CLI's requests as the gateway sends them on to a chat upstream: its developer items
as system messages, its environment as a user turn, then the prompt; a command to run goes to `exec_command`."""

from __future__ import annotations

import json
from typing import Any

from app.codecs.openai_chat.requests import to_openai
from app.codecs.responses.requests import chat_request
from app.core.model import UpstreamRequest
from app.demo.model import respond
from app.fronts.responses.wire import parse_responses_request

EXEC = {"type": "function", "name": "exec_command", "description": "Runs a command in a PTY.", "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}  # fmt: skip
SEARCH = {"type": "function", "function": {"name": "search_tools", "description": "Search tools: money convert.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}  # fmt: skip


def codex_request(prompt: str) -> dict[str, Any]:
    """The shape of Codex CLI 0.169's first request (its texts shortened)."""

    def item(role: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}

    return {
        "model": "gpt-5.5",
        "input": [
            item("developer", "You are Codex, a coding agent. Run commands with exec_command."),
            item("developer", "<skills_instructions>\n## Skills\n</skills_instructions>"),
            item("user", "<environment_context>\n  <cwd>/tmp/work</cwd>\n</environment_context>"),
            item("user", prompt),
        ],
        "tools": [EXEC, {"type": "web_search", "external_web_access": True}],
        "tool_choice": "auto",
        "reasoning": {"summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
    }


def sent_to_the_demo(prompt: str) -> dict[str, Any]:
    """The chat body the gateway's first round sends the demo model, with `search_tools` as discovery adds it."""
    request = chat_request(parse_responses_request(json.dumps(codex_request(prompt)).encode(), 100, 100))
    body = to_openai(UpstreamRequest("demo", request.messages, [tool.spec for tool in request.tools], request.options))
    body["tools"].append(SEARCH)
    return body


def test_the_prompt_is_the_last_of_codexs_user_items() -> None:
    (call,) = respond(sent_to_the_demo("Please convert 12.5 GBP into JPY")).tool_calls
    assert call["function"]["name"] == "search_tools"
    assert json.loads(call["function"]["arguments"]) == {"query": "convert gbp jpy"}


def test_a_command_to_run_goes_to_codexs_exec_command() -> None:
    (call,) = respond(sent_to_the_demo("Run `ls -la` in the shell.")).tool_calls
    assert call["function"]["name"] == "exec_command" and json.loads(call["function"]["arguments"]) == {"cmd": "ls -la"}
