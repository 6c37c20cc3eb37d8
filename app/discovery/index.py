"""Keyword index over deferred tools: a tokenizer made for tool names, and field-weighted BM25 (BM25F).

Tool names are identifiers (`create_calendar_event`, `getUserProfile`, `github__list_prs`), so they are split
into words; words are lower-cased, stop words dropped and stemmed (Snowball English), and runs of CJK
characters become character bigrams so descriptions in those scripts still match. Each field of a tool
(server, name, description, parameters, hints) has its own weight and length normalisation, and scoring walks
an inverted index: only tools that share a word with the query are touched, so a search over thousands of
tools costs well under a millisecond per query word. Two additions measured on tool-retrieval data: paths and
URLs in a query become the words tools use for them, and a query word naming part of a tool's (or its
server's) name earns an unsaturated bonus.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import snowballstemmer

from app.core.catalog import ToolEntry
from app.discovery.enrichment import Enrichments
from app.discovery.enrichment_answer import Enrichment
from app.discovery.params import DEFAULT_PARAMS, SearchParams

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
STOP_WORDS = frozenset(
    "a about after all also am an and any are as at be been before being but by can could did do does doing for "
    "from get had has have having he her here hers him his how i if in into is it its just let like me more most "
    "my need needs no not now of off on once only or other our out over own please provide same she should so "
    "some such than that the their them then there these they this those through to too under until up us use "
    "used uses using very via want was we were what when where which while who whom why will with would you "
    "your".split()
)
# A match may only start where a word, path or run of dashes starts: starting inside a run of `-` made a long run
# cost quadratic time (each position rescanned the rest of the run).
_LOCATION = re.compile(r"(?<![\w/-])(?:(?:https?://|www\.)\S+|[~.]{0,2}/[\w./-]+|[\w-]+\.[A-Za-z]\w{0,4}\b)")
_FORMATS = {
    "md": "markdown", "txt": "text", "pdf": "pdf document", "doc": "word document", "docx": "word document",
    "ppt": "powerpoint presentation", "pptx": "powerpoint presentation", "xls": "excel spreadsheet",
    "xlsx": "excel spreadsheet", "csv": "csv table", "json": "json", "html": "html web page", "htm": "html web page",
    "png": "image", "jpg": "image", "jpeg": "image", "gif": "image", "svg": "image", "wav": "audio", "mp3": "audio",
    "mp4": "video", "py": "python code", "js": "javascript code", "ts": "typescript code",
}  # fmt: skip
_PLACES = frozenset({"root", "home", "tmp", "users"})  # folders that say nothing about the task


# Budgets: the stemmer is pure Python and its cost grows with a word's length (a 1 MB "word" took minutes), and
# every word a caller or a server sends would otherwise be a key of the cache below. No English word is longer
# than MAX_STEM_CHARS: longer ones are kept as they are (cut to MAX_WORD_CHARS), neither stemmed nor cached, so
# the cache holds at most WORD_CACHE_SIZE words of at most MAX_STEM_CHARS characters (about 10 MB at worst).
# A field of a tool is read up to MAX_FIELD_CHARS: past that, a description adds cost, not findability. Indexing
# a caller's tools may stem at most CLIENT_STEM_BUDGET words the cache does not know (see `stem_budget`).
MAX_STEM_CHARS = 32
MAX_WORD_CHARS = 64
WORD_CACHE_SIZE = 32768
MAX_FIELD_CHARS = 4096
CLIENT_STEM_BUDGET = 8192
# A caller's tools are read up to CLIENT_INDEX_CHARS of descriptions in all, shared out so that short descriptions
# are read whole and long ones get equal shares of the rest: the index of 512 long made-up descriptions held 200 MB.
CLIENT_INDEX_CHARS = 128 * 1024
MIN_FIELD_CHARS = 256

_words: dict[str, tuple[str, ...]] = {}  # word -> index words; the oldest goes first when full
_words_lock = threading.Lock()  # taken on a miss only: a hit is one dict read
# A Snowball stemmer keeps the word it is stemming on itself: one shared by the worker pool's threads read another
# thread's word half-way (IndexError: string index out of range). One per thread costs 0.2 us a word (of 19),
# a lock 0.7 us and a wait whenever two threads index at once.
_local = threading.local()
_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("stem_budget", default=None)


@contextlib.contextmanager
def stem_budget(words: int) -> Iterator[None]:
    """Within this block at most `words` new words are stemmed; past that, a word the cache does not know is
    indexed lower-cased only (and not cached): a caller's thousands of made-up words cost a bounded time."""
    token = _budget.set([words])
    try:
        yield
    finally:
        _budget.reset(token)


def _normalise(word: str) -> tuple[str, ...]:
    if len(word) > MAX_STEM_CHARS:
        word = word[:MAX_WORD_CHARS].lower()
        return _bigrams(word) if _CJK.search(word) else (word,)
    found = _words.get(word)
    if found is not None:
        return found
    budget = _budget.get()
    if budget is not None:
        if budget[0] <= 0:
            lower = word.lower()
            return () if lower in STOP_WORDS else _bigrams(lower) if _CJK.search(lower) else (lower,)
        budget[0] -= 1
    found = _normalise_word(word)
    with _words_lock:
        if word not in _words and len(_words) >= WORD_CACHE_SIZE:
            del _words[next(iter(_words))]
        _words[word] = found
    return found


def _bigrams(word: str) -> tuple[str, ...]:
    return tuple(word[i : i + 2] for i in range(max(1, len(word) - 1)))


def _normalise_word(word: str) -> tuple[str, ...]:
    word = word.lower()
    if word in STOP_WORDS:
        return ()
    if _CJK.search(word):
        return _bigrams(word)
    return (_stemmer().stemWord(word),)


def _stemmer() -> Any:
    """This thread's stemmer (the library's are not safe to share between threads)."""
    found = getattr(_local, "stemmer", None)
    if found is None:
        found = _local.stemmer = snowballstemmer.stemmer("english")
    return found


def tokenize(text: str) -> list[str]:
    """Index words of `text`: identifiers split, lower-cased, stop words dropped, stemmed; CJK as bigrams."""
    spaced = _CAMEL_BOUNDARY.sub(" ", text)
    return [token for word in _WORD.findall(spaced) for token in _normalise(word)]


def describe_locations(text: str) -> str:
    """URLs and file paths in a query as the words tools use for them: a URL becomes 'url link web page' and its
    host, a path 'file path', its folders, extension, the format that names and the file's name; without this,
    `/root/ppt/apple.pptx` matches nothing that writes files or presentations (and `root` matches noise)."""
    return _LOCATION.sub(_describe_location, text)


def _describe_location(match: re.Match[str]) -> str:
    token = match.group(0).rstrip(".,;:?!'\")")
    lower = token.lower()
    if lower.startswith(("http://", "https://", "www.")):
        host = re.sub(r"^(?:https?://)?(?:www\.)?", "", lower).split("/")[0]
        return f" url link web page {host.rsplit('.', 1)[0]} "
    *folders, base = token.split("/")
    stem, _, extension = base.rpartition(".")
    if not stem or not extension.isalpha() or len(extension) > 5:
        stem, extension = base, ""
    extension = extension.lower()
    if not folders and extension not in _FORMATS:
        return match.group(0)  # a domain or dotted name (example.com, v1.2), not a file
    kept = [folder for folder in folders if folder and folder.lower() not in _PLACES]
    words = ["file", *(["path"] if folders else []), *kept, extension, _FORMATS.get(extension, ""), stem]
    return f" {' '.join(words)} "


def shares(lengths: Sequence[int], total: int) -> list[int]:
    """How many characters of each text to read, `total` in all: short texts whole, long ones equal shares."""
    caps = [0] * len(lengths)
    left, remaining = total, len(lengths)
    for position in sorted(range(len(lengths)), key=lengths.__getitem__):
        caps[position] = min(lengths[position], left // remaining)
        left -= caps[position]
        remaining -= 1
    return caps


def tool_fields(
    entry: ToolEntry, server_text: str = "", max_chars: int = MAX_FIELD_CHARS, enrichment: str = ""
) -> dict[str, list[str]]:
    """A tool's words per field, each field read up to `max_chars` (at most MAX_FIELD_CHARS); `enrichment` is what
    the configured model wrote of it (app/discovery/enrichment.py), a field of its own."""
    max_chars = min(max_chars, MAX_FIELD_CHARS)
    properties = entry.parameters.get("properties") or {}
    parameter_text = _parameter_text(properties if isinstance(properties, dict) else {})
    fields = {
        "server": entry.server or "",
        "name": entry.original_name,
        # A tool without a description is described by its parameters: measured on RapidAPI tasks whose tools
        # include such a tool, recall@5 0.52 -> 0.60 (their parameters weighed as parameters only).
        "description": entry.description if entry.description.strip() else parameter_text,
        "parameters": parameter_text,
        "hint": entry.search_hint,
        "server_text": server_text,
        "enrichment": enrichment,
    }
    other = max(max_chars, MIN_FIELD_CHARS)  # a tool's name and parameters are read even when its share is small
    return {name: tokenize(text[: max_chars if name == "description" else other]) for name, text in fields.items()}


def _parameter_text(properties: dict[str, Any]) -> str:
    """Parameter names and descriptions, gathered only up to MAX_FIELD_CHARS (a schema can be megabytes)."""
    parts: list[str] = []
    size = 0
    for name, spec in properties.items():
        description = spec.get("description", "") if isinstance(spec, dict) else ""
        part = f"{name} {description if isinstance(description, str) else ''}"
        parts.append(part[: MAX_FIELD_CHARS - size])
        size += len(part) + 1
        if size >= MAX_FIELD_CHARS:
            break
    return " ".join(parts)


# Fields a `+word` filter does not read: the server's text (every tool of it shares it) and what the configured
# model wrote of the tool (a required word is one the tool itself says).
_NOT_OWN = frozenset({"server_text", "enrichment"})


class ToolIndex:
    """BM25F over a fixed list of tools; built once per catalog version and shared by requests."""

    def __init__(
        self,
        entries: Sequence[ToolEntry],
        server_text: Mapping[str, str] | None = None,
        reference: ToolIndex | None = None,
        params: SearchParams = DEFAULT_PARAMS,
        max_chars: int | None = None,
        enrichments: Enrichments | None = None,
    ) -> None:
        """With a `reference` index, word statistics (document frequencies, field lengths) are taken as if both
        were one collection, so scores from the two can be merged: a few client tools beside thousands. With
        `max_chars`, the tools' descriptions are read up to that many characters in all (see `shares`). With
        `enrichments`, each tool's enrichment is its `enrichment` field (and `enriched` keeps it, for meaning)."""
        self.params = params
        self.entries = list(entries)
        server_text = server_text or {}
        self.enriched: list[Enrichment | None] = (
            [enrichments.find(entry) for entry in self.entries] if enrichments is not None else []
        )
        extra = [found.text if found is not None else "" for found in self.enriched] or [""] * len(self.entries)
        self._enrichment = {id(entry): text for entry, text in zip(self.entries, extra, strict=True) if text}
        caps = (
            shares([len(entry.description) for entry in self.entries], max_chars)
            if max_chars is not None
            else [MAX_FIELD_CHARS] * len(self.entries)
        )
        documents = [
            tool_fields(entry, server_text.get(entry.server or "", ""), cap, text)
            for entry, cap, text in zip(self.entries, caps, extra, strict=True)
        ]
        average = (
            reference.average
            if reference is not None
            else {
                name: (sum(len(doc[name]) for doc in documents) / len(documents)) or 1.0 if documents else 1.0
                for name in params.fields
            }
        )
        self.average: dict[str, float] = average
        # A tool's own words (not its server's text, which every tool of the server shares), for `+word` filters.
        self._own_words: dict[str, set[int]] = {}
        for position, doc in enumerate(documents):
            for word in {word for name, words in doc.items() if name not in _NOT_OWN for word in words}:
                self._own_words.setdefault(word, set()).add(position)
        weighted: list[dict[str, float]] = []  # per tool: term -> field-weighted, length-normalised frequency
        for doc in documents:
            frequencies: dict[str, float] = {}
            for name, field in params.fields.items():
                tokens = doc[name]
                if not tokens:
                    continue
                norm = (1 - field.length_norm) + field.length_norm * len(tokens) / average[name]
                for term, count in Counter(tokens).items():
                    frequencies[term] = frequencies.get(term, 0.0) + field.weight * count / norm
            weighted.append(frequencies)
        exact = [_name_match(doc, params) for doc in documents]
        self._tools: _Postings = _Postings(
            weighted, params.k1, reference._tools if reference is not None else None, exact
        )
        self._name_weight = {
            id(entry): sum(self._tools.idf.get(word, 0.0) for word in doc["name"]) / (len(doc["name"]) or 1)
            for entry, doc in zip(self.entries, documents, strict=True)
        }
        # Tasks usually need several tools of one server, so each server is also a document (its name, text and
        # all its tools' names and descriptions) and a tool is lifted by how well its server matches.
        servers: dict[str, list[str]] = {}
        for entry, doc in zip(self.entries, documents, strict=True):
            words = servers.setdefault(entry.server or "", [*doc["server"], *doc["server_text"]])
            words.extend(doc["name"] + doc["description"])
        position_of = {name: position for position, name in enumerate(servers)}
        self._server_of = np.array([position_of[entry.server or ""] for entry in self.entries], dtype=np.int32)
        average_server = sum(len(words) for words in servers.values()) / (len(servers) or 1) or 1.0
        self._servers = _Postings(
            [
                {term: count / (0.25 + 0.75 * len(words) / average_server) for term, count in Counter(words).items()}
                for words in servers.values()
            ],
            params.k1,
        )

    @property
    def parts(self) -> tuple[ToolIndex, ...]:
        return (self,)

    @property
    def word_count(self) -> int:
        """Distinct index words: what the index's size grows with."""
        return len(self._tools.arrays)

    def enrichment_of(self, entry: ToolEntry) -> str:
        """The enrichment text this index read for `entry` ("" for none)."""
        return self._enrichment.get(id(entry), "")

    def name_distinctiveness(self, entry: ToolEntry) -> float:
        """How rare the words of a tool's name are here (mean IDF): the manifest shows such names first."""
        return self._name_weight.get(id(entry), 0.0)

    def best_possible(self, query: str, unknown_words: bool = False) -> float:
        """The score of a tool matching every known word of `query` fully, in its fields and as the whole of its
        and its server's name: divides scores into a 0-1 match. With `unknown_words`, a word no tool has counts
        as the rarest word there is: the query's most telling word may be one that keywords cannot match."""
        default = self._tools.rarest if unknown_words else 0.0
        idfs = [self._tools.idf.get(term, default) for term in set(tokenize(describe_locations(query)))]
        bonus = self.params.name_match + self.params.server_name_match
        return sum(idfs) + bonus * sum(idfs) / (len(idfs) or 1)

    def rank(self, query: str, required: Sequence[str] = ()) -> Iterator[tuple[ToolEntry, float]]:
        """Tools sharing a word with `query`, best first (lazily); with `required` words, only tools having all."""
        scores = self.scores(query, required)
        matched = np.flatnonzero(scores > 0.0)
        for position in matched[np.argsort(-scores[matched], kind="stable")]:
            yield self.entries[position], float(scores[position])

    def scores(self, query: str, required: Sequence[str] = ()) -> np.ndarray[Any, Any]:
        """Every tool's score for `query` (0 where no word is shared, or a `required` word is missing)."""
        query = describe_locations(query)
        terms = set(tokenize(query))
        scores = self._tools.score(terms)
        must = {word for text in required for word in tokenize(text)}
        if must:
            allowed = set.intersection(*(self._own_words.get(word, set()) for word in must))
            keep = np.zeros(len(self.entries), dtype=bool)
            keep[list(allowed)] = True
            scores[~keep] = 0.0
        matched = np.flatnonzero(scores > 0.0)
        if matched.size == 0:
            return scores
        server_scores = self._servers.score(terms)
        best_server = float(server_scores.max(initial=0.0))
        if best_server > 0.0 and server_scores.size > 1:
            lift = self.params.server_boost * float(scores[matched].max()) / best_server
            scores[matched] += lift * server_scores[self._server_of[matched]]
        return scores


def _name_match(doc: Mapping[str, list[str]], params: SearchParams) -> dict[str, float]:
    """A tool's name and server-name words with their unsaturated bonus (see SearchParams.name_match)."""
    bonus: dict[str, float] = {}
    for field, share in (("name", params.name_match), ("server", params.server_name_match)):
        words = set(doc[field])
        for word in words:
            bonus[word] = bonus.get(word, 0.0) + share / len(words)
    return bonus


class _Postings:
    """Word -> (tool positions, IDF-weighted saturated frequencies) as arrays: one vector add per query word."""

    def __init__(
        self,
        frequencies: list[dict[str, float]],
        k1: float,
        reference: _Postings | None = None,
        bonuses: Sequence[Mapping[str, float]] | None = None,
    ) -> None:
        self.size = len(frequencies)
        total = self.size + (reference.size if reference is not None else 0)
        collected: dict[str, tuple[list[int], list[float]]] = {}
        for position, document in enumerate(frequencies):
            for term, frequency in document.items():
                positions, values = collected.setdefault(term, ([], []))
                positions.append(position)
                values.append(frequency / (k1 + frequency) + (bonuses[position].get(term, 0.0) if bonuses else 0.0))
        self.idf: dict[str, float] = {}
        self.document_frequency: dict[str, int] = {}
        self.arrays: dict[str, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
        for term, (positions, values) in collected.items():
            found = len(positions) + (reference.document_frequency.get(term, 0) if reference is not None else 0)
            idf = math.log(1 + (total - found + 0.5) / (found + 0.5))
            self.idf[term] = idf
            self.document_frequency[term] = len(positions)
            self.arrays[term] = (np.array(positions, dtype=np.int32), np.array(values) * idf)
        self.rarest = max(self.idf.values(), default=0.0)  # the IDF of a word one tool has

    def score(self, terms: set[str]) -> np.ndarray[Any, Any]:
        scores = np.zeros(self.size)
        for term in terms:
            found = self.arrays.get(term)
            if found is not None:
                scores[found[0]] += found[1]
        return scores
