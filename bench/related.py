"""What `tool_discovery.load_related` buys and costs, on the tool-retrieval data's multi-tool tasks.

A stated model of a conversation: the model searches once with the task's text and the search loads its top k
(`max_search_results`, 5) plus up to N related tools per found tool (app/discovery/related.py: same server, same
`_meta` tag or same object noun; the data has no per-tool tags, its `category` is the server's, so only nouns
relate tools here). Every needed tool (gold group) still missing after that search costs one more search round;
a gold tool that came along as a related tool saves that round. Related tools that are not gold were loaded for
nothing. Their definitions are carried on every later round: one per needed tool plus the answer. Token counts
are o200k_base counts of the real definitions (app/common/tokens.py); a search round costs the `search_tools`
definition plus about 60 tokens of call and result, as in bench/prefetch.py. Keyword ranking (on long task texts
it ranks as the hybrid does, see bench/results/retrieval.txt).

    python bench/related.py [--data FILE] [--k 5] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from retrieval import groups_of, index_tools, load  # noqa: E402

from app.common import tokens  # noqa: E402
from app.discovery.related import related_tools  # noqa: E402
from app.discovery.search import scored_tools  # noqa: E402
from bench.common import DATA, add_record_options, record, require_data  # noqa: E402

DEFAULT_DATA = DATA / "tool_retrieval_dev.json"
COUNTS = (0, 1, 2, 3)


@dataclass
class Totals:
    tasks: int = 0
    complete: int = 0  # every gold group loaded by the one search
    saved: list[int] = field(default_factory=list)  # further searches made unnecessary, per task
    missing: list[int] = field(default_factory=list)  # further searches still needed, per task
    added: list[int] = field(default_factory=list)  # related tools loaded, per task
    wasted: list[int] = field(default_factory=list)  # related tools loaded that are not gold, per task
    tokens: list[int] = field(default_factory=list)  # tokens of the related definitions, per task
    carried: list[int] = field(default_factory=list)  # related definitions times the rounds carrying them
    net: list[float] = field(default_factory=list)  # tokens saved minus carried, per task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--k", type=int, default=5, help="tools a search loads (max_search_results)")
    add_record_options(parser, "related")
    args = parser.parse_args()
    tools, queries = load(require_data(args.data))
    multi = [query for query in queries if len(groups_of(query)) > 1]
    discovery, ids, _ = index_tools(tools)
    candidates = list(discovery.by_name.values())
    search_round = tokens.count_tools([discovery.definition]) + 60
    results: dict[tuple[str, int], Totals] = {}
    for query in multi:
        groups = groups_of(query)
        found = [scored.entry for scored in scored_tools(discovery, query["text"], None, args.k)]
        found_ids = {ids[(entry.server or "", entry.original_name)] for entry in found}
        missed = [group for group in groups if not group & found_ids]
        for count in COUNTS:
            related = related_tools(found, candidates, count)
            related_ids = [ids[(entry.server or "", entry.original_name)] for entry in related]
            saved = sum(1 for group in missed if group & set(related_ids))
            cost = tokens.count_tools([entry.definition for entry in related])
            for part in ("all", query["part"]):
                totals = results.setdefault((part, count), Totals())
                totals.tasks += 1
                totals.complete += len(missed) == saved
                totals.saved.append(saved)
                totals.missing.append(len(missed) - saved)
                totals.added.append(len(related))
                totals.wasted.append(sum(1 for tool_id in related_ids if not any(tool_id in g for g in groups)))
                totals.tokens.append(cost)
                carried = cost * (len(groups) + 1 - saved)
                totals.carried.append(carried)
                totals.net.append(saved * search_round - carried)
    print(
        f"load_related on {args.data.name}: {len(multi)} of {len(queries)} tasks need several tools; a search loads "
        f"the top {args.k}; a search round costs about {search_round:,} tokens\n"
    )
    header = (
        f"{'part':<10} {'N':>2} {'tasks':>5} {'complete':>8} {'rounds saved':>12} {'searches left':>13} "
        f"{'related':>7} {'not called':>10} {'precision':>9} {'tokens added':>12} {'net tokens':>10} {'break-even':>10}"
    )
    print(header)
    recorded: dict[str, Any] = {
        "data": args.data.name, "tasks": len(queries), "multi_tool_tasks": len(multi), "k": args.k,
        "search_round_tokens": search_round, "rows": [],
    }  # fmt: skip
    for (part, count), totals in sorted(results.items(), key=lambda item: (item[0][0] != "all", item[0])):
        row = _row(part, count, totals)
        recorded["rows"].append(row)
        precision = f"{row['precision_pct'] / 100:>9.0%}" if row["precision_pct"] is not None else f"{'-':>9}"
        print(
            f"{part:<10} {count:>2} {totals.tasks:>5} {totals.complete / totals.tasks:>8.1%} "
            f"{row['rounds_saved']:>12.3f} {row['searches_left']:>13.3f} "
            f"{row['related']:>7.2f} {row['not_called']:>10.2f} {precision} "
            f"{row['tokens_added']:>12,.0f} {row['net_tokens']:>+10,.0f} {_break_even(totals)}"
        )
    print(
        "\ncomplete: tasks whose every needed tool was loaded by the one search; rounds saved / searches left: per "
        "task;\nrelated / not called: related tools loaded per task, and those of them no gold tool; precision: "
        "their gold share;\ntokens added: their definitions per task (carried on every later round); net tokens: "
        "per task, search rounds saved minus definitions carried;\nbreak-even: the cost of a search round (its "
        "whole prompt) above which N pays for itself in tokens"
    )
    if not args.no_record:
        record(args.out or "related", recorded)


def _row(part: str, count: int, totals: Totals) -> dict[str, Any]:
    """One printed row as numbers; break-even is null without related tools and "never" when none saved a round."""
    added, saved = sum(totals.added), sum(totals.saved)
    break_even: float | str | None = sum(totals.carried) / saved if saved else "never"
    return {
        "part": part,
        "n": count,
        "tasks": totals.tasks,
        "complete_pct": 100 * totals.complete / totals.tasks,
        "rounds_saved": statistics.fmean(totals.saved),
        "searches_left": statistics.fmean(totals.missing),
        "related": statistics.fmean(totals.added),
        "not_called": statistics.fmean(totals.wasted),
        "precision_pct": 100 * (1 - sum(totals.wasted) / added) if added else None,
        "tokens_added": statistics.fmean(totals.tokens),
        "net_tokens": statistics.fmean(totals.net),
        "break_even_tokens": break_even if added else None,
    }


def _break_even(totals: Totals) -> str:
    saved = sum(totals.saved)
    if not sum(totals.added):
        return f"{'-':>10}"
    if not saved:
        return f"{'never':>10}"
    return f"{sum(totals.carried) / saved:>10,.0f}"


if __name__ == "__main__":
    main()
