"""`search_tools`: answer the model's search from the index, by exact names, or by server.

Every outcome is text the model can act on: found tools with their parameters, or an error that says what to
try next (valid servers, closest names, a different query). Nothing here raises to the caller. A call may carry
several queries, one per capability (app/discovery/queries.py); one query reads as it always did.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.config import SEARCH_RESULTS_HARD_CAP
from app.core.catalog import ToolEntry
from app.discovery.describe import LOADED_NOTE, MAX_NAME_CHARS, describe
from app.discovery.describe import shown_name as shown_name
from app.discovery.discovery import Discovery as Discovery
from app.discovery.encode_budget import EncodeBudget
from app.discovery.hybrid import Scored, hybrid_rank
from app.discovery.learned import LearnedView, learned_ranking
from app.discovery.queries import DEFAULT_BUDGET, QueryBudget, QueryHits, compose, queries_problem, read_queries
from app.discovery.queries import clean_query as clean_query

_REQUIRED = re.compile(r"\+[^\W\d_]")
# What a search looks at is bounded, so a hostile query or name list costs the same as a long honest one.
MAX_NAMES = 64
MAX_SUGGESTED = 5  # missing names that get "closest matches" (each compares against every tool name)


@dataclass(frozen=True)
class SearchOutcome:
    text: str
    found: list[ToolEntry]
    weak: bool = False  # the results matched by meaning only, no word of the query
    related: list[ToolEntry] = field(default_factory=list)  # loaded along with `found` (load_related)
    queries: tuple[str, ...] = ()  # the queries run, each one search against the request's bound
    # Per query ranked (not a look-up by name), the tools it returned, found or loaded already: what learning reads.
    by_query: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def searches(self) -> int:
        """What the call counts against the request's searches: one per query run, a search by name one."""
        return max(len(self.queries), 1)


@dataclass(frozen=True)
class Found:
    """What a search looks in, what counts as loaded already, and how newly found tools are announced."""

    discovery: Discovery
    is_loaded: Callable[[str], bool]
    loaded_note: str
    brief: bool = False  # found tools' definitions reach the model another way: their lines are short
    learned: LearnedView | None = None  # what the deployment learned, as this caller reads it


def run_search(
    arguments: dict[str, Any],
    discovery: Discovery,
    is_loaded: Callable[[str], bool],
    limit: int,
    loaded_servers: Sequence[str] = (),
    loaded_note: str = LOADED_NOTE,
    budget: QueryBudget = DEFAULT_BUDGET,
    brief: bool = False,
    learned: LearnedView | None = None,
) -> SearchOutcome:
    """Answer a `search_tools` call. `loaded_note` closes a list of newly found tools: what the caller can now
    do with them (the MCP front's proxy mode calls them through `call_tool`). `budget` bounds its queries."""
    query, queries = arguments.get("query"), arguments.get("queries")
    server = arguments.get("server_name")
    names = arguments.get("tool_names")
    problem = _check_types(query, server, names) or queries_problem(queries)
    if problem:
        return SearchOutcome(f"Error: {problem}", [])
    asked = read_queries(query, queries, budget)
    notes = list(asked.notes)
    server = (server or "").strip()[:MAX_NAME_CHARS] or None
    names = [name.strip() for name in names or [] if name.strip()] or None
    if not asked.run and server is None and names is None:
        if notes:  # every query was over the request's bound
            return SearchOutcome("\n".join(notes), [])
        return SearchOutcome(
            "Error: search_tools needs at least one of 'query' (keywords), 'queries', 'server_name' or 'tool_names'.",
            [],
        )
    found = Found(discovery, is_loaded, loaded_note, brief, learned)
    if len(asked.run) > 1:
        outcome = _several(asked.run, server, names, found, limit, loaded_servers, notes)
    else:
        outcome = _search(asked.run[0] if asked.run else None, server, names, found, limit, loaded_servers, notes)
    text = "\n".join([outcome.text, "", *notes]) if notes else outcome.text
    return SearchOutcome(text, outcome.found, outcome.weak, queries=tuple(asked.run), by_query=outcome.by_query)


def _several(
    queries: list[str],
    server: str | None,
    names: list[str] | None,
    found: Found,
    limit: int,
    loaded_servers: Sequence[str],
    notes: list[str],
) -> SearchOutcome:
    """A call of several queries: each keeps its own top `limit`; `tool_names`, when given too, come first."""
    discovery = found.discovery
    if server is not None and server not in discovery.by_group:
        return _search(None, server, None, found, limit, loaded_servers, notes)
    limit = max(1, min(limit, SEARCH_RESULTS_HARD_CAP))
    named = {query: _names_in_query(query, server, discovery) for query in queries}
    plain = [query for query in queries if named[query] is None]
    skipped: list[list[ToolEntry]] = []
    ranking = rank_queries(discovery, plain, server, limit, found.is_loaded, skipped, found.learned)
    ranked = dict(zip(plain, ranking, strict=True))
    passed = dict(zip(plain, skipped, strict=True))
    already: list[ToolEntry] = []
    hits = [_named_hits(", ".join(names), names, server, found, already, notes)] if names is not None else []
    for query in queries:
        listed = named[query]
        if listed is not None:
            hits.append(_named_hits(query, listed, server, found, already, notes))
        else:
            scored = ranked[query]
            already.extend(passed[query])
            fresh = [each.entry for each in scored]
            hits.append(QueryHits(query, fresh, bool(scored and scored[0].weak), had_loaded=bool(passed[query])))
    groups = list(discovery.by_group)
    text, fresh, weak = compose(hits, already, found.is_loaded, found.loaded_note, groups, found.brief)
    by_query = tuple((query, _names([each.entry for each in ranked[query]], passed[query])) for query in plain)
    return SearchOutcome(text, fresh, weak, queries=tuple(queries), by_query=by_query)


def _named_hits(
    label: str, names: list[str], server: str | None, scope: Found, already: list[ToolEntry], notes: list[str]
) -> QueryHits:
    """Tools asked for by name inside a call of several queries, as one more query's hits."""
    if len(names) > MAX_NAMES:
        notes.append(f"Note: only the first {MAX_NAMES} of {len(names):,} names were looked at.")
        names = names[:MAX_NAMES]
    resolved = _resolve_names(names, server, scope)
    loaded = [entry for entry in resolved.found if scope.is_loaded(entry.name)]
    already.extend(loaded)
    fresh = [entry for entry in resolved.found if not scope.is_loaded(entry.name)]
    return QueryHits(label, fresh, notes=[*resolved.missing, *resolved.loaded], had_loaded=bool(loaded))


def _search(
    query: str | None,
    server: str | None,
    names: list[str] | None,
    found: Found,
    limit: int,
    loaded_servers: Sequence[str],
    notes: list[str],
) -> SearchOutcome:
    discovery = found.discovery
    if server is not None and server not in discovery.by_group:
        if server in loaded_servers:
            return SearchOutcome(f"The tools of server '{server}' are already loaded; call them directly.", [])
        valid = ", ".join(discovery.by_group) or "(none)"
        return SearchOutcome(f"Error: Unknown server '{server}'. Servers you can search: {valid}.", [])
    limit = max(1, min(limit, SEARCH_RESULTS_HARD_CAP))
    if names is None and query is not None:
        names = _names_in_query(query, server, discovery)
    if names is not None:
        if len(names) > MAX_NAMES:
            notes.append(f"Note: only the first {MAX_NAMES} of {len(names):,} names were looked at.")
            names = names[:MAX_NAMES]
        return _by_names(names, server, found)
    if query is not None:
        return _by_query(query, server, found, limit)
    assert server is not None
    return _by_server(server, found)


def _check_types(query: Any, server: Any, names: Any) -> str | None:
    if query is not None and not isinstance(query, str):
        return "'query' must be a string."
    if server is not None and not isinstance(server, str):
        return "'server_name' must be a string."
    if names is not None and not (isinstance(names, list) and all(isinstance(name, str) for name in names)):
        return "'tool_names' must be an array of strings."
    return None


def _names_in_query(query: str, server: str | None, discovery: Discovery) -> list[str] | None:
    """`select:a,b` names tools outright; so does a query that is exactly one tool's name."""
    if query.lower().startswith("select:"):
        return [name.strip() for name in query[len("select:") :].split(",", MAX_NAMES) if name.strip()]
    if " " not in query and len(_resolve_name(query, server, discovery)) == 1:
        return [query]
    return None


@dataclass(frozen=True)
class Named:
    """Tools asked for by name: those found, a note per missing name, and a note per name already loaded."""

    found: list[ToolEntry]
    missing: list[str]
    loaded: list[str]


def _resolve_names(names: list[str], server: str | None, scope: Found) -> Named:
    discovery, is_loaded = scope.discovery, scope.is_loaded
    found: list[ToolEntry] = []
    missing: list[str] = []
    loaded: list[str] = []
    for name in dict.fromkeys(names):
        matches = _resolve_name(name, server, discovery)
        stays = discovery.always_loaded.get(name)
        if not matches and stays is not None and server in (None, stays.server):
            loaded.append(f"'{stays.original_name}' is always loaded, as {stays.name}: call it directly.")
        elif not matches and is_loaded(name):  # one of the tools the model has had from the start
            loaded.append(f"'{shown_name(name)}' is already loaded: call it directly.")
        elif not matches:
            missing.append(name)
        found.extend(match for match in matches if match not in found)
    notes = [
        f"No tool named '{shown_name(name)}'{_scope(server)}."
        + (_closest(name, server, discovery) if position < MAX_SUGGESTED else "")
        for position, name in enumerate(missing)
    ]
    return Named(found, notes, loaded)


def _by_names(names: list[str], server: str | None, scope: Found) -> SearchOutcome:
    named = _resolve_names(names, server, scope)
    is_loaded = scope.is_loaded
    text = describe(named.found, is_loaded, scope.loaded_note, brief=scope.brief) if named.found else ""
    if named.missing:
        text = "\n".join(([text, ""] if text else []) + named.missing)
    if named.loaded:
        text = "\n".join(([text, ""] if text else []) + named.loaded)
    return SearchOutcome(text, [entry for entry in named.found if not is_loaded(entry.name)])


def _resolve_name(name: str, server: str | None, discovery: Discovery) -> list[ToolEntry]:
    exact = discovery.by_name.get(name)
    if exact is not None:
        return [exact] if server is None or exact in discovery.by_group[server] else []
    bare = discovery.by_original_name.get(name, [])
    if server is not None:
        bare = [entry for entry in bare if entry in discovery.by_group[server]]
    return bare


def _closest(name: str, server: str | None, discovery: Discovery) -> str:
    if len(name) > MAX_NAME_CHARS:
        return " Tool names are short identifiers; check the manifest."
    pool = discovery.by_group[server] if server else [e for group in discovery.by_group.values() for e in group]
    exposed = {entry.name: entry.name for entry in pool} | {entry.original_name: entry.name for entry in pool}
    similar = difflib.get_close_matches(name, list(exposed), n=6, cutoff=0.5)
    close = list(dict.fromkeys(exposed[match] for match in similar))[:3]  # a tool's two names are one match
    if not close:
        close = [entry.name for entry in rank_tools(discovery, name, server, 3)]
    return f" Closest matches: {', '.join(close)}." if close else " Try a 'query' with keywords instead."


def _scope(server: str | None) -> str:
    return f" on server '{server}'" if server else ""


def rank_tools(
    discovery: Discovery,
    query: str,
    server: str | None,
    limit: int,
    skip: Callable[[str], bool] = lambda name: False,
    skipped: list[ToolEntry] | None = None,
) -> list[ToolEntry]:
    """The best `limit` tools for `query` (in `server`'s group if given); `skip`ped ones don't take slots."""
    return [found.entry for found in scored_tools(discovery, query, server, limit, skip, skipped)]


def scored_tools(
    discovery: Discovery,
    query: str,
    server: str | None,
    limit: int,
    skip: Callable[[str], bool] = lambda name: False,
    skipped: list[ToolEntry] | None = None,
    learned: LearnedView | None = None,
) -> list[Scored]:
    """`rank_tools` with scores. Words written `+word` are required: tools without them are dropped before
    ranking. Only a letter after the `+` makes a requirement, so phone numbers such as +15551234 in a task
    stay plain words. Hybrid when the query's vector and every tool's vector are ready, keywords otherwise;
    `learned` lifts what the deployment's own successful calls taught it (app/discovery/learned.py)."""
    text, required = _query_words(query)
    allowed = set(map(id, discovery.by_group[server])) if server is not None else None
    found: list[Scored] = []
    for scored in learned_ranking(
        _ranked(discovery, text, required), discovery, text, required, allowed, limit, skip, learned
    ):
        if allowed is not None and id(scored.entry) not in allowed:
            continue
        if skip(scored.entry.name):
            if skipped is not None:
                skipped.append(scored.entry)
            continue
        found.append(scored)
        if len(found) >= limit:
            break
    return found


def rank_queries(
    discovery: Discovery,
    queries: Sequence[str],
    server: str | None,
    limit: int,
    skip: Callable[[str], bool] = lambda name: False,
    skipped: list[list[ToolEntry]] | None = None,
    learned: LearnedView | None = None,
) -> list[list[Scored]]:
    """The tools of a call of several queries: each query's own best `limit`, ranked as that one query alone.
    `skipped` gets, per query, the `skip`ped tools it would have found."""
    ranked: list[list[Scored]] = []
    for query in queries:
        passed: list[ToolEntry] = []
        ranked.append(scored_tools(discovery, query, server, limit, skip, passed, learned))
        if skipped is not None:
            skipped.append(passed)
    return ranked


def ranked_text(query: str) -> str:
    """A query's text as it is ranked (and its vector computed): `+word` marks dropped."""
    return _query_words(query)[0]


def _query_words(query: str) -> tuple[str, list[str]]:
    """The query as ranked (`+word` marks dropped) and its required words."""
    words = query.split()
    required = [word[1:] for word in words if _REQUIRED.match(word)]
    return " ".join(word[1:] if _REQUIRED.match(word) else word for word in words), required


async def prepare_query(discovery: Discovery | None, query: Any, encoding: EncodeBudget | None = None) -> None:
    """Compute a keyword query's vector off the event loop before the (synchronous) search that uses it."""
    if discovery is None or discovery.semantic is None or not isinstance(query, str):
        return
    query = clean_query(query)  # exactly as the search will read it, so the vector is found
    if query and not query.lower().startswith("select:"):
        await discovery.semantic.prepare(_query_words(query)[0], encoding)


async def prepare_search(
    discovery: Discovery | None,
    arguments: Any,
    budget: QueryBudget = DEFAULT_BUDGET,
    encoding: EncodeBudget | None = None,
) -> str | None:
    """The vectors of every query a `search_tools` call will rank, computed off the event loop in one batch before
    the (synchronous) search that uses them, within the request's `encoding` budget. Returns what the result must
    say of queries ranked by keywords alone, or None."""
    if discovery is None or discovery.semantic is None or not isinstance(arguments, dict):
        return None
    query, queries = arguments.get("query"), arguments.get("queries")
    if (query is not None and not isinstance(query, str)) or queries_problem(queries):
        return None
    asked = read_queries(query, queries, budget)
    texts = [_query_words(text)[0] for text in asked.run if not text.lower().startswith("select:")]
    await discovery.semantic.prepare_many(texts, encoding)
    return encoding.note(texts) if encoding is not None else None


def _ranked(discovery: Discovery, text: str, required: Sequence[str]) -> Iterator[Scored]:
    semantic, parts = discovery.semantic, discovery.index.parts
    vectors = semantic.query_vectors(text) if semantic is not None else None
    if semantic is not None and vectors is not None:
        matrices = [semantic.matrix(part) for part in parts]
        if any(matrix is not None for matrix in matrices):
            means = [semantic.means(part) for part in parts]
            enriched = [semantic.enriched(part) for part in parts]
            return hybrid_rank(parts, matrices, means, text, required, vectors, semantic.params, enriched)
    return (Scored(entry, score, score) for entry, score in discovery.index.rank(text, required))


def _by_query(query: str, server: str | None, scope: Found, limit: int) -> SearchOutcome:
    discovery, is_loaded = scope.discovery, scope.is_loaded
    already: list[ToolEntry] = []
    ranked = scored_tools(discovery, query, server, limit, is_loaded, already, scope.learned)
    fresh = [found.entry for found in ranked]
    if not fresh and not already:
        hint = f" Servers: {', '.join(discovery.by_group)}." if discovery.by_group else ""
        return SearchOutcome(
            f"No tools found matching '{shown_name(query)}'{_scope(server)}. Try other keywords, a server_name, or "
            f"tool_names from the manifest.{hint}",
            [],
        )
    text = describe(fresh, is_loaded, scope.loaded_note, brief=scope.brief) if fresh else "No new tools found."
    if ranked and ranked[0].weak:
        text = (
            f"No tool matches the words of '{shown_name(query)}'; these are the closest by meaning (weak matches: "
            f"check that one fits before calling it, or search again with other words).\n\n{text}"
        )
    if already:
        text += f"\nAlready loaded (call directly): {', '.join(entry.name for entry in already)}."
    by_query = ((query, _names(fresh, already)),)
    return SearchOutcome(text, fresh, weak=bool(ranked and ranked[0].weak), by_query=by_query)


def _names(*found: list[ToolEntry]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(entry.name for entries in found for entry in entries))


def _by_server(server: str, scope: Found) -> SearchOutcome:
    discovery, is_loaded = scope.discovery, scope.is_loaded
    entries = discovery.by_group[server]
    shown = entries[:SEARCH_RESULTS_HARD_CAP]
    text = describe(shown, is_loaded, scope.loaded_note, brief=scope.brief)
    rest = entries[SEARCH_RESULTS_HARD_CAP:]
    if rest:
        text += (
            f"\n{len(rest)} more tools on '{server}' were not loaded: {', '.join(e.original_name for e in rest)}. "
            "Load them with tool_names."
        )
    return SearchOutcome(text, [entry for entry in shown if not is_loaded(entry.name)])
