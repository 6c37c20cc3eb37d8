"""The client's own shell, as the demo model uses it: a task that asks to run a command given in backticks or
quotes calls the shell tool the client sent, in the shapes agents send it (Claude Code's `Bash` with `command`,
Codex CLI's `exec_command` with `cmd`). The command runs on the client's machine, never in the gateway."""

from __future__ import annotations

import re
from typing import Any

from app.demo.reading import words

SHELL_TOOLS = {"Bash": "command", "exec_command": "cmd"}  # a client's shell tool, and its command's parameter
ASKING_WORDS = frozenset({"run", "execute", "exec", "shell", "command", "terminal", "bash"})
_COMMAND = re.compile(r"`([^`]+)`|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def shell_call(task: str, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The client's shell tool and its arguments when `task` asks to run a command it spells out, else None."""
    if not ASKING_WORDS & set(words(task)):
        return None
    found = _COMMAND.search(task)
    if found is None:
        return None
    command = next(group for group in found.groups() if group is not None).strip()
    for name, parameter in SHELL_TOOLS.items():
        parameters = tools.get(name, {}).get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        if command and isinstance(properties, dict) and parameter in properties:
            return name, {parameter: command}
    return None


def without_reminders(text: str) -> str:
    """A user turn's text without the `<system-reminder>` blocks Claude Code puts before the prompt (the date, its
    environment, attribution rules): the prompt is what is left."""
    return _REMINDER.sub(" ", text).strip() if "<system-reminder>" in text else text
