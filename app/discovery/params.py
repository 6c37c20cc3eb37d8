"""Every number that shapes a search, in one typed object passed to the index: tuning edits no constant.

The defaults were chosen by measurement (`bench/retrieval.py` on long task queries over 3,006 tools and short
model-style queries over 566); the config's `tool_discovery.semantic` overrides the fusion knobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Field:
    weight: float
    length_norm: float  # BM25's b, per field


def _fields() -> dict[str, Field]:
    return {
        "server": Field(1.5, 0.3),
        "name": Field(3.0, 0.3),
        "description": Field(1.0, 0.75),
        "parameters": Field(0.5, 0.75),
        "hint": Field(2.0, 0.5),
        "server_text": Field(0.3, 0.75),
        # What the configured model wrote of a tool (`toolsift enrich`), weighed as hints are: chosen on the livemcp
        # tasks (bench/enrichment_proxy.py; 0.5-3 tried, length norm 0.3-0.75 alike). Empty, it adds nothing.
        "enrichment": Field(2.0, 0.5),
    }


@dataclass(frozen=True)
class SearchParams:
    fields: dict[str, Field] = field(default_factory=_fields)
    k1: float = 1.2
    server_boost: float = 0.4  # share of the best tool score added for the best-matching server (scaled for others)
    # Unsaturated bonus (times the word's IDF) for a query word that is one of the n words of a tool's name (0.7/n)
    # or of its server's name (1.0/n): BM25 saturates a short name after one hit, so naming most of a tool still
    # counted little against long descriptions that repeat common words.
    name_match: float = 0.7
    server_name_match: float = 1.0
    # Hybrid fusion: score = (1 - w) * lexical / best lexical + w * cosine. Short, keyword-like queries lean on
    # meaning (w = semantic_weight_short up to short_query_words words), long task descriptions on words
    # (semantic_weight_long from long_query_words words), linear in between. Measured: one weight for all
    # queries either loses short queries (w 0.2) or long ones (w 0.6).
    semantic_weight_short: float = 0.8
    semantic_weight_long: float = 0.2
    short_query_words: int = 6
    long_query_words: int = 20
    # A short query's keyword scores are divided by at least this share of the best possible score, so that a
    # query whose words barely match any tool keeps little of its keyword share (scaled down to 0 for long ones).
    lexical_confidence: float = 0.3
    # A task of several sentences: the share of a tool's score that comes from its best-matching sentence alone.
    sentence_weight: float = 0.3
    # Added per standard deviation that a tool's server (its tools' mean vector) is nearer the query than average.
    server_meaning_lift: float = 0.01
    # Short queries (scaled down to 0 for long ones, like the semantic weight): a server's tools are reordered among
    # themselves by this times the cosine between the query and what sets each apart from its siblings. Measured on
    # the short queries: recall@1 0.654 -> 0.664 (the demo's tools 0.638 -> 0.655), the same from 0.04 to 0.08, and
    # nothing else moved; at 0.15 a call of RapidAPI sub-queries loses.
    sibling_contrast: float = 0.04
    weak_match_floor: float = 0.2  # with no lexical match, tools below this cosine are not offered at all
    # An enriched tool's similarity: its own vector's, with this share taken from its enrichment's vector instead
    # (tools without enrichment keep their own, so without any the ranking is what it was). Chosen with the field
    # weight above: 0.25-1.0 tried; 0.75 best on whole tasks and per capability alike.
    enrichment_meaning: float = 0.75

    def shortness(self, words: int) -> float:
        """1 up to short_query_words words, 0 from long_query_words, linear in between."""
        if words <= self.short_query_words:
            return 1.0
        if words >= self.long_query_words:
            return 0.0
        return (self.long_query_words - words) / (self.long_query_words - self.short_query_words)

    def contrast(self, words: int) -> float:
        """The sibling contrast's weight for a query of `words` words."""
        return self.sibling_contrast * self.shortness(words)

    def semantic_weight(self, words: int) -> float:
        share = self.shortness(words)
        return self.semantic_weight_long + (self.semantic_weight_short - self.semantic_weight_long) * share


DEFAULT_PARAMS = SearchParams()
# A query is read up to this many characters, by both sides: a hostile one then costs what a long honest one does,
# and the encoder reads 128 tokens anyway.
MAX_QUERY_CHARS = 2000
# A task is ranked sentence by sentence up to this many sentences (real tasks have 2-6): each costs a vector and a
# ranking, so a hostile query of hundreds of tiny sentences costs what a long honest task does.
MAX_SENTENCES = 8
