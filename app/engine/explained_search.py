"""A search explained, as the console and `toolsift search` show it: each result's scores and matched fields, the
text `search_tools` answers the model, and the loaded tools that would have ranked. The queries' vectors are
prepared the way a request's are, in one batch off the event loop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.common.errors import RequestRefused
from app.core.catalog import ToolEntry
from app.discovery.hybrid import Scored
from app.discovery.index import describe_locations, tokenize, tool_fields
from app.discovery.learned import LearnedView
from app.discovery.queries import DEFAULT_MAX_QUERIES, QueryBudget, read_queries
from app.discovery.search import Discovery, prepare_search, run_search, scored_tools
from app.discovery.semantic import SemanticSearch

FIELD_LABELS = {"server_text": "server description"}


async def explained_search(
    discovery: Discovery | None,
    every: Discovery | None,
    queries: Sequence[str],
    server: str | None,
    limit: int,
    max_queries: int = DEFAULT_MAX_QUERIES,
    learned: LearnedView | None = None,
) -> dict[str, Any]:
    """`search_report` for `queries`, their vectors prepared first (RequestRefused for an unknown server)."""
    await prepare_search(discovery or every, {"queries": list(queries)}, QueryBudget(max_queries))
    return search_report(discovery, queries, server, limit, every, max_queries, learned)


def search_mode(semantic: SemanticSearch | None, hybrid: bool) -> str:
    """How a search ranked: `hybrid` when its results carry similarities (every tool's vector was ready), else
    keywords only and why (meaning search off, unavailable, or still waiting for the model or the vectors)."""
    if hybrid:
        return "hybrid (keywords + meaning)"
    if semantic is None:
        return "keywords only (meaning search is off)"
    reason = semantic.status().get("reason") or "tools are still being embedded"
    return f"keywords only ({reason})"


def search_report(
    discovery: Discovery | None,
    queries: str | Sequence[str],
    server: str | None,
    limit: int,
    every: Discovery | None = None,
    max_queries: int = DEFAULT_MAX_QUERIES,
    learned: LearnedView | None = None,
) -> dict[str, Any]:
    """The model's search for `queries` (one, or several in one call), ranked and explained: each result's query,
    its keyword (BM25F) score, its cosine similarity when hybrid, the fused score, its match against the best
    possible keyword score, which of its fields each query word matched, and the uses of kept queries near this
    one that lifted it (`learned`: what the deployment learned, as one caller reads it); plus the text
    `search_tools` answers the model, and (with `every`, all the tools) the loaded tools that would rank among the
    first `limit` had they been deferred: the model has those without a search. The queries' vectors must be
    prepared beforehand (`prepare_search`), as the gateway does before every search."""
    listed = [queries] if isinstance(queries, str) else list(queries)
    run = read_queries(None, listed, QueryBudget(max_queries)).run
    loaded = [found for query in run for found in _loaded_matches(discovery, every, query, server, limit)]
    if discovery is None:
        text = "Nothing is deferred: there is nothing to search."
        return {"mode": "none", "results": [], "weak": False, "text": text, "loaded": loaded}
    if server is not None and server not in discovery.by_group:
        if every is not None and server in every.by_group:  # up, with its tools loaded from the start
            text = (
                f"{server}'s tools are loaded, not deferred: the model has them without a search, so search_tools "
                "does not look among them. How they rank for these words is listed as loaded."
            )
            mode = search_mode(discovery.semantic, _hybrid(discovery.semantic, []))
            return {"mode": mode, "queries": run, "results": [], "weak": False, "text": text, "loaded": loaded}
        servers = ", ".join(discovery.by_group) or "(none)"
        raise RequestRefused(f"Unknown server {server!r}; servers you can search: {servers}.", param="server")
    summaries = {group.label: group.summary for group in discovery.groups}
    results: list[dict[str, Any]] = []
    ranked_all: list[Scored] = []
    for query in run:
        best = discovery.index.best_possible(query)
        ranked = scored_tools(discovery, query, server, limit, learned=learned)
        ranked_all.extend(ranked)
        results.extend(
            {
                "query": query,
                "rank": position,
                "name": found.entry.name,
                "server": found.entry.server,
                "description": found.entry.description,
                "score": round(found.score, 4),
                "lexical": round(found.lexical, 4),
                "semantic": round(found.semantic, 4) if found.semantic is not None else None,
                "match": round(min(found.lexical / best, 1.0), 4) if best else None,
                "weak": found.weak,
                "learned": found.learned,
                "matched": matched_fields(
                    found.entry, query, summaries.get(found.entry.server or "", ""), _enrichment(discovery, found)
                ),
            }
            for position, found in enumerate(ranked, 1)
        )
    arguments: dict[str, Any] = {"queries": listed, "server_name": server}
    outcome = run_search(arguments, discovery, lambda _: False, limit, budget=QueryBudget(max_queries), learned=learned)
    return {
        "mode": search_mode(discovery.semantic, _hybrid(discovery.semantic, ranked_all)),
        "queries": run,
        "results": results,
        "weak": bool(results) and all(result["weak"] for result in results),
        "text": outcome.text,
        "loaded": loaded,
    }


def _enrichment(discovery: Discovery, found: Scored) -> str:
    """What the configured model wrote of a found tool, as its index read it ("" for none)."""
    return next((text for part in discovery.index.parts if (text := part.enrichment_of(found.entry))), "")


def _loaded_matches(
    discovery: Discovery | None, every: Discovery | None, query: str, server: str | None, limit: int
) -> list[dict[str, Any]]:
    if every is None or (server is not None and server not in every.by_group):
        return []
    deferred = discovery.by_name if discovery is not None else {}
    return [
        {"query": query, "rank": position, "name": found.entry.name, "server": found.entry.server, "weak": found.weak}
        for position, found in enumerate(scored_tools(every, query, server, limit), 1)
        if found.entry.name not in deferred
    ]


def _hybrid(semantic: SemanticSearch | None, ranked: list[Scored]) -> bool:
    if ranked:
        return any(found.semantic is not None for found in ranked)
    return semantic is not None and semantic.status()["mode"] == "hybrid"


def matched_fields(entry: ToolEntry, query: str, server_text: str = "", enrichment: str = "") -> dict[str, list[str]]:
    """Which words of `query` matched which of a tool's fields, as the index reads both: explains a score."""
    words = list(dict.fromkeys(query.replace("+", " ").split()))
    terms = {word: set(tokenize(describe_locations(word))) for word in words}
    found: dict[str, list[str]] = {}
    for name, tokens in tool_fields(entry, server_text, enrichment=enrichment).items():
        if name == "description" and not entry.description.strip():
            continue  # its parameters stand in for it: they are reported as parameters
        present = set(tokens)
        hits = [word for word in words if terms[word] & present]
        if hits:
            found[FIELD_LABELS.get(name, name)] = hits
    return found
