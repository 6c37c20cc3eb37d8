"""How keyword and semantic scores are fused: tasks of several sentences, the server lift, the config's knobs.

A stand-in embedding backend (vectors from a few concept words) makes every vector known, so each test can
show the ranking with a mechanism on and off.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from app.config import SemanticConfig, parse_config
from app.core.catalog import ToolEntry
from app.discovery.embeddings import VectorCache
from app.discovery.encoder import Array
from app.discovery.hybrid import sentences
from app.discovery.manifest import ManifestGroup
from app.discovery.search import Discovery, scored_tools
from app.discovery.semantic import SemanticSearch
from app.mcp.client.catalog_build import build_catalog

# Words that mean the same to the stand-in model, while keywords see different words.
CONCEPTS = (
    ("sales", "revenue"),
    ("report", "paperwork"),
    ("weather", "forecast"),
    ("music", "song", "tune"),
    ("document", "draft"),
    ("file", "archive"),
    ("icon", "pictogram"),
)


class ConceptBackend:
    """A vector per text from the concept words it contains (plus a little of everything), unit length."""

    key = "concepts"

    def embed(self, texts: Sequence[str]) -> Array:
        rows = []
        for text in texts:
            words = text.lower().replace(".", " ").replace(":", " ").split()
            row = np.full(len(CONCEPTS), 0.05, dtype=np.float32)
            for number, synonyms in enumerate(CONCEPTS):
                row[number] += sum(words.count(word) for word in synonyms)
            rows.append(row / np.linalg.norm(row))
        return np.array(rows, dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Array:
        return self.embed(texts)


def entries_of(tools: dict[str, list[tuple[str, str]]]) -> list[ToolEntry]:
    listings = {
        server: [SimpleNamespace(name=n, description=d, input_schema={}, meta=None, title=None) for n, d in items]
        for server, items in tools.items()
    }
    config = parse_config({"mcpServers": {s: {"command": "unused", "defer_loading": True} for s in tools}}, environ={})
    return list(build_catalog(config, listings, version=1).tools.values())


def ranked(tools: dict[str, list[tuple[str, str]]], query: str, **knobs: float) -> list[str]:
    search = SemanticSearch(SemanticConfig(enabled=True, **knobs))  # type: ignore[arg-type]
    search.backend, search.cache, search.state = ConceptBackend(), VectorCache(None, "concepts"), "ready"
    entries = entries_of(tools)
    search.ensure_now(entries)
    groups = [ManifestGroup(server, "", [e for e in entries if e.server == server]) for server in tools]
    discovery = Discovery.build(groups, semantic=search)
    search.prepare_now(query)
    return [found.entry.name for found in scored_tools(discovery, query, None, 10)]


def test_a_task_is_read_sentence_by_sentence_only_when_it_has_several() -> None:
    assert sentences("Convert 250 USD to EUR. Then save the result as a note!") == [
        "Convert 250 USD to EUR.",
        "Then save the result as a note!",
    ]
    assert sentences("convert 250 USD to EUR and save it") == []
    assert sentences("Weather in Paris? Yes.") == []  # a one-word sentence is no task of its own
    assert len(sentences("Do it now. " * 500)) == 8, "a hostile query's sentences cost a bounded amount"


def test_each_sentence_of_a_task_finds_its_own_tool() -> None:
    # The last sentence's tool shares no word with the task, and the task's one vector is mostly about its first
    # sentence: ranked on its own, that sentence finds it.
    tools = {
        "docs": [("write_document", "Write a document.")]
        + [(f"archive_{n}", f"Archive an old document, number {n}.") for n in range(4)],
        "audio": [("play", "Start song playback.")],
        "sky": [("forecast", "Weather for tomorrow.")],
    }
    task = "Write a document about the plan, a long document with every detail of the plan in it. Then put on a tune."
    assert ranked(tools, task)[:2] == ["docs__write_document", "audio__play"]
    assert ranked(tools, task, sentence_weight=0.0).index("audio__play") == 5


def test_tools_of_the_server_nearest_in_meaning_are_lifted() -> None:
    # The same tool on two servers, alike in words and vector: the one whose server's other tools are about the
    # query's subject (revenue means sales to the model, not to keywords) comes first.
    tools = {
        "office": [("make_report", "Write a report."), ("keep_notes", "Keep notes in an archive.")],
        "shop": [("make_report", "Write a report."), ("totals", "Revenue totals."), ("trend", "Revenue trend.")],
        "sky": [("forecast", "Weather for tomorrow.")],
        "audio": [("play", "Start song playback.")],
    }
    assert ranked(tools, "report on sales")[:2] == ["shop__make_report", "office__make_report"]
    assert ranked(tools, "report on sales", server_meaning_lift=0.0)[:2] == ["office__make_report", "shop__make_report"]


def test_a_short_query_whose_telling_words_no_tool_has_leans_on_meaning() -> None:
    # "bell" and "pictogram" are in no tool's text: keywords match only the common "find", and must not decide.
    tools = {
        "maps": [("find_parking", "Find parking near a place, each with its icon and icon and a forecast.")]
        + [(f"find_{thing}", f"Find a {thing}.") for thing in ("hotel", "train", "flight", "museum", "shop")],
        "ui": [("search_icons", "Search the icon library by name.")],
        "sky": [("forecast", "Weather for tomorrow.")],
    }
    assert ranked(tools, "find a bell pictogram")[0] == "ui__search_icons"
    assert ranked(tools, "find a bell pictogram", lexical_confidence=0.0)[0] == "maps__find_parking"


def test_the_configs_fusion_knobs_reach_the_ranking() -> None:
    # Keywords favour the tool named with both words; the model favours the one that means only "file report".
    tools = {
        "a": [("file_report", "File report, with weather, forecast, music and song.")],
        "b": [("archive_paperwork", "Archive paperwork.")],
        "c": [("forecast", "Weather for tomorrow.")],
    }
    assert ranked(tools, "file report", weight_short=0.0, lexical_confidence=0.0)[0] == "a__file_report"
    assert ranked(tools, "file report", weight_short=1.0)[0] == "b__archive_paperwork"
