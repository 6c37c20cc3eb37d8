"""Related tools: which siblings of a found tool come along when a search loads it (`load_related`).

Tasks usually need several tools of one server: create an issue, then get it, then update it. Loading a found
tool's closest siblings with it saves the model a search round when it needs them next. Two tools are related
when they belong to the same server and the server groups them (a shared `_meta` category or tag), or when their
names act on the same object (`create_issue`, `get_issue`, `list_issues` share `issue`). Siblings that share a
tag rank before siblings that share only a noun; ties keep the server's own order.

Pure: the caller passes the tools a search may load (its own tool set's deferred tools), so a related tool is
never one of another server's or one outside the caller's tool set.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from app.core.catalog import ToolEntry
from app.discovery.search import Discovery, SearchOutcome

_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Leading words that say what a tool does rather than what it acts on.
VERBS = frozenset(
    "get list create update delete remove add set fetch search find read write edit post put patch query show "
    "describe retrieve insert upsert modify rename move copy open close start stop run check count make new "
    "generate load save upload download send cancel enable disable view lookup".split()
)
# Trailing words that name a shape of the answer, not the object (`get_issue_details` acts on an issue).
SHAPES = frozenset("data info information details detail list all id ids by".split())
_CUT = frozenset({"by", "for", "from", "in", "of", "with", "to", "on"})


def object_noun(name: str) -> str | None:
    """The object a tool's name acts on, singular: `list_open_issues` -> `open issue`, `get_issue_by_id` ->
    `issue`, `getIssue` / `Get All Issues` -> `issue`. None when nothing but a verb (or nothing) is left."""
    words = [word.lower() for word in _WORD.findall(name)]
    while words and (words[0] in VERBS or words[0] == "all"):
        words = words[1:]
    for position, word in enumerate(words):
        if word in _CUT:
            words = words[:position]
            break
    while words and words[-1] in SHAPES:
        words = words[:-1]
    if not words:
        return None
    return " ".join([*words[:-1], singular(words[-1])])


def singular(word: str) -> str:
    """English plural to singular, for the regular forms tool names use (`issues`, `entries`, `addresses`)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def related_tools(
    found: Sequence[ToolEntry],
    candidates: Iterable[ToolEntry],
    per_tool: int,
    is_loaded: Callable[[str], bool] = lambda name: False,
) -> list[ToolEntry]:
    """Up to `per_tool` related tools for each of `found`, in the order found, none twice, none already loaded or
    found. Only `candidates` of the found tool's own server are looked at; client tools (no server) get none."""
    if per_tool <= 0 or not found:
        return []
    by_server: dict[str, list[ToolEntry]] = {}
    for entry in candidates:
        if entry.server is not None:
            by_server.setdefault(entry.server, []).append(entry)
    taken = {entry.name for entry in found}
    chosen: list[ToolEntry] = []
    for entry in found:
        if entry.server is None:
            continue
        siblings = [
            other for other in by_server.get(entry.server, ()) if other.name not in taken and not is_loaded(other.name)
        ]
        for other in _closest(entry, siblings)[:per_tool]:
            taken.add(other.name)
            chosen.append(other)
    return chosen


def _closest(entry: ToolEntry, siblings: list[ToolEntry]) -> list[ToolEntry]:
    """The siblings related to `entry`: those sharing a tag first, then those sharing only the object noun."""
    tags = set(entry.tags)
    noun = object_noun(entry.original_name)
    by_tag = [other for other in siblings if tags and tags.intersection(other.tags)]
    by_noun = [
        other
        for other in siblings
        if other not in by_tag and noun is not None and object_noun(other.original_name) == noun
    ]
    return [*by_tag, *by_noun]


def with_related(
    outcome: SearchOutcome, discovery: Discovery, per_tool: int, is_loaded: Callable[[str], bool]
) -> SearchOutcome:
    """A search's outcome plus the related tools of what it found, named in its text so the model knows they
    are loaded. The candidates are `discovery`'s tools: the caller's own deferred tools."""
    candidates = (entry for group in discovery.by_group.values() for entry in group)
    related = related_tools(outcome.found, candidates, per_tool, is_loaded)
    if not related:
        return outcome
    lines = [outcome.text, "", "Also loaded with them, related tools of the same server (callable now):"]
    lines.extend(f"- {entry.name}{_first_line(entry.description)}" for entry in related)
    return replace(outcome, text="\n".join(lines), related=related)


def _first_line(description: str, limit: int = 100) -> str:
    line = description.strip().split("\n")[0]
    if not line:
        return ""
    return f": {line if len(line) <= limit else line[: limit - 3].rstrip() + '...'}"
