"""Search latency, index build time and memory at 100, 1,000 and 10,000 tools; keyword and hybrid search.

Catalogs are grown from the tool-retrieval data: its 3,006 real tools, repeated under new server names
(`srv2-...`) to reach 10,000, so word statistics stay realistic (repeated tools share their text, so the
embedding cache serves the copies). Keyword queries are the data's user tasks; hybrid queries are the short,
model-style queries, each encoded afresh (no query cache); a call of several queries takes them four at a time,
encoded afresh in one batch and each ranked on its own, as `search_tools` answers `queries`. Embedding is timed
cold (empty cache) and warm (a restart: model load plus cache read). Both data files ship in bench/data.

    python bench/search_scale.py [--data PATH] [--no-semantic] [--sizes 100,1000,10000] [--baseline DIR]
                                 [--no-record] [--out NAME]

`--baseline DIR` also runs this bench, on the same data, with another checkout's code in the same run, and
records both as targets, so `bench/repeat.py search_scale --baseline DIR` can take the median of several runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if os.environ.get("TOOLSIFT_BENCH_CODE"):  # --baseline: the other checkout's app, this checkout's bench and data
    sys.path.insert(0, os.environ["TOOLSIFT_BENCH_CODE"])

from app.config import SemanticConfig, parse_config  # noqa: E402
from app.discovery.search import Discovery, rank_tools  # noqa: E402
from app.discovery.semantic import SemanticSearch  # noqa: E402

try:
    from app.discovery.cache import mcp_groups
    from app.mcp.client.catalog_build import build_catalog
except ImportError:  # a baseline checkout from before these moved (`--baseline` runs this script on its code)
    from app.core.catalog import build_catalog  # type: ignore[attr-defined,no-redef]
    from app.engine.request_tools import mcp_groups  # type: ignore[attr-defined,no-redef]
try:
    from app.discovery.search import rank_queries
except ImportError:  # a baseline from before several queries per call: only the one-query rows are measured
    rank_queries = None  # type: ignore[assignment]
from bench.common import RESULTS_ENV, add_record_options, percentile, record, require_data  # noqa: E402

DEFAULT_DATA = ROOT / "bench" / "data" / "tool_retrieval_dev.json"
SHORT_QUERIES = ROOT / "bench" / "data" / "short_queries_dev.json"
SIZES = (100, 1_000, 10_000)
PER_CALL = 4  # queries of one search_tools call in the several-queries row


def grown_catalog(tools: list[dict[str, Any]], size: int) -> dict[str, list[Any]]:
    listings: dict[str, list[Any]] = {}
    for index in range(size):
        tool = tools[index % len(tools)]
        copy = index // len(tools)
        server = tool["server"] if copy == 0 else f"srv{copy + 1}-{tool['server']}"
        listings.setdefault(server, []).append(
            SimpleNamespace(
                name=tool["name"],
                description=tool.get("description") or "",
                input_schema=tool.get("input_schema") or {},
                meta=None,
                title=None,
            )
        )
    return listings


def build(config: Any, listings: dict[str, list[Any]], semantic: SemanticSearch | None = None) -> Discovery:
    catalog = build_catalog(config, listings, version=1)
    if semantic is not None:
        semantic.ensure_now(catalog.tools.values())
    return Discovery.build(mcp_groups(catalog, list(catalog.tools.values())), semantic=semantic)


def hybrid(tools: list[dict[str, Any]], queries: list[str], sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    """Embedding cold and warm, hybrid latency with short queries, and memory for the model and the vectors."""
    result: dict[str, Any] = {"queries": len(queries), "rows": []}
    print(f"\nHybrid search ({len(queries)} short queries, each encoded afresh; all-MiniLM-L6-v2, numpy)\n")
    header = f"{'tools':>7} {'embed cold s':>12} {'embedded':>9} {'warm s':>7} {'p50 ms':>7} {'p99 ms':>7} {'MB':>6}"
    print(header + f" {f'{PER_CALL}q p50':>8} {f'{PER_CALL}q p99':>8} {'x p99':>6}")
    for size in sizes:
        listings = grown_catalog(tools, size)
        config = parse_config({"mcpServers": {name: {"command": "unused"} for name in listings}}, environ={})
        with tempfile.TemporaryDirectory() as cache:
            settings = SemanticConfig(cache_dir=cache)
            catalog = build_catalog(config, listings, version=1)
            gc.collect()
            cold = SemanticSearch(settings, ROOT)
            started = time.perf_counter()
            if not cold.load():
                print(f"semantic search unavailable: {cold.reason}")
                return {**result, "unavailable": cold.reason}
            cold.ensure_now(catalog.tools.values())
            cold_seconds = time.perf_counter() - started
            discovery = build(config, listings, cold)
            gc.collect()
            tracemalloc.start()  # a restart, traced (tracing slows numpy, so the cold run above is not traced)
            warm = SemanticSearch(settings, ROOT)
            started = time.perf_counter()
            warm.ensure_now(catalog.tools.values())  # model load and cache read, nothing embedded
            warm_seconds = time.perf_counter() - started
            warm_discovery = build(config, listings, warm)
            assert warm.encoder_calls == 0 and warm.matrix(warm_discovery.index.parts[0]) is not None
            memory = tracemalloc.get_traced_memory()[0] / 1e6
            tracemalloc.stop()
            del warm, warm_discovery
        latencies, calls = single_and_several(cold, discovery, queries)
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        several50, several99 = (percentile(calls, 0.5), percentile(calls, 0.99)) if calls else (0.0, 0.0)
        row = f"{size:>7,} {cold_seconds:>12.1f} {cold.encoder_calls:>9,} {warm_seconds:>7.2f} {p50:>7.2f} {p99:>7.2f}"
        print(f"{row} {memory:>6.0f} {several50:>8.2f} {several99:>8.2f} {several99 / p99:>6.2f}")
        result["rows"].append(
            {"tools": size, "embed_cold_s": cold_seconds, "embedded": cold.encoder_calls, "warm_s": warm_seconds,
             "p50_ms": p50, "p99_ms": p99, "memory_mb": memory, "queries_per_call": PER_CALL,
             "call_p50_ms": several50, "call_p99_ms": several99}
        )  # fmt: skip
    print("\nembed cold: model load + embedding every distinct tool text; warm: a restart (model load, cache read);")
    print("MB: after a restart, the model, the cached vectors and the index's matrix (tracemalloc; keyword index")
    print(f"included); latency includes encoding the query. {PER_CALL}q: one call of {PER_CALL} queries, encoded in")
    print("one batch, each ranked on its own; x p99: its p99 over a one-query search's.")
    return result


def single_and_several(
    semantic: SemanticSearch, discovery: Discovery, queries: list[str]
) -> tuple[list[float], list[float]]:
    """Milliseconds of each query searched alone, and of each call of PER_CALL of them, every query encoded afresh.
    A call's queries are timed alone right before it, so both see the machine in the same state."""
    alone: list[float] = []
    calls: list[float] = []
    for start in range(0, len(queries), PER_CALL):
        call = queries[start : start + PER_CALL]
        for query in call:
            begun = time.perf_counter()
            semantic.prepare_now(query)
            rank_tools(discovery, query, None, 5)
            alone.append((time.perf_counter() - begun) * 1000)
            semantic._queries.clear()
        if len(call) == PER_CALL and rank_queries is not None:
            begun = time.perf_counter()
            semantic.prepare_many_now(call)
            rank_queries(discovery, call, None, 5)
            calls.append((time.perf_counter() - begun) * 1000)
            semantic._queries.clear()
    return alone, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--no-semantic", action="store_true", help="keyword search only")
    parser.add_argument("--baseline", type=Path, help="also run this bench on another checkout's code, same run")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="catalog sizes, e.g. 10000")
    add_record_options(parser, "search_scale")
    args = parser.parse_args()
    sizes = tuple(int(size) for size in args.sizes.split(","))
    data = json.loads(require_data(args.data).read_text())
    short = None if args.no_semantic else require_data(SHORT_QUERIES)
    tools, queries = data["tools"], [query["text"] for query in data["queries"]]
    results: dict[str, Any] = {"data": args.data.name, "queries": len(queries), "k": 5, "keyword": []}
    # Threads the BLAS may use (one makes latency steadier when the machine is shared): part of the record.
    threads = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    results["threads"] = {name: os.environ[name] for name in threads if name in os.environ}
    print(f"Search at scale ({args.data.name}; {len(queries)} queries per size, k=5)\n")
    print(f"{'tools':>7} {'build s':>8} {'memory MB':>10} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for size in sizes:
        listings = grown_catalog(tools, size)
        servers = {name: {"command": "unused", "defer_loading": True} for name in listings}
        config = parse_config({"mcpServers": servers}, environ={})
        gc.collect()
        started = time.perf_counter()
        discovery = build(config, listings)
        build_seconds = time.perf_counter() - started
        tracemalloc.start()  # a second build, traced: tracing slows the build, so it is not timed
        traced = build(config, listings)
        memory = tracemalloc.get_traced_memory()[0] / 1e6
        tracemalloc.stop()
        del traced
        latencies = []
        for query in queries:
            begun = time.perf_counter()
            rank_tools(discovery, query, None, 5)
            latencies.append((time.perf_counter() - begun) * 1000)
        p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
        mean = statistics.fmean(latencies)
        print(f"{size:>7,} {build_seconds:>8.2f} {memory:>10.1f} {p50:>8.2f} {p99:>8.2f} {mean:>8.2f}")
        results["keyword"].append(
            {"tools": size, "build_s": build_seconds, "memory_mb": memory, "p50_ms": p50, "p99_ms": p99,
             "mean_ms": mean}
        )  # fmt: skip
    print("\nbuild includes the catalog, the index and the manifest; memory is what they hold (tracemalloc).")
    if short is not None:
        short_queries = [query["text"] for query in json.loads(short.read_text())["queries"]]
        results["hybrid"] = hybrid(tools, short_queries, sizes)
        results["hybrid"]["data"] = short.name
    if args.baseline:
        results["targets"] = {"toolsift": headline(results), "baseline": headline(baseline(args))}
        ours, base = results["targets"]["toolsift"], results["targets"]["baseline"]
        print(f"\nat {max(sizes):,} tools, this checkout / baseline:")
        for name in ours:
            if base.get(name):
                print(f"  {name:<16} {ours[name]:>8.2f} {base[name]:>8.2f}  {ours[name] / base[name]:.3f}")
    if not args.no_record:
        record(args.out or "search_scale", results)


def headline(results: dict[str, Any]) -> dict[str, float]:
    """The figures a regression is judged on: latency at the largest size, keyword and hybrid."""
    figures: dict[str, float] = {}
    for kind in ("keyword", "hybrid"):
        rows = results.get(kind)
        rows = rows.get("rows") if isinstance(rows, dict) else rows
        if rows:
            largest = max(rows, key=lambda row: row["tools"])
            figures[f"{kind}_p50_ms"], figures[f"{kind}_p99_ms"] = largest["p50_ms"], largest["p99_ms"]
            if "call_p99_ms" in largest:
                figures[f"{kind}_call_p99_ms"] = largest["call_p99_ms"]
    return figures


def baseline(args: argparse.Namespace) -> dict[str, Any]:
    """This bench, same options and data, on another checkout's code (its `app` first on the path)."""
    checkout = args.baseline.resolve()
    command = [sys.executable, str(Path(__file__).resolve()), "--data", str(args.data.resolve()), "--out", "baseline"]
    command += ["--sizes", args.sizes] + (["--no-semantic"] if args.no_semantic else [])
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, RESULTS_ENV: directory, "TOOLSIFT_BENCH_CODE": str(checkout)}
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        results: dict[str, Any] = json.loads((Path(directory) / "baseline.json").read_text())["results"]
    return results


if __name__ == "__main__":
    main()
