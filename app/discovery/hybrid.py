"""Keyword and semantic scores fused into one ranking, per query.

score = (1 - w) * lexical / max(best lexical, c * best possible) + w * cosine, where w depends on the query's
length: short keyword-like queries ("storm warnings", "mkdir") lean on meaning, long task descriptions on words
(see SearchParams). Dividing by the best possible lexical score as well (a word no tool has counting as the
rarest) keeps a short query whose telling words match nothing (only a "for" or "my" shared with some tool) from
handing its whole keyword share to that accident.

A task of several sentences usually needs a tool per sentence, and one vector for the whole text averages them
away: each sentence is then also ranked on its own, and a tool's best sentence adds to its whole-text score.
Tools of the server whose tools mean most like the query are lifted a little, as the keyword index lifts the
server whose words match; within a server, a short query also counts how well it matches what sets each tool apart
from its siblings, so the one that does what was asked comes first rather than one that acts on the same object.
Scores of every part of a merged index are fused together, so a request's own tools and the shared catalog compare
fairly; a part without vectors (a client's own tools are not embedded) counts the median similarity of the others,
so its tools rank by their keywords. With no keyword match at all, the nearest tools by meaning are still offered,
marked weak; a tool that no word matches is offered only when at least `weak_match_floor` near the query, with
keyword matches beside it or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from app.core.catalog import ToolEntry
from app.discovery.encoder import Array
from app.discovery.params import MAX_SENTENCES, SearchParams

if TYPE_CHECKING:
    from app.discovery.index import ToolIndex

Scores = np.ndarray[Any, np.dtype[np.float64]]
Mask = np.ndarray[Any, np.dtype[np.bool_]]
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
REORDERED = 256  # places the sibling contrast may reorder: far past what a search reads (25, and loaded ones)


def sentences(text: str) -> list[str]:
    """The first MAX_SENTENCES sentences of a task of several (each of two words or more), or [] for one."""
    found = [part.strip() for part in _SENTENCE_END.split(text) if len(part.split()) >= 2]
    return found[:MAX_SENTENCES] if len(found) >= 2 else []


@dataclass(frozen=True)
class QueryVectors:
    """A query's vector, and one per sentence when it has several (computed together, in one batch)."""

    whole: Array
    sentences: tuple[tuple[str, Array], ...] = ()


@dataclass(frozen=True)
class ServerMeans:
    """Per part of an index: each tool's server number, each server's mean tool vector (unit length) and that
    mean's length, and each tool's distance from its server's mean (0 for the only tool of a server)."""

    server_of: np.ndarray[Any, np.dtype[np.int64]]
    centroids: Array
    mean_length: Scores
    apart: Scores


def server_means(entries: Sequence[ToolEntry], matrix: Array) -> ServerMeans:
    numbers: dict[str | None, int] = {}
    server_of = np.array([numbers.setdefault(entry.server, len(numbers)) for entry in entries], dtype=np.int64)
    sums = np.zeros((len(numbers), matrix.shape[1] if matrix.ndim == 2 else 1), dtype=np.float64)
    counts = np.bincount(server_of, minlength=len(numbers)).astype(np.float64)
    if len(entries):
        np.add.at(sums, server_of, matrix)
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    means = sums / np.maximum(counts, 1.0)[:, None]
    apart = np.linalg.norm(matrix - means[server_of], axis=1) if len(entries) else np.zeros(0)
    apart[counts[server_of] < 2] = 0.0
    centroids = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return ServerMeans(server_of, centroids, np.linalg.norm(means, axis=1), apart)


@dataclass(frozen=True)
class EnrichedVectors:
    """Per part of an index: the vectors of its tools' enrichments (one row each), and the tool each row is of."""

    rows: Array
    owner: np.ndarray[Any, np.dtype[np.int64]]


def enriched_similarity(found: EnrichedVectors | None, size: int, vector: Array) -> Scores:
    """Each tool's cosine to `vector` through its enrichment (its best row), NaN for a tool without one."""
    similarity = np.full(size, -np.inf)
    if found is not None and len(found.owner):
        np.maximum.at(similarity, found.owner, (found.rows @ vector).astype(np.float64))
    similarity[~np.isfinite(similarity)] = np.nan
    return similarity


@dataclass(frozen=True)
class Scored:
    entry: ToolEntry
    score: float
    lexical: float
    semantic: float | None = None  # cosine similarity, when the search was hybrid
    weak: bool = False  # found by meaning alone: no word of the query matched any tool
    learned: int = 0  # uses of kept queries near this one that lifted it (app/discovery/learned.py)


def hybrid_rank(
    parts: Sequence[ToolIndex],
    matrices: Sequence[Array | None],
    means: Sequence[ServerMeans | None],
    text: str,
    required: Sequence[str],
    vectors: QueryVectors,
    params: SearchParams,
    enriched: Sequence[EnrichedVectors | None] = (),
) -> Iterator[Scored]:
    """`enriched`: per part, its tools' enrichment vectors (none: the tools' own vectors alone)."""

    def meaning(vector: Array) -> Scores:
        return _with_enrichment(parts, enriched, _dense(parts, matrices, vector)[0], vector, params.enrichment_meaning)

    lexical = _lexical(parts, text, required)
    own, measured = _dense(parts, matrices, vectors.whole)
    dense = _with_enrichment(parts, enriched, own, vectors.whole, params.enrichment_meaning)
    entries = [entry for part in parts for entry in part.entries]
    weak = float(lexical.max(initial=0.0)) <= 0.0
    if weak:
        if required:
            return
        fused = np.where(measured & (dense >= params.weak_match_floor), dense, -np.inf)
    else:
        fused = _fuse(parts, lexical, dense, text, params)
        if vectors.sentences and params.sentence_weight > 0:
            best = np.max(
                [
                    _fuse(parts, _lexical(parts, sentence, ()), meaning(vector), sentence, params)
                    for sentence, vector in vectors.sentences
                ],
                axis=0,
            )
            fused = (1 - params.sentence_weight) * fused + params.sentence_weight * best
        near = [found.centroids @ vectors.whole if found is not None else None for found in means]
        fused = fused + _server_lift(parts, means, near, params)
        contrast = _sibling_contrast(parts, means, near, own, params.contrast(len(text.split())))
        fused = _reorder_siblings(parts, means, fused, fused + contrast)
        if required:
            fused[lexical <= 0.0] = -np.inf  # a tool without a required word is out, whatever it means
        # A tool no word of the query matches is offered for its meaning alone, so only as near as a weak match
        # must be: beside a keyword match, an unrelated tool below the floor is noise the model would read.
        fused[(lexical <= 0.0) & ~(measured & (dense >= params.weak_match_floor))] = -np.inf
    candidates = np.flatnonzero(np.isfinite(fused))
    for position in candidates[np.argsort(-fused[candidates], kind="stable")]:
        similarity = float(dense[position]) if measured[position] else None
        yield Scored(entries[position], float(fused[position]), float(lexical[position]), similarity, weak)


def _lexical(parts: Sequence[ToolIndex], text: str, required: Sequence[str]) -> Scores:
    return np.concatenate([part.scores(text, required) for part in parts]).astype(np.float64)


def _dense(parts: Sequence[ToolIndex], matrices: Sequence[Array | None], vector: Array) -> tuple[Scores, Mask]:
    """Cosine per tool, and which tools have a vector (the others get the median, so keywords decide)."""
    dense = np.concatenate(
        [
            matrix @ vector if matrix is not None else np.full(len(part.entries), np.nan)
            for part, matrix in zip(parts, matrices, strict=True)
        ]
    ).astype(np.float64)
    measured = ~np.isnan(dense)
    if not measured.all():
        dense[~measured] = float(np.median(dense[measured])) if measured.any() else 0.0
    return dense, measured


def _with_enrichment(
    parts: Sequence[ToolIndex], enriched: Sequence[EnrichedVectors | None], dense: Scores, vector: Array, weight: float
) -> Scores:
    """`dense` with each enriched tool's similarity moved `weight` of the way to its enrichment's: the words a
    user searches with, as the configured model wrote them, beside what the tool says of itself. `dense` itself
    when no tool is enriched."""
    if weight <= 0 or not any(found is not None for found in enriched):
        return dense
    through = np.concatenate(
        [enriched_similarity(found, len(part.entries), vector) for part, found in zip(parts, enriched, strict=True)]
    )
    has = ~np.isnan(through)
    mixed = dense.copy()
    mixed[has] = (1 - weight) * dense[has] + weight * through[has]
    return mixed


def _fuse(parts: Sequence[ToolIndex], lexical: Scores, dense: Scores, text: str, params: SearchParams) -> Scores:
    """One text's fused scores, scaled so that its best tool scores 1."""
    words = len(text.split())
    weight = params.semantic_weight(words)
    scale = float(lexical.max(initial=0.0))
    confidence = params.lexical_confidence * params.shortness(words)
    if confidence > 0:
        scale = max(scale, confidence * max(part.best_possible(text, unknown_words=True) for part in parts))
    fused = (1 - weight) * lexical / (scale or 1.0) + weight * dense
    peak = float(fused.max(initial=0.0))
    return fused / peak if peak > 0 else fused


def _sibling_contrast(
    parts: Sequence[ToolIndex],
    means: Sequence[ServerMeans | None],
    near: Sequence[Array | None],
    dense: Scores,
    weight: float,
) -> Scores:
    """`weight` times the cosine between the query and what sets a tool apart from its server's other tools (its
    vector minus their mean). Siblings that act on one object (create, list, search, update a note) mean nearly
    the same, so a short query's object word matches them all alike and the first result was often a sibling:
    this lets the part that differs (what the tool does) decide between them (`_reorder_siblings`). Tools alone
    on their server get 0. `near`: each part's servers' cosine to the query."""
    contrast = np.zeros(sum(len(part.entries) for part in parts))
    if weight <= 0:
        return contrast
    start = 0
    for part, found, similarity in zip(parts, means, near, strict=True):
        end = start + len(part.entries)
        if found is not None and similarity is not None and len(part.entries):
            shared = (similarity.astype(np.float64) * found.mean_length)[found.server_of]
            apart = found.apart
            contrast[start:end] = np.where(apart > 1e-6, (dense[start:end] - shared) / np.maximum(apart, 1e-6), 0.0)
        start = end
    return weight * contrast


def _reorder_siblings(
    parts: Sequence[ToolIndex], means: Sequence[ServerMeans | None], fused: Scores, adjusted: Scores
) -> Scores:
    """`fused`, with each server's tools reordered among themselves by `adjusted`: the places a server's tools take
    in the ranking stay the server's, so a contrast between siblings never moves one server past another. Only the
    servers with a tool among the first REORDERED places are reordered: no other tool can reach those places."""
    if np.array_equal(fused, adjusted):
        return fused
    numbers, offset = [], 0
    for part, found in zip(parts, means, strict=True):
        # A part without vectors has no contrast: each of its tools on its own keeps its place.
        own = found.server_of if found is not None else np.arange(len(part.entries), dtype=np.int64)
        numbers.append(own + offset)
        offset += int(own.max(initial=-1)) + 1
    servers = np.concatenate(numbers)
    first = np.argpartition(-fused, REORDERED)[:REORDERED] if len(fused) > REORDERED else np.arange(len(fused))
    chosen = np.zeros(offset, dtype=bool)
    chosen[servers[first]] = True
    tools = np.flatnonzero(chosen[servers])
    by_adjusted = tools[np.lexsort((-adjusted[tools], servers[tools]))]  # grouped by server, best first in each
    by_fused = tools[np.lexsort((-fused[tools], servers[tools]))]
    reordered = fused.copy()
    reordered[by_adjusted] = fused[by_fused]
    return reordered


def _server_lift(
    parts: Sequence[ToolIndex],
    means: Sequence[ServerMeans | None],
    near: Sequence[Array | None],
    params: SearchParams,
) -> Scores:
    """`server_meaning_lift` per standard deviation that a tool's server is nearer the query than the average
    server (`near`: each part's servers' cosine to the query); nothing with fewer than three servers, where such a
    spread says nothing."""
    lift = np.zeros(sum(len(part.entries) for part in parts))
    known = [similarity for similarity in near if similarity is not None]
    if params.server_meaning_lift <= 0 or sum(len(similarity) for similarity in known) < 3:
        return lift
    similarity = np.concatenate(known).astype(np.float64)
    spread = float(similarity.std())
    if spread <= 0:
        return lift
    above = np.maximum((similarity - similarity.mean()) / spread, 0.0)
    start = offset = 0
    for part, found in zip(parts, means, strict=True):
        if found is not None:
            lift[start : start + len(part.entries)] = params.server_meaning_lift * above[offset + found.server_of]
            offset += len(found.centroids)
        start += len(part.entries)
    return lift
