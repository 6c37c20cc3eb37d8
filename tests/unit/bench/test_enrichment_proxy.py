"""bench/enrichment_proxy.py's `report`, as another bench calls it: keyword search alone (no search model in the
fast tier), with and without the hand-written enrichment of the real-MCP tools."""

from __future__ import annotations

from bench.enrichment_proxy import lines, report


def test_the_report_compares_recall_with_and_without_enrichment() -> None:
    result = report(None)
    assert (result["tools"], result["tasks"], result["enriched"]) == (527, 47, 527)
    assert "hybrid" not in result, "meaning search needs the model"
    without, enriched = result["keywords"]["without"], result["keywords"]["with"]
    for part in ("whole_task", "per_capability"):
        assert set(without[part]) >= {"recall@1", "recall@5", "queries"}
    assert enriched["whole_task"]["recall@5"] > without["whole_task"]["recall@5"]
    table = lines(result)
    assert table[2].split() == ["search", "enrichment", "whole", "r@1", "whole", "r@5", "cap.", "r@1", "cap.", "r@5"]
    assert table[3].startswith("keywords  without")
