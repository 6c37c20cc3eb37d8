"""The demo model's next move, read from the conversation it is sent, like a tool-using LLM's.

Each request's last user message is split into tasks. For each task in turn: search for tools with the task's
words (unless a tool it already has clearly fits), call the best tool whose arguments it can fill from the
message, and go on to the next task once that call's result is in the conversation. A required argument it
cannot fill ends the turn with a question; when every task is done it answers with the results. The gateway
resends the whole conversation each round, so the state is rebuilt from it every time; the task a call belongs
to travels in the call's id. Behind the `call_tool` deferral, found tools are not in its tool list: it reads their
definitions in the search results and runs the one it picks through `call_tool`, as an LLM would.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from app.demo.arguments import Context, Filled, compact, fill
from app.demo.reading import CHAT_WORDS, Facts, content_words, read_facts, split_tasks, stems
from app.demo.shell import shell_call, without_reminders

LABEL = "[demo model: a scripted stand-in for an LLM]"
ASKING = "I need"  # in an answer that asks for arguments, so the user's reply is read together with the request
SEARCH = "search_tools"
CALL_TOOL = "call_tool"
_TASK_ID = re.compile(r"^call_demo_(\d+)_")
SUMMARY = "Summary of the conversation:"  # starts a summary the demo wrote when asked to compact
_DONE = re.compile(r"^Done, task (\d+): (.*)$", re.MULTILINE)


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Step:
    searches: list[tuple[str, str]] = field(default_factory=list)  # (what was searched, as said, result)
    call: tuple[str, dict[str, Any], str] | None = None  # (tool, arguments, result)


@dataclass
class _Candidate:
    name: str
    relevance: float
    score: float
    filled: Filled
    name_hit: bool


def respond(body: dict[str, Any]) -> Reply:
    messages = [message for message in body.get("messages") or [] if isinstance(message, dict)]
    users = [index for index, message in enumerate(messages) if message.get("role") == "user"]
    if not users:
        return Reply(f"{LABEL}\n\nThere is no user message to answer.")
    choice = body.get("tool_choice")
    if choice == "none" and len(users) > 1 and "summary" in _text(messages[users[-1]].get("content")).lower():
        return Reply(_summary(messages[: users[-1]], users[:-1]))  # asked to compact the conversation so far
    request, steps, carried = _progress(messages, users)
    tools = _functions(body.get("tools"))
    if CALL_TOOL in tools:  # found tools are defined in the search results and run through call_tool
        tools = {**_found(messages), **tools}
    notes: list[str] = []
    context = Context()
    for index, task in enumerate(split_tasks(request)):
        step = steps.get(index, _Step())
        if step.call is None and index in carried:  # done before the conversation was compacted
            notes.append(carried[index])
            continue
        if step.call is not None:
            notes.append(_done(step))
            context = Context(task, step.call[2])
            continue
        move = _next_move(index, task, step, context, tools, choice)
        if isinstance(move, dict):
            return Reply(None, [move])
        notes.append(move)
        if ASKING in move:
            break
    return Reply(f"{LABEL}\n\n" + "\n\n".join(notes))


def _progress(messages: list[dict[str, Any]], users: list[int]) -> tuple[str, dict[int, _Step], dict[int, str]]:
    """The request, the steps taken for it since, and the tasks a summary of its own says were done before the
    conversation was compacted (the summary then stands as the last user turn, after the request)."""
    steps = _steps(messages[users[-1] + 1 :])
    summary = _text(messages[users[-1]].get("content"))
    if SUMMARY not in summary or len(users) < 2:
        return _request_text(messages, users), steps, {}
    carried = {int(task): note.replace("\\n", "\n") for task, note in _DONE.findall(summary)}
    carried |= _progress(messages[: users[-1]], users[:-1])[2]  # and what an earlier summary carried
    return _request_text(messages[: users[-1]], users[:-1]), steps, carried


def _summary(messages: list[dict[str, Any]], users: list[int]) -> str:
    """The demo's summary of the conversation so far, which it reads back after a compaction: the request and a
    line for each task done."""
    request, steps, carried = _progress(messages, users)
    done = carried | {task: _done(step) for task, step in steps.items() if step.call is not None}
    lines = [f"Done, task {task}: " + note.replace("\n", "\\n") for task, note in sorted(done.items())]
    return "\n".join([f"{LABEL} {SUMMARY} the user asked: {request}", *lines])


def _request_text(messages: list[dict[str, Any]], users: list[int]) -> str:
    """The last user message; with the one before it when the demo's last answer asked for missing arguments."""
    text = _text(messages[users[-1]].get("content"))
    before = messages[users[-1] - 1] if users[-1] > 0 else {}
    asked = (
        before.get("role") == "assistant"
        and LABEL in _text(before.get("content"))
        and ASKING in _text(before.get("content"))
    )
    if asked and len(users) > 1:
        return f"{_text(messages[users[-2]].get('content'))} {text}"
    return text


def _text(content: Any) -> str:
    if isinstance(content, str):
        return without_reminders(content)
    if isinstance(content, list):
        return " ".join(without_reminders(str(part.get("text", ""))) for part in content if isinstance(part, dict))
    return ""


def _functions(tools: Any) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            found[function["name"]] = function
    return found


def _found(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The definitions the conversation's search results carry (the last line of each, a JSON list), each marked
    to run through call_tool."""
    found: dict[str, dict[str, Any]] = {}
    for message in messages:
        lines = _text(message.get("content")).strip().splitlines() if message.get("role") == "tool" else []
        try:
            listed = json.loads(lines[-1]) if lines and lines[-1].startswith("[{") else []
        except ValueError:
            listed = []
        for definition in listed if isinstance(listed, list) else []:
            if isinstance(definition, dict) and isinstance(definition.get("name"), str):
                found[definition["name"]] = {**definition, CALL_TOOL: True}
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _steps(turns: list[dict[str, Any]]) -> dict[int, _Step]:
    """What was done for each task since the user's message: searches with their results, the tool called."""
    steps: dict[int, _Step] = {}
    calls: dict[str, tuple[int, str, dict[str, Any]]] = {}
    for turn in turns:
        for call in _list(turn.get("tool_calls")) if turn.get("role") == "assistant" else []:
            call = call if isinstance(call, dict) else {}
            function = call["function"] if isinstance(call.get("function"), dict) else {}
            try:
                arguments = json.loads(str(function.get("arguments") or "{}"))
            except ValueError:
                arguments = {}
            match = _TASK_ID.match(str(call.get("id", "")))
            task = int(match[1]) if match else sum(step.call is not None for step in steps.values())
            arguments = arguments if isinstance(arguments, dict) else {}
            name = str(function.get("name"))
            if name == CALL_TOOL:  # the call of the tool it names
                name, inner = str(arguments.get("name")), arguments.get("arguments")
                arguments = inner if isinstance(inner, dict) else {}
            calls[str(call.get("id"))] = (task, name, arguments)
        if turn.get("role") == "tool" and str(turn.get("tool_call_id")) in calls:
            task, name, arguments = calls[str(turn.get("tool_call_id"))]
            step = steps.setdefault(task, _Step())
            result = _text(turn.get("content"))
            if name == SEARCH:
                query, server = arguments.get("query"), arguments.get("server_name")
                label = f'"{query}"' if query else f"all of {server}'s tools" if server else "tools"
                step.searches.append((label, result))
            else:
                step.call = (name, arguments, result)
    return steps


def _next_move(
    index: int, task: str, step: _Step, context: Context, tools: dict[str, dict[str, Any]], choice: Any
) -> dict[str, Any] | str:
    """A tool call to make now, or a paragraph of the final answer."""
    forced = _forced(choice)
    if choice == "none":
        return f'You asked for an answer without tools, and without them I have nothing to say about "{task}".'
    shell = shell_call(task, tools) if forced is None else None
    if shell is not None:
        return _call(index, *shell)
    query = " ".join(content_words(re.sub(r"\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)|`[^`]*`", " ", task)))  # data
    searchable = SEARCH in tools and not step.searches
    vocabulary: set[str] = set()
    for function in tools.values():
        vocabulary |= stems(f"{function['name'].replace('_', ' ')} {function.get('description', '')}")
    small_talk = all(word in CHAT_WORDS for word in content_words(task))
    unknown = SEARCH not in tools and not stems(task) & vocabulary  # nothing to search, nothing it has fits
    if forced is None and (small_talk or unknown):
        if choice == "required" and searchable:
            return _call(index, SEARCH, {"query": query or task[:200]})
        return (
            f'"{task}" does not match any tool I was given, and I am not a language model, so I cannot answer it '
            "myself. Ask for something one of the tools can do (`toolsift tools` lists them)."
        )
    ranked = re.findall(r"^- (\S+) \(", step.searches[-1][1], re.MULTILINE) if step.searches else []
    facts = read_facts(task)
    candidates = [
        _candidate(name, function, task, facts, context, ranked)
        for name, function in tools.items()
        if name not in (SEARCH, CALL_TOOL) and (forced is None or name == forced)
    ]
    best = max((c for c in candidates if c.relevance > 0 or forced), key=lambda c: c.score, default=None)
    if forced == SEARCH or (forced is None and searchable and not _clearly_fits(best)):
        return _call(index, SEARCH, {"query": query or task[:200]})
    if best is None:
        if step.searches:
            return f'I searched the tools for {step.searches[-1][0]}, but none of those I found fits "{task}".'
        return f'None of the tools I was given fits "{task}".'
    server = best.name.split("__")[0] if "__" in best.name else ""
    if best.filled.missing and len(step.searches) == 1 and SEARCH in tools and server:
        return _call(index, SEARCH, {"server_name": server})  # a closer tool may be among the server's others
    if best.filled.missing:
        wanted = "; ".join(f"{name} ({about.rstrip('.')})" if about else name for name, about in best.filled.missing)
        return f'To call `{best.name}` for "{task}" {ASKING}: {wanted}. Could you tell me?'
    if tools[best.name].get(CALL_TOOL):
        return _call(index, CALL_TOOL, {"name": best.name, "arguments": best.filled.arguments})
    return _call(index, best.name, best.filled.arguments)


def _forced(choice: Any) -> str | None:
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        return name if isinstance(name, str) else None
    return None


def _candidate(
    name: str, function: dict[str, Any], task: str, facts: Facts, context: Context, ranked: list[str]
) -> _Candidate:
    """How well a tool fits the task: its name's words count most, then its description's, then its parameters';
    then how much of the message its arguments use; and the search's own ranking breaks near-ties."""
    parameters: dict[str, Any] = function["parameters"] if isinstance(function.get("parameters"), dict) else {}
    properties: dict[str, Any] = parameters["properties"] if isinstance(parameters.get("properties"), dict) else {}
    in_name = stems(name.replace("_", " "))
    in_description = stems(str(function.get("description") or ""))
    in_parameters = stems(" ".join(f"{key} {json.dumps(value)}" for key, value in properties.items()))
    relevance = 0.0
    name_hit = False
    for word in stems(task):
        if word in in_name:
            relevance, name_hit = relevance + 3, True
        elif word in in_description:
            relevance += 1
        elif word in in_parameters:
            relevance += 0.5
    filled = fill(parameters, facts, context)
    score = relevance + filled.used - 0.5 * len(filled.missing)
    if name in ranked:
        score += 0.5 * (len(ranked) - ranked.index(name)) / len(ranked)
    return _Candidate(name, relevance, score, filled, name_hit)


def _clearly_fits(candidate: _Candidate | None) -> bool:
    """A tool the model already has and would call without searching: named like the task, nothing missing."""
    return candidate is not None and candidate.name_hit and not candidate.filled.missing and candidate.filled.used > 0


def _call(task: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_demo_{task}_{secrets.token_hex(6)}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
    }


def _done(step: _Step) -> str:
    assert step.call is not None
    name, arguments, result = step.call
    labels = [label for label, _ in step.searches]
    searched = f"I searched the tools for {' and then '.join(labels)}, then " if labels else ""
    verb = "called" if searched else "I called"
    outcome = "It failed" if result.lstrip().lower().startswith("error") else "It returned"
    return f"{searched}{verb} `{name}` with {json.dumps(arguments, ensure_ascii=False)}.\n{outcome}: {compact(result)}"
