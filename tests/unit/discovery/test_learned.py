"""Search that learns: a kept (query, tool) pair lifts that tool for a query of the same meaning, bounded, and only
by the quorum rule for other identities. The concept stand-in model (tests/unit/discovery/test_fusion.py) makes
"tune" and "music" one meaning that keywords do not see."""

from __future__ import annotations

import time

from app.config import SemanticConfig
from app.core.catalog import ToolEntry
from app.discovery.embeddings import VectorCache
from app.discovery.learned import LearnedIndex, LearnedPair, LearnedView, LearningParams
from app.discovery.manifest import ManifestGroup
from app.discovery.search import Discovery, scored_tools
from app.discovery.semantic import SemanticSearch
from tests.unit.discovery.test_fusion import ConceptBackend, entries_of

TOOLS = {
    "audio": [("play", "Start song playback."), ("volume", "Set the loudness of the speakers.")],
    "radio": [("stations", "Stream a song from radio stations.")],
    "sky": [("forecast", "Weather for tomorrow.")],
    "docs": [("write_document", "Write a document."), *[(f"archive_{n}", f"Archive file {n}.") for n in range(6)]],
}


def _discovery() -> tuple[Discovery, SemanticSearch, list[ToolEntry]]:
    search = SemanticSearch(SemanticConfig(enabled=True))
    search.backend, search.cache, search.state = ConceptBackend(), VectorCache(None, "concepts"), "ready"
    entries = entries_of(TOOLS)
    search.ensure_now(entries)
    groups = [ManifestGroup(server, "", [e for e in entries if e.server == server]) for server in TOOLS]
    return Discovery.build(groups, semantic=search), search, entries


def _pair(search: SemanticSearch, query: str, tool: str, identity: str, uses: int = 1) -> LearnedPair:
    search.prepare_now(query)
    return LearnedPair(query, tool, identity, search.query_vector(query), uses, time.time())


def _ranked(query: str, pairs: list[LearnedPair], caller: str, limit: int = 5) -> list[str]:
    discovery, search, _ = _discovery()
    search.prepare_now(query)
    view = LearnedView(LearnedIndex(pairs, LearningParams(), time.time()), caller)
    return [found.entry.name for found in scored_tools(discovery, query, None, limit, learned=view)]


def test_a_learned_need_in_other_words_ranks_its_tool_first_for_its_own_identity() -> None:
    _, search, _ = _discovery()
    taught = [_pair(search, "put on a tune", "radio__stations", "alice")]
    assert _ranked("music please", [], "alice")[0] != "radio__stations"
    assert _ranked("music please", taught, "alice")[0] == "radio__stations"
    assert "radio__stations" not in _ranked("weather tomorrow", taught, "alice")[:1], "another need is not lifted"


def test_one_identity_flooding_false_pairs_cannot_move_a_tool_into_anothers_top_k() -> None:
    # The quorum rule: one key's thousand pairs are one voice, and one voice stops below the k-th result.
    _, search, _ = _discovery()
    assert _ranked("music please", [], "bob")[:2] == ["audio__play", "radio__stations"]
    flood = [_pair(search, f"music {n}", "radio__stations", "mallory", uses=50) for n in range(1000)]
    assert _ranked("music please", flood, "bob", limit=1) == ["audio__play"], "not above rank k (1) for bob"
    assert _ranked("music please", flood, "bob")[:2] == ["audio__play", "radio__stations"], "nor within his top k"
    assert _ranked("music please", flood, "mallory", limit=1) == ["radio__stations"], "its own searches, its own"
    # Two identities other than the caller make a quorum: then the shared lift applies.
    agreed = [*flood, _pair(search, "a tune", "radio__stations", "carol")]
    assert _ranked("music please", agreed, "bob", limit=1) == ["radio__stations"]


def test_a_tool_outside_the_ranking_is_never_lifted() -> None:
    _, search, _ = _discovery()
    gone = [_pair(search, "a tune", "removed__player", "alice"), _pair(search, "a tune", "other_set__x", "alice")]
    assert not {"removed__player", "other_set__x"} & set(_ranked("music please", gone, "alice"))


def test_without_vectors_the_same_words_match() -> None:
    pair = LearnedPair("Tune   player", "radio__stations", "alice", None, 1, time.time())
    index = LearnedIndex([pair], LearningParams(), time.time())
    assert set(index.lifts("tune player", None, "alice")) == {"radio__stations"}
    assert index.lifts("tune", None, "alice") == {}


def test_an_old_pair_lifts_less_and_uses_are_counted() -> None:
    _, search, _ = _discovery()
    search.prepare_now("music please")
    vector = search.query_vector("music please")
    now = time.time()
    fresh = _pair(search, "a tune", "radio__stations", "alice", uses=3)
    old = LearnedPair("a tune", "radio__stations", "alice", fresh.vector, 3, now - 90 * 86_400)
    lift_fresh = LearnedIndex([fresh], LearningParams(), now).lifts("music please", vector, "alice")["radio__stations"]
    lift_old = LearnedIndex([old], LearningParams(), now).lifts("music please", vector, "alice")["radio__stations"]
    assert lift_old.own < lift_fresh.own <= LearningParams().max_lift
    assert lift_fresh.uses == 3
