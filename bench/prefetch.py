"""What prefetch saves: rounds and tokens, on the tool-retrieval data's user tasks.

A simple, stated model of a conversation: without prefetch the model spends one round on `search_tools`, then
calls the tools and answers (3 rounds). With prefetch, when every tool a task needs was prefetched, the search
round is skipped (2 rounds); otherwise it still searches, and the prefetched definitions were carried for
nothing. Token costs are o200k_base counts of the real definitions and manifest (see app/common/tokens.py).

    python bench/prefetch.py [--data FILE] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from retrieval import DEFAULT_DATA, groups_of, index_tools, load  # noqa: E402

from app.common import tokens  # noqa: E402
from app.discovery.search import scored_tools  # noqa: E402
from bench.common import add_record_options, record, require_data  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA[0])
    add_record_options(parser, "prefetch")
    args = parser.parse_args()
    tools, queries = load(require_data(args.data))
    discovery, ids, _ = index_tools(tools)
    search_round = tokens.count_tools([discovery.definition]) + 60  # search_tools + the model's call and result
    results: dict[str, Any] = {"data": args.data.name, "tasks": len(queries), "search_round_tokens": search_round}
    results["rows"] = []
    print(f"Prefetch on {args.data.name}: {len(queries)} tasks; a search round costs about {search_round:,} tokens\n")
    header = f"{'N':>2} {'min match':>9} {'fires':>6} {'round saved':>11} {'precision':>9}"
    print(f"{header} {'tokens added':>12} {'net tokens':>10}")
    for count in (1, 3, 5):
        for min_match in (0.2, 0.3, 0.4):
            fired = saved = 0
            kept: list[bool] = []
            net: list[float] = []
            added: list[int] = []
            for query in queries:
                best = discovery.index.best_possible(query["text"])
                ranked = scored_tools(discovery, query["text"], None, count)
                chosen = [found.entry for found in ranked if best and found.lexical / best >= min_match]
                groups = groups_of(query)
                chosen_ids = {ids[(entry.server or "", entry.original_name)] for entry in chosen}
                cost = tokens.count_tools([entry.definition for entry in chosen]) if chosen else 0
                all_found = bool(chosen) and all(group & chosen_ids for group in groups)
                fired += bool(chosen)
                saved += all_found
                kept.extend(any(i in g for g in groups) for i in chosen_ids)
                added.append(cost)
                # carried on 2 rounds when the search is skipped, on 3 when it still happens
                net.append((search_round if all_found else 0) - cost * (2 if all_found else 3))
            precision = statistics.fmean(kept) if kept else 0.0
            print(
                f"{count:>2} {min_match:>9.1f} {fired / len(queries):>6.0%} {saved / len(queries):>11.1%} "
                f"{precision:>9.0%} {statistics.fmean(added):>12,.0f} {statistics.fmean(net):>+10,.0f}"
            )
            results["rows"].append(
                {"n": count, "min_match": min_match, "fires_pct": 100 * fired / len(queries),
                 "round_saved_pct": 100 * saved / len(queries), "precision_pct": 100 * precision,
                 "tokens_added": statistics.fmean(added), "net_tokens": statistics.fmean(net)}
            )  # fmt: skip
    print("\nnet tokens: per task, tokens of the skipped search round minus prefetched definitions carried")
    if not args.no_record:
        record(args.out or "prefetch", results)


if __name__ == "__main__":
    main()
