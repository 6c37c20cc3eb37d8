"""Enrichment on the discovery side: the model's answer read as untrusted text, the cache on disk, and the field
and second vector it adds to a search (and that, without any, the search is what it was)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.config import SemanticConfig
from app.core.catalog import ToolEntry
from app.discovery.embeddings import VectorCache
from app.discovery.enrichment import EnrichmentCache, brief_text, tool_brief
from app.discovery.enrichment_answer import MAX_ANSWER_CHARS_PER_TOOL, Enrichment, check, clean, read_answer
from app.discovery.index import ToolIndex
from app.discovery.manifest import ManifestGroup
from app.discovery.search import Discovery, scored_tools
from app.discovery.semantic import SemanticSearch
from app.engine.explained_search import matched_fields
from tests.unit.discovery.test_fusion import ConceptBackend, entries_of

GOOD = {"purpose": "Book a table.", "phrasings": ["reserve dinner", "table for two", "restaurant booking"]}


class Written:
    """Enrichments by exposed tool name, as a cache would find them."""

    def __init__(self, found: dict[str, Enrichment]) -> None:
        self.found = found

    def find(self, entry: ToolEntry) -> Enrichment | None:
        return self.found.get(entry.name)


def test_an_answer_is_read_per_tool_and_what_is_wrong_is_said() -> None:
    text = json.dumps({"a": GOOD, "b": {**GOOD, "phrasings": ["one", "one ", "two"]}, "c": {"purpose": 3}, "x": GOOD})
    answer = read_answer(text, ["a", "b", "c", "d"])
    assert answer.found == {"a": Enrichment("Book a table.", ("reserve dinner", "table for two", "restaurant booking"))}
    assert answer.problems == {
        "b": "2 distinct phrasings, not 3-6",
        "c": "no purpose string",
        "d": "the answer did not mention it",
    }, "a tool it was not asked about ('x') is ignored"


def test_the_shapes_models_wrap_an_answer_in_are_read_and_the_rest_is_refused() -> None:
    fenced = "```json\n" + json.dumps({"tools": {"a": GOOD}}) + "\n```"
    assert set(read_answer(fenced, ["a"]).found) == {"a"}
    assert read_answer("Here you go: {", ["a"]).problems["a"].startswith("the answer was not JSON")
    assert read_answer("[1, 2]", ["a"]).problems["a"] == "the answer was not a JSON object"
    huge = json.dumps({"a": {**GOOD, "purpose": "x" * 3 * MAX_ANSWER_CHARS_PER_TOOL}})
    assert read_answer(huge, ["a"]).problems["a"].startswith("the answer was longer than")
    assert check({**GOOD, "purpose": "y" * 201}) == "purpose longer than 200 characters"
    assert check({**GOOD, "phrasings": [f"p{n}" for n in range(7)]}) == "7 distinct phrasings, not 3-6"
    assert check({**GOOD, "phrasings": "reserve dinner"}) == "phrasings is not a list of strings"


def test_control_characters_are_stripped_from_what_the_model_wrote() -> None:
    hostile = {"purpose": "Book\x1b[2J a\u202e table\x00.", "phrasings": ["reserve\ndinner", "a\u200bb", "c\td"]}
    found = check(hostile)
    assert isinstance(found, Enrichment)
    assert found.purpose == "Book[2J a table." and found.phrasings == ("reserve dinner", "ab", "c d")
    assert clean("  two\r\n  lines ") == "two lines"


def _entry(name: str = "book", description: str = "Reserve a table.") -> ToolEntry:
    return entries_of({"food": [(name, description)]})[0]


def test_the_cache_keeps_a_line_per_tool_resumes_past_a_torn_line_and_is_the_models_own(tmp_path: Path) -> None:
    cache = EnrichmentCache(tmp_path, "up/model-a")
    entry = _entry()
    cache.put({cache.key(entry): Enrichment("Book a table.", ("a b", "c d", "e f"))})
    cache.save()
    other = _entry("cancel", "Cancel a booking.")
    cache.put({cache.key(other): Enrichment("Cancel.", ("g h", "i j", "k l"))})
    cache.save()
    assert cache.path is not None
    with cache.path.open("a") as out:
        out.write('{"key": "torn')  # a run stopped mid-write
    lines = cache.path.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0]) == {"model": "up/model-a"}, "appended, not rewritten"
    again = EnrichmentCache(tmp_path, "up/model-a")
    again.load()
    assert again.find(entry) == Enrichment("Book a table.", ("a b", "c d", "e f")) and again.find(other) is not None
    assert EnrichmentCache(tmp_path, "up/model-b").find(entry) is None
    changed = _entry(description="Reserve a table for tonight.")
    assert again.find(changed) is None, "keyed by the tool's text: a changed tool is asked about again"


def test_a_tool_is_shown_by_its_name_description_and_parameter_names_only() -> None:
    entry = ToolEntry(
        "shop__order",
        "order",
        "shop",
        "Place   an order.\n" + "x" * 2000,
        {"properties": {"sku": {"description": "SECRET-ish detail"}, "qty": {}}},
        True,
    )
    brief = tool_brief(entry)
    assert brief["name"] == "shop__order" and brief["parameters"] == ["sku", "qty"]
    assert brief["description"].startswith("Place an order. x") and len(brief["description"]) == 1000
    assert "SECRET-ish" not in brief_text(entry)


def _discovery(enrichments: Written | None, semantic: SemanticSearch | None = None) -> Discovery:
    entries = entries_of(
        {
            "food": [("book", "Reserve a table."), ("menu", "Show the menu of a restaurant.")],
            "ledger": [("post_entry", "Post an entry."), ("balance", "Show the balance of an account.")],
        }
    )
    if semantic is not None:
        texts = [found.text for entry in entries if enrichments and (found := enrichments.find(entry))]
        semantic.ensure_now(entries, texts)
    groups = [ManifestGroup(server, "", [e for e in entries if e.server == server]) for server in ("food", "ledger")]
    return Discovery.build(groups, semantic=semantic, enrichments=enrichments)


WRITTEN = Written(
    {
        "ledger__post_entry": Enrichment(
            "Record a transaction in the books.", ("reconcile quarterly ledger", "bookkeeping journal", "log expense")
        )
    }
)


def test_a_query_only_the_phrasings_match_finds_the_tool_first() -> None:
    assert scored_tools(_discovery(None), "bookkeeping journal", None, 5) == []
    found = scored_tools(_discovery(WRITTEN), "bookkeeping journal", None, 5)
    assert [each.entry.name for each in found][:1] == ["ledger__post_entry"]
    assert matched_fields(
        found[0].entry, "bookkeeping journal", enrichment=WRITTEN.found[found[0].entry.name].text
    ) == {"enrichment": ["bookkeeping", "journal"]}
    with_filter = scored_tools(_discovery(WRITTEN), "+bookkeeping journal", None, 5)
    assert with_filter == [], "a required word is one the tool itself says"


def test_without_enrichment_the_index_scores_exactly_as_before() -> None:
    empty = _discovery(Written({}))
    plain = _discovery(None)
    for query in ("show the balance", "reserve a table tonight", "menu"):
        before, after = plain.index.parts[0], empty.index.parts[0]
        assert np.array_equal(before.scores(query), after.scores(query))
        assert before.best_possible(query) == after.best_possible(query)
    assert isinstance(plain.index, ToolIndex) and plain.index.enriched == []


def test_meaning_search_reads_the_enrichment_as_a_second_vector() -> None:
    # The stand-in model reads "revenue" as "sales"; no word of the query is in the tool's text or enrichment.
    meant = Written({"ledger__balance": Enrichment("How revenue stands.", ("revenue so far", "money in", "totals"))})

    def first(enrichments: Written | None) -> str:
        search = SemanticSearch(SemanticConfig(enabled=True))
        search.backend, search.cache, search.state = ConceptBackend(), VectorCache(None, "concepts"), "ready"
        discovery = _discovery(enrichments, search)
        search.prepare_now("sales")
        found = scored_tools(discovery, "sales", None, 5)
        return found[0].entry.name if found else ""

    assert first(None) != "ledger__balance"
    assert first(meant) == "ledger__balance"
