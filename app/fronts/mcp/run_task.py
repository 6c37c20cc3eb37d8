"""`run_task` on the MCP front: the tool an MCP client calls to hand the gateway a whole task (app/engine/task_runner.py
runs it, through the engine's one entry), with progress notifications as the task's searches and tool calls
happen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from pydantic import PrivateAttr

from app.common.errors import GatewayError
from app.core.catalog import ToolScope
from app.engine.api import Client, Engine
from app.engine.events import CallRefused, Event, McpCallFinished, McpCallStarted, SearchDone

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

    _engine: Engine = PrivateAttr()
    _tool_set: ToolScope = PrivateAttr()
    _calling: Callable[[], Client] = PrivateAttr()

    def __init__(self, engine: Engine, tool_set: ToolScope, calling: Callable[[], Client]) -> None:
        super().__init__(name=RUN_TASK_NAME, description=DESCRIPTION, parameters=PARAMETERS)
        self._engine, self._tool_set, self._calling = engine, tool_set, calling

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        task, tool_set = arguments.get("task"), arguments.get("tool_set")
        if not isinstance(task, str) or not task.strip():
            return ToolResult(content="Error: 'task' must be a non-empty string: what you want done.", is_error=True)
        if tool_set is not None and not isinstance(tool_set, str):
            return ToolResult(content="Error: 'tool_set' must be a string.", is_error=True)
        context = get_context()
        steps = 0

        async def progress(event: Event) -> None:
            nonlocal steps
            message = progress_message(event)
            if message is not None:
                steps += 1
                await context.report_progress(steps, None, message)

        try:
            report = await self._engine.run_task(task.strip(), self._tool_set, tool_set, self._calling()[0], progress)
        except GatewayError as exc:
            return ToolResult(content=f"Error: {exc.message}", is_error=True)
        return ToolResult(content=report.text(), structured_content=report.as_json(), is_error=report.error is not None)


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
