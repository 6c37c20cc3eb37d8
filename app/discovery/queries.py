"""Several queries in one `search_tools` call, one per capability a task needs.

A model that needs four tools writes four short searches; one call serves them all instead of one upstream round
each. Each query keeps its own top results (merging them into one top list drops the capability whose query
scores lowest), a tool found by several queries is listed once, marked by the queries that found it, and the
queries a call runs are bounded: per call (`max_queries_per_search`) and by the searches the request has left
(`max_searches_per_request`, each query counting as one). Queries that were not run are named in the result,
with the reason, so the model knows what it still has to search for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.catalog import ToolEntry
from app.discovery.describe import describe, shown_name
from app.discovery.params import MAX_QUERY_CHARS

DEFAULT_MAX_QUERIES = 5
MAX_LISTED = 5  # queries named in a note; the rest are counted
NO_MATCH = "Try other keywords, a server_name, or tool_names from the manifest."


@dataclass(frozen=True)
class QueryBudget:
    """How many queries a call may run: `per_call`, and the `left` searches of a request whose bound is
    `per_request` (None: no request bound, as on the MCP front)."""

    per_call: int = DEFAULT_MAX_QUERIES
    left: int | None = None
    per_request: int | None = None


DEFAULT_BUDGET = QueryBudget()


@dataclass(frozen=True)
class Queries:
    """The queries of one call as the search reads them: trimmed, capped, distinct, within the budget."""

    run: list[str]
    notes: list[str] = field(default_factory=list)


def queries_problem(queries: Any) -> str | None:
    if queries is not None and not (isinstance(queries, list) and all(isinstance(query, str) for query in queries)):
        return "'queries' must be an array of strings."
    return None


def clean_query(query: str) -> str:
    """A query as every search reads it (and its vector is looked up by): trimmed and capped."""
    return query.strip()[:MAX_QUERY_CHARS]


def read_queries(query: str | None, queries: Sequence[str] | None, budget: QueryBudget) -> Queries:
    """`query` and then `queries` (types already checked), cleaned; those past the budget are named in notes.
    Only the entries up to the first one past `per_call` are read: a list of a million costs what six do."""
    listed = [*([query] if query is not None else []), *(queries or ())]
    notes: list[str] = []
    runnable: list[str] = []
    seen: set[str] = set()
    over_call: list[str] = []
    rest = 0  # entries from the first one past `per_call` on: counted, a few of them named
    for position, text in enumerate(listed):
        cleaned = clean_query(text)
        if not cleaned or cleaned.casefold() in seen:
            continue
        if len(runnable) == budget.per_call:
            over_call = [clean_query(other) for other in listed[position : position + MAX_LISTED]]
            rest = len(listed) - position
            break
        if len(text.strip()) > MAX_QUERY_CHARS and not notes:
            notes.append(f"Note: the query was cut to its first {MAX_QUERY_CHARS:,} characters.")
        seen.add(cleaned.casefold())
        runnable.append(cleaned)
    allowed = len(runnable) if budget.left is None else max(budget.left, 0)
    run, over_request = runnable[:allowed], runnable[allowed:]
    if over_request:
        notes.append(
            f"Not searched: {_listed(over_request)}: this request already ran {budget.per_request} searches, the "
            "most this gateway allows (max_searches_per_request). Use the tools already found."
        )
    if over_call:
        notes.append(
            f"Not searched: {_listed(over_call, rest)}: one search_tools call runs at most {budget.per_call} queries "
            "(max_queries_per_search). Search for them in another call."
        )
    return Queries(run, notes)


def _listed(queries: Sequence[str], count: int | None = None) -> str:
    """The first few `queries` quoted, and how many more of `count` (all of them by default) there are."""
    shown = [f"'{shown_name(query)}'" for query in queries[:MAX_LISTED] if query]
    more = (len(queries) if count is None else count) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


@dataclass
class QueryHits:
    """What one query of a call found: tools new to the caller, and what to say about it."""

    query: str
    fresh: list[ToolEntry] = field(default_factory=list)
    weak: bool = False  # found by meaning alone: no word of the query matched
    notes: list[str] = field(default_factory=list)
    had_loaded: bool = False  # it found tools the caller has already


def compose(
    hits: Sequence[QueryHits],
    loaded: Sequence[ToolEntry],
    is_loaded: Callable[[str], bool],
    loaded_note: str,
    servers: Sequence[str],
    brief: bool = False,
) -> tuple[str, list[ToolEntry], bool]:
    """The answer to a call of several queries: every tool once, in the order the queries found them, marked by
    the queries that found it; then what a query found nothing for, or only by meaning, and the `loaded` tools
    they found that the caller has already. Returns the text, the tools newly found, and whether every query's
    results were weak."""
    found: list[ToolEntry] = []
    marks: dict[str, list[str]] = {}
    for hit in hits:
        for entry in hit.fresh:
            if entry.name not in marks:
                found.append(entry)
            marks.setdefault(entry.name, []).append(hit.query)
    already = list({entry.name: entry for entry in loaded if entry.name not in marks}.values())
    listing = ""
    if found:
        shown = {name: "for " + ", ".join(f"'{shown_name(query)}'" for query in queries)
                 for name, queries in marks.items()}  # fmt: skip
        listing = describe(found, is_loaded, loaded_note, shown, f" for {len(hits)} queries", brief)
    lines: list[str] = []
    empty = [hit for hit in hits if not hit.fresh and not hit.notes and not hit.had_loaded]
    if empty and not found and not already:
        hint = f" Servers: {', '.join(servers)}." if servers else ""
        lines.append(f"No tools found matching {_listed([hit.query for hit in empty])}. {NO_MATCH}{hint}")
    else:
        for hit in empty:
            lines.append(f"Nothing found for '{shown_name(hit.query)}'. {NO_MATCH}")
    for hit in hits:
        if hit.weak and hit.fresh:
            lines.append(
                f"No tool matches the words of '{shown_name(hit.query)}'; the tools marked for it are the closest by "
                "meaning (weak matches: check that one fits before calling it, or search again with other words)."
            )
        lines.extend(hit.notes)
    if already:
        lines.append(f"Already loaded (call directly): {', '.join(entry.name for entry in already)}.")
    weak = all(hit.weak for hit in hits if hit.fresh) and any(hit.fresh for hit in hits)
    return "\n\n".join(part for part in (listing, "\n".join(lines)) if part), found, weak
