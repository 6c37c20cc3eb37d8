"""The inspection reports (app/fronts/inspection.py) as plain-text tables: one rendering whether a report came from a
running gateway's admin API or was computed locally. Standard library only, so a command answered by the gateway
starts fast."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> Iterator[str]:
    cells = [[str(value) for value in row] for row in rows]
    widths = [max([len(title), *(len(row[i]) for row in cells)]) for i, title in enumerate(header)]
    yield "  ".join(title.ljust(width) for title, width in zip(header, widths, strict=True)).rstrip()
    for row in cells:
        yield "  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip()


def short(text: str, limit: int = 70) -> str:
    line = text.strip().split("\n")[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def tools(rows: list[dict[str, Any]]) -> int:
    lines = [(row["name"], row["server"], row["status"], short(row["description"], 60)) for row in rows]
    for line in table(lines, ["tool", "server", "status", "description"]):
        print(line)
    return 0


def manifest(report: dict[str, Any]) -> int:
    if not report["deferred"]:
        print("Nothing is deferred: every tool is sent as is, without search_tools.")
        return 0
    print(report["description"])
    kind = "o200k_base tokens" if report["exact_tokens"] else "estimated tokens"
    print(f"\nsearch_tools definition: {report['tokens']:,} {kind}", file=sys.stderr)
    return 0


def search(report: dict[str, Any], queries: Sequence[str], explain: bool) -> int:
    """The ranked tools; for several queries, a column says which query found each (ranks are per query)."""
    print(f"search: {report['mode']}", file=sys.stderr)
    results = report["results"]
    loaded = report.get("loaded") or []
    several = len(report.get("queries") or queries) > 1
    asked = ", ".join(repr(query) for query in queries)
    if loaded:
        names = ", ".join(f"{found['name']} (#{found['rank']}{', weak' if found['weak'] else ''})" for found in loaded)
        print(f"Loaded from the start, so the model has them without a search; among all tools they rank: {names}")
    if not results:
        print(f"No deferred tools found matching {asked}." if loaded else f"No tools found matching {asked}.")
        return 0 if loaded else 1
    if report["weak"]:
        print("No tool matches these words; the closest by meaning (weak matches):")
    columns = ["#", "score", "keywords", "meaning", "match", "tool", "description"]
    rows: list[tuple[Any, ...]] = [
        (
            found["rank"],
            f"{found['score']:.2f}",
            f"{found['lexical']:.2f}",
            f"{found['semantic']:.2f}" if found["semantic"] is not None else "-",
            f"{found['match']:.0%}" if found["match"] is not None else "-",
            found["name"],
            short(found["description"]),
        )
        for found in results
    ]
    if several:
        columns.insert(1, "query")
        rows = [(row[0], short(found["query"], 30), *row[1:]) for row, found in zip(rows, results, strict=True)]
    first = 2 if several else 1  # the columns before score
    if not explain:
        kept = [(*row[: first + 1], *row[first + 3 :]) for row in rows]  # without the keyword and meaning scores
        for line in table(kept, [*columns[: first + 1], *columns[first + 3 :]]):
            print(line)
        return 0
    lines = table(rows, columns)
    print(next(lines))
    for line, found in zip(lines, results, strict=True):
        print(line)
        matched = "; ".join(f"{field}: {', '.join(words)}" for field, words in found["matched"].items())
        print(f"    matched {matched or 'no word (by meaning only)'}")
        if found.get("learned"):
            print(f"    learned from {found['learned']} use{'s' if found['learned'] != 1 else ''}")
    return 0
