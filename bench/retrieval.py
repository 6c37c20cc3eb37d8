"""Retrieval quality of `search_tools`: hybrid, keywords alone and meaning alone, with plain BM25 as baseline.

Every tool of a data file is indexed as one deferred catalog (server = the tool's server) and every query is run
through the same ranking code `search_tools` uses. recall@k of a query is the share of its relevant groups
(equivalent tool ids) with an id in the top k; complete-recall@5 counts queries with every group in the top 5.
"toolsift" is the search a default install gives (hybrid when the model is installed, as `make install` does);
the first run embeds the tools (timed as build_s), later runs read the vector cache.

    python bench/retrieval.py [--data FILE ...] [--subqueries FILE ...] [--json] [--model DIR] [--no-record]
                              [--out NAME]

Default data: bench/data/tool_retrieval_dev.json (long task queries) and short_queries_dev.json (short queries).
With --json, one object per data file and line (overall, by_part, lexical, semantic, baseline); without --data,
only the long task queries, so the output stays one object. The record (bench/results/retrieval.json) holds the
same objects, one per data file run. Short queries are also reported by style (`by_style`).

Sub-queries (`--subqueries FILE`, repeatable; default bench/data/subqueries_dev.json and
subqueries_toolbench_dev.json: query id -> the short searches a model writes for that task) are measured the way a
model searches: the task's sub-queries as one `search_tools` call of several queries, each keeping its own top k (a
relevant group counts as found when it is in any query's top k), beside the whole task as one query, for the same
tasks; latency is the whole call's, its queries encoded afresh. Under the key `subqueries`: `overall` and `by_part`
(the call), `whole_task` (the same tasks as one query), shaped like the top-level ones.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rank_bm25 import BM25Okapi

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.config import SemanticConfig, parse_config  # noqa: E402
from app.discovery.cache import mcp_groups  # noqa: E402
from app.discovery.enrichment import Enrichments  # noqa: E402
from app.discovery.params import DEFAULT_PARAMS, SearchParams  # noqa: E402
from app.discovery.search import Discovery, rank_queries, rank_tools  # noqa: E402
from app.discovery.semantic import SemanticSearch  # noqa: E402
from app.mcp.client.catalog_build import build_catalog  # noqa: E402
from bench.common import add_record_options, percentile, record, require_data  # noqa: E402

DATA = ROOT / "bench" / "data"
DEFAULT_DATA = (DATA / "tool_retrieval_dev.json", DATA / "short_queries_dev.json")
DEFAULT_SUBQUERIES = (DATA / "subqueries_dev.json", DATA / "subqueries_toolbench_dev.json")
KS = (1, 3, 5, 10)
Ranker = Callable[[str], list[str]]
MultiRanker = Callable[[list[str]], list[list[str]]]  # a call's queries -> each query's ranked tool ids


def load(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(path.read_text())
    return data["tools"], data["queries"]


def toolsift_ranker(
    tools: list[dict[str, Any]],
    semantic: SemanticSearch | None,
    cold: bool = False,
    enrichments: Enrichments | None = None,
    params: SearchParams = DEFAULT_PARAMS,
) -> tuple[Ranker, float]:
    """Index the tools as toolsift would (build time, embedding included) and rank by `search_tools`' code path;
    `cold` encodes every query afresh (no query vector cache); `enrichments` and `params` as `index_tools`."""
    discovery, ids, build_seconds = index_tools(tools, semantic, enrichments, params)

    def rank(query: str) -> list[str]:
        if semantic is not None:
            if cold:
                semantic._queries.clear()
            semantic.prepare_now(query)
        return [ids[(entry.server or "", entry.original_name)] for entry in rank_tools(discovery, query, None, max(KS))]

    return rank, build_seconds


def multi_ranker(
    tools: list[dict[str, Any]],
    semantic: SemanticSearch | None,
    enrichments: Enrichments | None = None,
    params: SearchParams = DEFAULT_PARAMS,
) -> tuple[MultiRanker, float]:
    """One `search_tools` call of several queries, as the gateway runs it: their vectors in one batch (afresh),
    then each query's own ranking."""
    discovery, ids, build_seconds = index_tools(tools, semantic, enrichments, params)

    def rank(queries: list[str]) -> list[list[str]]:
        if semantic is not None:
            semantic._queries.clear()
            semantic.prepare_many_now(queries)
        ranked = rank_queries(discovery, queries, None, max(KS))
        return [[ids[(found.entry.server or "", found.entry.original_name)] for found in each] for each in ranked]

    return rank, build_seconds


def semantic_ranker(tools: list[dict[str, Any]], semantic: SemanticSearch) -> tuple[Ranker, float]:
    """Meaning alone: cosine between the query's vector and every tool's."""
    discovery, ids, build_seconds = index_tools(tools, semantic)
    index = discovery.index.parts[0]
    matrix = semantic.matrix(index)
    assert matrix is not None

    def rank(query: str) -> list[str]:
        semantic.prepare_now(query)
        vector = semantic.query_vector(query)
        assert vector is not None
        top = (matrix @ vector).argsort()[::-1][: max(KS)]
        return [ids[(index.entries[i].server or "", index.entries[i].original_name)] for i in top]

    return rank, build_seconds


def index_tools(
    tools: list[dict[str, Any]],
    semantic: SemanticSearch | None = None,
    enrichments: Enrichments | None = None,
    params: SearchParams = DEFAULT_PARAMS,
) -> tuple[Discovery, dict[tuple[str, str], str], float]:
    """The data's tools as one deferred catalog: its discovery, (server, name) -> tool id, and build seconds; with
    `enrichments`, what a model wrote of the tools is indexed too (bench/enrichment_proxy.py), and the enrichments'
    vectors computed."""
    started = time.perf_counter()
    listings: dict[str, list[Any]] = {}
    ids: dict[tuple[str, str], str] = {}
    descriptions: dict[str, str] = {}
    for tool in tools:
        if tool.get("server_description"):
            descriptions[tool["server"]] = tool["server_description"]
        schema = tool.get("input_schema") or {}
        listings.setdefault(tool["server"], []).append(
            SimpleNamespace(
                name=tool["name"], description=tool.get("description") or "", input_schema=schema, meta=None, title=None
            )
        )
        ids[(tool["server"], tool["name"])] = tool["id"]
    servers: dict[str, dict[str, Any]] = {name: {"command": "unused", "defer_loading": True} for name in listings}
    for name, description in descriptions.items():
        servers[name]["description"] = description  # what an MCP server says of itself (its instructions)
    config = parse_config({"mcpServers": servers}, environ={})
    catalog = build_catalog(config, listings, version=1)
    if semantic is not None:
        semantic.ensure_now(catalog.tools.values())
    groups = mcp_groups(catalog, list(catalog.tools.values()))
    discovery = Discovery.build(groups, semantic=semantic, params=params, enrichments=enrichments)
    if semantic is not None and enrichments is not None:
        semantic.embed_now([found.text for found in discovery.index.parts[0].enriched if found is not None])
    return discovery, ids, time.perf_counter() - started


def baseline_ranker(tools: list[dict[str, Any]]) -> tuple[Ranker, float]:
    """The seed PRD's index: `f"{name} {description}".lower().split()` with rank-bm25, positive scores only."""
    started = time.perf_counter()
    corpus = [f"{tool['name']} {tool.get('description') or ''}".lower().split() for tool in tools]
    index = BM25Okapi(corpus)
    build_seconds = time.perf_counter() - started

    def rank(query: str) -> list[str]:
        scores = index.get_scores(query.lower().split())
        order = sorted(range(len(tools)), key=lambda i: scores[i], reverse=True)
        return [tools[i]["id"] for i in order[: max(KS)] if scores[i] > 0]

    return rank, build_seconds


def groups_of(query: dict[str, Any]) -> list[set[str]]:
    groups = query.get("relevant_groups") or [[tool_id] for tool_id in query["relevant"]]
    return [set(group) for group in groups]


def evaluate(rank: Ranker, queries: Sequence[dict[str, Any]], build_seconds: float) -> dict[str, Any]:
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    reciprocal: list[float] = []
    complete: list[float] = []
    latencies: list[float] = []
    for query in queries:
        started = time.perf_counter()
        ranked = rank(query["text"])
        latencies.append(time.perf_counter() - started)
        groups = groups_of(query)
        for k in KS:
            top = set(ranked[:k])
            recalls[k].append(sum(1 for group in groups if group & top) / len(groups))
        complete.append(float(all(group & set(ranked[:5]) for group in groups)))
        first = next(
            (position for position, tool_id in enumerate(ranked, 1) if any(tool_id in g for g in groups)), None
        )
        reciprocal.append(1 / first if first else 0.0)
    return metrics_of(recalls, reciprocal, complete, latencies, build_seconds)


def metrics_of(
    recalls: dict[int, list[float]],
    reciprocal: list[float],
    complete: list[float],
    latencies: list[float],
    build_seconds: float,
) -> dict[str, Any]:
    """The means of one evaluation's per-query figures, rounded as the results files give them."""
    latencies_ms = sorted(value * 1000 for value in latencies)
    metrics: dict[str, Any] = {f"recall@{k}": round(statistics.fmean(values), 4) for k, values in recalls.items()}
    metrics.update(
        {
            "mrr": round(statistics.fmean(reciprocal), 4),
            "complete_recall@5": round(statistics.fmean(complete), 4),
            "build_s": round(build_seconds, 4),
            "mean_ms": round(statistics.fmean(latencies_ms), 3),
            "p99_ms": round(percentile(latencies_ms, 0.99), 3),
            "queries": len(latencies),
        }
    )
    return metrics


def report(rank: Ranker, build_seconds: float, queries: list[dict[str, Any]]) -> dict[str, Any]:
    parts = sorted({query["part"] for query in queries})
    by_part = {part: evaluate(rank, [q for q in queries if q["part"] == part], build_seconds) for part in parts}
    found: dict[str, Any] = {"by_part": by_part}
    if any("style" in query for query in queries):  # short queries: the English ones apart from Chinese/Spanish
        by_part["english"] = evaluate(rank, [q for q in queries if q.get("style") != "language"], build_seconds)
        styles = sorted({query["style"] for query in queries})
        found["by_style"] = {
            style: evaluate(rank, [q for q in queries if q["style"] == style], build_seconds) for style in styles
        }
    return {"overall": evaluate(rank, queries, build_seconds), **found}


def evaluate_calls(
    rank: MultiRanker, queries: Sequence[dict[str, Any]], subqueries: dict[str, list[str]], build_seconds: float
) -> dict[str, Any]:
    """`evaluate` for one call of several queries per task: a group is in the top k when it is in any query's
    top k; MRR reads the results as the answer lists them (each query's, in order, every tool once)."""
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    reciprocal: list[float] = []
    complete: list[float] = []
    latencies: list[float] = []
    loaded: list[float] = []
    for query in queries:
        started = time.perf_counter()
        ranked = rank(subqueries[query["id"]])
        latencies.append(time.perf_counter() - started)
        groups = groups_of(query)
        tops = {k: {tool_id for each in ranked for tool_id in each[:k]} for k in KS}
        for k in KS:
            recalls[k].append(sum(1 for group in groups if group & tops[k]) / len(groups))
        complete.append(float(all(group & tops[5] for group in groups)))
        listed = list(dict.fromkeys(tool_id for each in ranked for tool_id in each[:5]))
        loaded.append(len(listed))
        first = next((n for n, tool_id in enumerate(listed, 1) if any(tool_id in g for g in groups)), None)
        reciprocal.append(1 / first if first else 0.0)
    metrics = metrics_of(recalls, reciprocal, complete, latencies, build_seconds)
    metrics["queries_per_call"] = round(statistics.fmean(len(subqueries[q["id"]]) for q in queries), 3)
    metrics["tools_per_call@5"] = round(statistics.fmean(loaded), 3)
    return metrics


def subquery_report(
    tools: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    subqueries: dict[str, list[str]],
    semantic: SemanticSearch | None,
) -> dict[str, Any] | None:
    """The tasks that have sub-queries: one call of them beside the whole task as one query (both encoded afresh)."""
    tasks = [query for query in queries if query["id"] in subqueries]
    if not tasks:
        return None
    rank, build_seconds = multi_ranker(tools, semantic)
    parts = sorted({task["part"] for task in tasks})
    by_part = {part: evaluate_calls(rank, [t for t in tasks if t["part"] == part], subqueries, build_seconds)
               for part in parts}  # fmt: skip
    result: dict[str, Any] = {"overall": evaluate_calls(rank, tasks, subqueries, build_seconds), "by_part": by_part}
    result["whole_task"] = report(*toolsift_ranker(tools, semantic, cold=True), tasks)
    return result


def load_subqueries(paths: Sequence[Path]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in paths:
        found.update(json.loads(require_data(path).read_text())["subqueries"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, action="append", help="data file (repeatable; default: both)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per data file instead of tables")
    parser.add_argument("--model", default=SemanticConfig().model, help="embedding model: a directory or a hub id")
    parser.add_argument(
        "--subqueries", type=Path, action="append", help="sub-query file (repeatable; default: both in bench/data)"
    )
    add_record_options(parser, "retrieval")
    args = parser.parse_args()
    # --json alone keeps its one-object shape: the long task queries; name --data for the other file.
    paths = [require_data(path) for path in args.data or (DEFAULT_DATA[:1] if args.json else DEFAULT_DATA)]
    subqueries = load_subqueries(args.subqueries or DEFAULT_SUBQUERIES)
    semantic = SemanticSearch(SemanticConfig(model=args.model), ROOT)
    if not semantic.load():
        print(f"note: semantic search unavailable ({semantic.reason}); toolsift = keywords only", file=sys.stderr)
    ready = semantic if semantic.state == "ready" else None
    files = {path.name: run(path, ready, args.json, subqueries) for path in paths}
    if not args.no_record:
        record(args.out or "retrieval", {"embedding_model": args.model if ready else None, "files": files})


def run(
    path: Path, semantic: SemanticSearch | None, as_json: bool, subqueries: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """The data file's report: toolsift (hybrid when `semantic`), lexical, semantic and the plain BM25 baseline;
    with `subqueries`, its tasks that have some as one call of several queries."""
    tools, queries = load(path)
    result = report(*toolsift_ranker(tools, semantic), queries)
    lexical = report(*toolsift_ranker(tools, None), queries) if semantic is not None else dict(result)
    result["lexical"] = lexical
    if semantic is not None:
        result["semantic"] = report(*semantic_ranker(tools, semantic), queries)
    result["baseline"] = report(*baseline_ranker(tools), queries)
    split = subquery_report(tools, queries, subqueries or {}, semantic)
    if split is not None:
        result["subqueries"] = split
    ratio = result["overall"]["recall@5"] / max(lexical["overall"]["recall@5"], 1e-9)
    base = result["overall"]["recall@5"] / max(result["baseline"]["overall"]["recall@5"], 1e-9)
    recorded = {"tools": len(tools), "queries": len(queries), **result}
    recorded["recall@5_ratio"] = {"to_lexical": ratio, "to_baseline": base}
    if as_json:
        print(json.dumps({"data": path.name, **result}))
        return recorded
    print_tables(path, tools, queries, result)
    print(f"\nrecall@5 toolsift / lexical: {ratio:.3f}x; toolsift / baseline: {base:.2f}x\n")
    return recorded


def print_tables(path: Path, tools: list[Any], queries: list[Any], result: dict[str, Any]) -> None:
    print(f"Tool retrieval on {path.name}: {len(tools):,} tools, {len(queries)} queries\n")
    columns = ["recall@1", "recall@3", "recall@5", "recall@10", "mrr", "complete_recall@5", "mean_ms", "p99_ms"]
    print(f"{'ranker':<10} {'part':<10} {'n':>4} " + " ".join(f"{c:>9}" for c in columns) + f" {'build_s':>8}")
    rankers = [("toolsift", result), ("lexical", result["lexical"])]
    rankers += [("semantic", result["semantic"])] if "semantic" in result else []
    for name, data in [*rankers, ("baseline", result["baseline"])]:
        for part, metrics in [("overall", data["overall"]), *data["by_part"].items()]:
            values = " ".join(f"{metrics[c]:>9.3f}" for c in columns)
            print(f"{name:<10} {part:<10} {metrics['queries']:>4} {values} {metrics['build_s']:>8.3f}")
    if "by_style" in result:
        print(f"\nBy style (recall@1 / recall@5)\n\n{'ranker':<10} " + " ".join(f"{s:>19}" for s in result["by_style"]))
        for name, data in [*rankers, ("baseline", result["baseline"])]:
            cells = [
                f"{m['recall@1']:.3f} / {m['recall@5']:.3f} ({m['queries']:>3})" for m in data["by_style"].values()
            ]
            print(f"{name:<10} " + " ".join(f"{cell:>19}" for cell in cells))
    split = result.get("subqueries")
    if split is not None:
        print("\nSub-queries: one search_tools call of a task's sub-queries (each its own top k) vs the whole task\n")
        print(
            f"{'search':<12} {'part':<10} {'n':>4} " + " ".join(f"{c:>9}" for c in columns[:6]) + "     q/call tools@5"
        )
        whole = split["whole_task"]
        for name, data in (("sub-queries", split), ("whole task", whole)):
            for part, metrics in [("overall", data["overall"]), *data["by_part"].items()]:
                values = " ".join(f"{metrics[c]:>9.3f}" for c in columns[:6])
                extra = f"{metrics.get('queries_per_call', 1):>10.2f} {metrics.get('tools_per_call@5', 5):>8.2f}"
                print(f"{name:<12} {part:<10} {metrics['queries']:>4} {values} {extra}")
        print("\nlatency of the call (queries encoded afresh, in one batch) / of the whole task as one query:")
        for part in ["overall", *split["by_part"]]:
            call = split["overall"] if part == "overall" else split["by_part"][part]
            one = whole["overall"] if part == "overall" else whole["by_part"][part]
            print(f"  {part:<10} mean {call['mean_ms']:.1f} / {one['mean_ms']:.1f} ms, "
                  f"p99 {call['p99_ms']:.1f} / {one['p99_ms']:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
