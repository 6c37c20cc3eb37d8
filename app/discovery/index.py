"""Keyword index over deferred tools: a tokenizer made for tool names, and BM25 over the indexed text.

Tool names are identifiers (`create_calendar_event`, `getUserProfile`, `github__list_prs`), so they are split
into words before indexing, and name words count twice: a query word that names the tool matters more than
one that appears somewhere in a long description.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

from app.catalog import ToolEntry

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "use",
        "used",
        "uses",
        "using",
        "was",
        "we",
        "what",
        "when",
        "which",
        "will",
        "with",
        "you",
        "your",
    ]
)


def _stem(word: str) -> str:
    """Light suffix stripping so `events`/`event` and `listing`/`list` meet; never below three letters."""
    if len(word) <= 3 or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4 and not word.endswith("eed"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Words of `text`: identifiers split, lower-cased, stop words dropped, lightly stemmed (any script)."""
    spaced = _CAMEL_BOUNDARY.sub(" ", text)
    return [_stem(word) for word in (match.lower() for match in _WORD.findall(spaced)) if word not in STOP_WORDS]


def document_tokens(entry: ToolEntry) -> list[str]:
    name_words = tokenize(entry.original_name)
    parameter_names = " ".join(entry.parameters.get("properties", {}) or {})
    return [
        *tokenize(entry.server or ""),
        *name_words,
        *name_words,
        *tokenize(entry.description),
        *tokenize(entry.search_hint),
        *tokenize(parameter_names),
    ]


class ToolIndex:
    """BM25 over a fixed list of tools; built once per catalog version and shared by requests."""

    def __init__(self, entries: Sequence[ToolEntry]) -> None:
        self.entries = list(entries)
        self._documents = [document_tokens(entry) for entry in self.entries]
        self._bm25 = BM25Okapi(self._documents) if self.entries else None

    def rank(self, query: str) -> list[tuple[ToolEntry, float]]:
        """Tools matching `query`, best first; only positive scores."""
        terms = tokenize(query)
        if not terms or self._bm25 is None:
            return []
        scores = list(self._bm25.get_scores(terms))
        if max(scores, default=0.0) <= 0.0:
            # Tiny corpora give every term a zero or negative IDF; fall back to counting shared words.
            wanted = set(terms)
            scores = [float(len(wanted.intersection(document))) for document in self._documents]
        ranked = [(entry, score) for entry, score in zip(self.entries, scores, strict=True) if score > 0.0]
        ranked.sort(key=lambda pair: pair[1], reverse=True)
        return ranked
