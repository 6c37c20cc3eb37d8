"""What enrichment does to retrieval, measured with hand-written enrichment standing in for the model's.

`toolsift enrich` asks the configured model, per deferred tool, for a one-line purpose and a few search phrasings,
indexed as a field of their own (keywords) and a second vector (meaning). This bench indexes the 527 real-MCP
(`livemcp`) tools of bench/data/tool_retrieval_dev.json with and without bench/data/enrichment_dev.json (written
from each tool's own text alone, before any run) and reports recall@1 and recall@5 on the 47 livemcp tasks: each
task as one query (whole task), and as one `search_tools` call of its sub-queries, one per capability
(bench/data/subqueries_dev.json, measured as bench/retrieval.py measures them). Hybrid is the search a default
install gives; keywords alone shows the field's own share. The field weights in app/discovery/params.py were chosen
with it (docs/discovery.md, "Enrichment").

    python bench/enrichment_proxy.py [--data FILE] [--enrichment FILE] [--subqueries FILE] [--model DIR]
                                     [--json] [--record | --no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.config import SemanticConfig  # noqa: E402
from app.core.catalog import ToolEntry  # noqa: E402
from app.discovery.enrichment_answer import Enrichment, check  # noqa: E402
from app.discovery.params import DEFAULT_PARAMS, SearchParams  # noqa: E402
from app.discovery.semantic import SemanticSearch  # noqa: E402
from bench.common import DATA, add_record_options, record, require_data  # noqa: E402
from bench.retrieval import evaluate, evaluate_calls, load, load_subqueries, multi_ranker, toolsift_ranker  # noqa: E402

PART = "livemcp"
DEFAULT_DATA = DATA / "tool_retrieval_dev.json"
DEFAULT_ENRICHMENT = DATA / "enrichment_dev.json"
DEFAULT_SUBQUERIES = DATA / "subqueries_dev.json"
COLUMNS = ("recall@1", "recall@5")


class DataEnrichments:
    """Enrichment by tool, as a data file holds it ({tool id: {purpose, phrasings}}), checked as a model's is."""

    def __init__(self, tools: list[dict[str, Any]], written: dict[str, Any]) -> None:
        self.found: dict[tuple[str, str], Enrichment] = {}
        for tool in tools:
            checked = check(written.get(tool["id"]))
            if isinstance(checked, Enrichment):
                self.found[(tool["server"], tool["name"])] = checked

    def find(self, entry: ToolEntry) -> Enrichment | None:
        return self.found.get((entry.server or "", entry.original_name))


def report(
    semantic: SemanticSearch | None,
    data: Path = DEFAULT_DATA,
    enrichment: Path = DEFAULT_ENRICHMENT,
    subqueries: Path = DEFAULT_SUBQUERIES,
    params: SearchParams = DEFAULT_PARAMS,
) -> dict[str, Any]:
    """Recall on the livemcp tasks without and with the enrichment, hybrid (with `semantic`, a loaded search model
    whose params' `enrichment_meaning` is used) and keywords alone: `{search: {"without"|"with": {"whole_task",
    "per_capability"}}}`, each one bench/retrieval.py's metrics. `params` are the index's (its field weights)."""
    tools, queries = load(require_data(data))
    tools = [tool for tool in tools if tool["part"] == PART]
    tasks = [query for query in queries if query["part"] == PART]
    split = load_subqueries([subqueries])
    tasks_split = [task for task in tasks if task["id"] in split]
    written = DataEnrichments(tools, json.loads(require_data(enrichment).read_text())["tools"])
    searches: dict[str, SemanticSearch | None] = {"keywords": None}
    if semantic is not None:
        searches = {"hybrid": semantic, **searches}
    result: dict[str, Any] = {"tools": len(tools), "tasks": len(tasks), "enriched": len(written.found)}
    for name, search in searches.items():
        result[name] = {}
        for label, found in (("without", None), ("with", written)):
            whole = evaluate(toolsift_ranker(tools, search, True, found, params)[0], tasks, 0.0)
            calls = evaluate_calls(multi_ranker(tools, search, found, params)[0], tasks_split, split, 0.0)
            result[name][label] = {"whole_task": _kept(whole), "per_capability": _kept(calls)}
    return result


def _kept(metrics: dict[str, Any]) -> dict[str, Any]:
    """The figures this bench compares (latency is bench/retrieval.py's to measure)."""
    names = (*COLUMNS, "recall@3", "recall@10", "mrr", "complete_recall@5", "queries", "tools_per_call@5")
    return {name: metrics[name] for name in names if name in metrics}


def lines(result: dict[str, Any]) -> list[str]:
    """The report as a table: one row per search and enrichment, recall of whole tasks and per capability."""
    out = [
        f"Enrichment on {result['tools']} livemcp tools ({result['enriched']} enriched), {result['tasks']} tasks",
        "",
        f"{'search':<9} {'enrichment':<10} {'whole r@1':>9} {'whole r@5':>9} {'cap. r@1':>9} {'cap. r@5':>9}",
    ]
    for search in ("hybrid", "keywords"):
        for label in ("without", "with"):
            if search not in result:
                continue
            whole, calls = result[search][label]["whole_task"], result[search][label]["per_capability"]
            cells = [whole[c] for c in COLUMNS] + [calls[c] for c in COLUMNS]
            out.append(f"{search:<9} {label:<10} " + " ".join(f"{cell:>9.3f}" for cell in cells))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="tool retrieval data (its livemcp part)")
    parser.add_argument("--enrichment", type=Path, default=DEFAULT_ENRICHMENT, help="enrichment by tool id")
    parser.add_argument("--subqueries", type=Path, default=DEFAULT_SUBQUERIES, help="sub-queries by task id")
    parser.add_argument("--model", default=SemanticConfig().model, help="embedding model: a directory or a hub id")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_record_options(parser, "enrichment_proxy")
    args = parser.parse_args()
    semantic = SemanticSearch(SemanticConfig(model=args.model), ROOT)
    if not semantic.load():
        print(f"note: semantic search unavailable ({semantic.reason}); keywords only", file=sys.stderr)
    result = report(semantic if semantic.state == "ready" else None, args.data, args.enrichment, args.subqueries)
    text = lines(result)
    print(json.dumps(result) if args.json else "\n".join(text))
    if not args.no_record:
        saved = record(args.out or "enrichment_proxy", {"embedding_model": args.model, **result})
        saved.with_suffix(".txt").write_text("\n".join(text) + "\n")


def with_meaning(semantic: SemanticSearch, weight: float) -> SemanticSearch:
    """`semantic` ranking with `weight` of an enriched tool's similarity taken from its enrichment (for tuning)."""
    semantic.params = replace(semantic.params, enrichment_meaning=weight)
    return semantic


if __name__ == "__main__":
    main()
