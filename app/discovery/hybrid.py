"""Keyword and semantic scores fused into one ranking, per query.

score = (1 - w) * lexical / best lexical + w * cosine, where w depends on the query's length: short keyword-like
queries ("storm warnings", "mkdir") lean on meaning, long task descriptions on words (see SearchParams). Scores of
every part of a merged index are fused together, so a request's own tools and the shared catalog compare fairly;
a part without vectors (a client's own tools are not embedded) counts the median similarity of the others, so
its tools rank by their keywords. With no keyword match at all, the nearest tools by meaning are still offered,
marked weak.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from app.discovery.encoder import Array
from app.discovery.params import SearchParams
from app.engine.catalog import ToolEntry

if TYPE_CHECKING:
    from app.discovery.index import ToolIndex


@dataclass(frozen=True)
class Scored:
    entry: ToolEntry
    score: float
    lexical: float
    semantic: float | None = None  # cosine similarity, when the search was hybrid
    weak: bool = False  # found by meaning alone: no word of the query matched any tool


def hybrid_rank(
    parts: Sequence[ToolIndex],
    matrices: Sequence[Array | None],
    text: str,
    required: Sequence[str],
    vector: Array,
    params: SearchParams,
) -> Iterator[Scored]:
    lexical = np.concatenate([part.scores(text, required) for part in parts])
    dense = np.concatenate(
        [
            matrix @ vector if matrix is not None else np.full(len(part.entries), np.nan)
            for part, matrix in zip(parts, matrices, strict=True)
        ]
    ).astype(np.float64)
    measured = ~np.isnan(dense)
    dense[~measured] = float(np.median(dense[measured])) if measured.any() else 0.0
    entries = [entry for part in parts for entry in part.entries]
    best = float(lexical.max(initial=0.0))
    weak = best <= 0.0
    if weak:
        if required:
            return
        fused = np.where(measured & (dense >= params.weak_match_floor), dense, -np.inf)
    else:
        weight = params.semantic_weight(len(text.split()))
        fused = (1 - weight) * lexical / best + weight * dense
        if required:
            fused[lexical <= 0.0] = -np.inf  # a tool without a required word is out, whatever it means
    candidates = np.flatnonzero(np.isfinite(fused))
    for position in candidates[np.argsort(-fused[candidates], kind="stable")]:
        similarity = float(dense[position]) if measured[position] else None
        yield Scored(entries[position], float(fused[position]), float(lexical[position]), similarity, weak)
