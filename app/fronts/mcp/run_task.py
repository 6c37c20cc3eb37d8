"""`run_task` on the MCP front: the tool an MCP client calls to hand the gateway a whole task (app/engine/task_runner.py
runs it, through the engine's one entry), with progress notifications as the task's searches and tool calls
happen."""

from __future__ import annotations

from typing import Any

from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.common.identity import Identities
from app.config import Config
from app.core.catalog import Catalog, ToolScope, select_mcp_tools
from app.engine.caller import Caller
from app.engine.events import CallRefused, Event, McpCallFinished, McpCallStarted, SearchDone
from app.engine.task_runner import TaskRunner
from app.fronts.mcp.clients import calling_client

RUN_TASK_NAME = "run_task"
DESCRIPTION = (
    "Hand a whole task to the gateway: it finds and runs the tools the task needs with its own model and "
    "returns the outcome with a record of each tool call, so their schemas and results stay out of your "
    "context. Use it for multi-step work where only the result matters; call tools yourself when you need "
    "their raw output. Tools marked destructive are not run unless the operator allowed it."
)
PARAMETERS = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "What to do, with every detail the tools will need."},
        "tool_set": {"type": "string", "description": "Only use this tool set (narrows, never widens)."},
    },
    "required": ["task"],
}


class RunTask(Tool):
    """`run_task(task, tool_set?)`: the gateway runs the whole task with its own loop and model, and returns the
    answer with a record of what it did; progress notifications follow each search and tool call."""

    _runner: TaskRunner = PrivateAttr()
    _config: Config = PrivateAttr()
    _tool_set: ToolScope = PrivateAttr()
    _identities: Identities = PrivateAttr()

    def __init__(self, runner: TaskRunner, config: Config, tool_set: ToolScope, identities: Identities) -> None:
        super().__init__(name=RUN_TASK_NAME, description=DESCRIPTION, parameters=PARAMETERS)
        self._runner, self._config, self._tool_set, self._identities = runner, config, tool_set, identities

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        task, tool_set = arguments.get("task"), arguments.get("tool_set")
        if not isinstance(task, str) or not task.strip():
            return ToolResult(content="Error: 'task' must be a non-empty string: what you want done.", is_error=True)
        if tool_set is not None and not isinstance(tool_set, str):
            return ToolResult(content="Error: 'tool_set' must be a string.", is_error=True)
        problem = narrowing_problem(self._runner.mcp.catalog, self._config, self._tool_set, tool_set)
        if problem:
            return ToolResult(content=f"Error: {problem}", is_error=True)
        context = get_context()
        steps = 0

        async def progress(event: Event) -> None:
            nonlocal steps
            message = progress_message(event)
            if message is not None:
                steps += 1
                await context.report_progress(steps, None, message)

        caller = Caller(calling_client(self._tool_set, self._identities)[0], admitted=True)
        # The served scope's last name is what this connection asked for; the engine narrows it to the caller's own.
        served = self._tool_set[-1] if isinstance(self._tool_set, tuple) else self._tool_set
        report = await self._runner.run(task.strip(), tool_set or served, progress, caller)
        return ToolResult(content=report.text(), structured_content=report.as_json(), is_error=report.error is not None)


def narrowing_problem(catalog: Catalog, config: Config, served: ToolScope, asked: str | None) -> str | None:
    """None when `asked` (a run_task tool_set) is within the tool set this connection serves: a tool set can
    narrow what a task may use, never widen it."""
    if asked is None or asked == served:
        return None
    if asked not in config.tool_sets:
        return f"Unknown tool_set {asked!r}. Tool sets: {', '.join(sorted(config.tool_sets)) or 'none'}."
    if served is not None:
        allowed = {entry.name for entry in select_mcp_tools(catalog, config, served)}
        if any(entry.name not in allowed for entry in select_mcp_tools(catalog, config, asked)):
            return f"tool_set {asked!r} has tools outside this connection's tool set {served!r}."
    return None


def progress_message(event: Event) -> str | None:
    if isinstance(event, SearchDone):
        return f"searched {event.label}: {', '.join(event.found) or 'nothing new found'}"
    if isinstance(event, McpCallStarted):
        return f"calling {event.name}"
    if isinstance(event, McpCallFinished):
        return f"{event.name}: {'ok' if event.ok else 'failed'} ({event.seconds:.2f} s)"
    if isinstance(event, CallRefused):
        return f"refused {event.name}: {event.reason}"
    return None
