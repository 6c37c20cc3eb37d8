"""The `native` deferral mode: the upstream defers tools itself, and the gateway only says which ones to load.

Anthropic (and chat hosts that copy it) take every deferred tool in `tools` with `defer_loading: true`, render
none of them, and expand one where a tool result names it in a `tool_reference` block; the Responses API takes a
client-executed `tool_search` tool and loads the definitions a `tool_search_output` carries. Either way a found
tool joins the context at the end, where the search result stands, so the tool list and everything before the
result stay the same and the prompt cache keeps hitting. The gateway's own search still ranks: its results name
the tools they load (`Message.loads`), and each codec writes them in its format.

A client's history does not hold the gateway's searches, so a tool the conversation used or found before must be
loaded again in what the upstream sees: before the first call of it in the history (the same place in every
request, so the prefix stays the same); a tool an earlier turn ran in the gateway, right after the user message of
the turn that first called it (sessions keep that turn), which also stays where it is as the conversation grows. A
tool that was only found is not loaded again: a search by name brings it back, at the end, where it costs least.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping

from app.core.catalog import SEARCH_TOOL_NAME
from app.core.model import Message, ToolCall

LOAD_PREFIX = "toolsift_load_"  # the id of a load exchange's call: a digest of what it loads, the same every time


def with_loads(
    messages: list[Message], deferred: Collection[str], loaded: list[str], turns: Mapping[str, int]
) -> list[Message]:
    """The conversation as the upstream is sent it: each `deferred` tool that an assistant turn calls and no
    earlier tool result loads is loaded just before that turn; the other `loaded` ones right after the user
    message of their turn (`turns`: the how-manyth user message), or at the end when it has none."""
    called = {call.name for message in messages for call in message.tool_calls if call.name in deferred}
    covered = called | {name for message in messages for name in message.loads}
    users = sum(message.role == "user" for message in messages)
    anchored: dict[int, list[str]] = {}
    for name in loaded:
        if name in deferred and name not in covered:
            turn = turns.get(name, 0)
            anchored.setdefault(turn if 0 < turn <= users else 0, []).append(name)
    result: list[Message] = []
    done: set[str] = set()
    seen_users = 0
    for message in messages:
        if message.role == "assistant":
            missing = [call.name for call in message.tool_calls if call.name in deferred and call.name not in done]
            missing = list(dict.fromkeys(missing))
            if missing:
                result.extend(load_exchange(missing))
                done.update(missing)
        result.append(message)
        done.update(message.loads)
        if message.role == "user":
            seen_users += 1
            result.extend(load_exchange(anchored.get(seen_users, [])))
    rest = anchored.get(0, [])
    if rest and (not result or result[-1].role != "assistant"):  # a last assistant turn is a prefill: kept last
        result.extend(load_exchange(rest))
    return result


def load_exchange(names: list[str]) -> list[Message]:
    """A `search_tools` call by name and its result loading `names`, as if the model had searched for them."""
    if not names:
        return []
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]
    call = ToolCall(LOAD_PREFIX + digest, SEARCH_TOOL_NAME, json.dumps({"tool_names": names}, ensure_ascii=False))
    text = f"Loaded {', '.join(names)}: {'it' if len(names) == 1 else 'they'} can be called now."
    return [Message("assistant", None, [call]), Message("tool", text, tool_call_id=call.id, loads=list(names))]
