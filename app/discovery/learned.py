"""Search that learns: what a deployment's own traffic taught it, as lifts in the ranking.

A learned pair is a query that found a tool the model then called successfully. A new query near a kept one (the
cosine of their vectors at least `threshold`; without vectors, the same words) lifts that tool by a bounded share
of the best score, stronger the nearer and the more recent. Two rules keep a caller from steering others:

- **The quorum rule**: another identity's pairs can lift a tool into a caller's top k only when at least `quorum`
  distinct identities (other than the caller) taught it. Below that, their lift stops just under the k-th score, so
  one key, however many pairs it sends, never moves a tool above rank k for anyone else. A caller's own pairs lift
  fully: its agents' needs are its own.
- **One voice per identity**: an identity's pairs for a tool count once, by its nearest one, whatever their number.

A tool outside the ranking (removed from the catalog, or outside the caller's tool set) is never lifted: lifts
apply to the entries being ranked only. Pure numpy over an immutable snapshot; the engine keeps the pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.core.catalog import ToolEntry
from app.discovery.discovery import Discovery
from app.discovery.encoder import Array
from app.discovery.hybrid import Scored
from app.discovery.index import tokenize

DAY = 86_400.0


@dataclass(frozen=True)
class LearningParams:
    """Chosen on the tuning intent groups (bench/learning.py); see docs/discovery.md."""

    threshold: float = 0.25  # cosine from which a kept query counts as the same need
    max_lift: float = 0.5  # the most a tool is lifted, as a share of the best score
    ramp: float = 0.1  # cosine above the threshold at which a pair lifts fully
    half_life_days: float = 30.0  # a pair's weight halves in this time without use
    quorum: int = 2  # distinct other identities needed to lift into a caller's top k


@dataclass(frozen=True, slots=True)
class LearnedPair:
    query: str  # as kept: redacted
    tool: str  # the exposed name, `{server}__{tool}`
    identity: str
    vector: Array | None  # the query's unit vector, or None when it was ranked by keywords alone
    uses: int
    last_used: float  # seconds since the epoch


@dataclass(frozen=True, slots=True)
class Lift:
    own: float  # the caller's own pairs' lift
    shared: float  # other identities' lift
    supporters: int  # distinct other identities with a pair near the query
    uses: int  # the uses of every pair near the query, for "learned from N uses"


class LearnedIndex:
    """Every kept pair of a deployment, as one matrix for a search to compare its query with."""

    def __init__(self, pairs: Sequence[LearnedPair], params: LearningParams, now: float) -> None:
        self.params = params
        self.pairs = list(pairs)
        self.weights = np.array([_decay(pair.last_used, now, params) for pair in self.pairs], dtype=np.float32)
        with_vector = [index for index, pair in enumerate(self.pairs) if pair.vector is not None]
        self._vector_rows = np.array(with_vector, dtype=np.int64)
        self._matrix = (
            np.stack([self.pairs[index].vector for index in with_vector]).astype(np.float32)  # type: ignore[misc]
            if with_vector
            else None
        )
        self._words = [frozenset(tokenize(pair.query)) if pair.vector is None else frozenset() for pair in self.pairs]

    def __len__(self) -> int:
        return len(self.pairs)

    def similar(self, query: str, vector: Array | None) -> list[tuple[LearnedPair, float, float]]:
        """The kept pairs near `query`: each with its similarity (the cosine of the two queries' vectors; 1 for
        the same words, where a pair has no vector) and its weight (nearness and recency, 0 to 1)."""
        scores = np.zeros(len(self.pairs), dtype=np.float32)
        if vector is not None and self._matrix is not None:
            scores[self._vector_rows] = self._matrix @ vector.astype(np.float32)
        words = frozenset(tokenize(query))
        if words:
            for index, kept in enumerate(self._words):
                if kept and kept == words:
                    scores[index] = 1.0
        weights = self.weights
        near = np.flatnonzero(scores >= self.params.threshold)
        return [
            (self.pairs[at], float(scores[at]), self._strength(float(scores[at])) * float(weights[at])) for at in near
        ]

    def _strength(self, similarity: float) -> float:
        """0 at the threshold (a step to 1 without a ramp), 1 from `ramp` above it."""
        ramp = self.params.ramp
        return 1.0 if ramp <= 0 else min(1.0, max(0.0, (similarity - self.params.threshold) / ramp))

    def lifts(self, query: str, vector: Array | None, caller: str) -> dict[str, Lift]:
        """Per tool, what the pairs near `query` lift it by, the caller's own apart from everyone else's: the
        caller's pairs add up (several kept phrasings of one need agree), another identity's count once, by its
        nearest."""
        own: dict[str, float] = {}
        voices: dict[str, dict[str, float]] = {}  # tool -> other identity -> its nearest pair's weight
        uses: dict[str, int] = {}
        for pair, _, weight in self.similar(query, vector):
            uses[pair.tool] = uses.get(pair.tool, 0) + pair.uses
            if pair.identity == caller:
                own[pair.tool] = min(1.0, own.get(pair.tool, 0.0) + weight)
            else:
                voice = voices.setdefault(pair.tool, {})
                voice[pair.identity] = max(voice.get(pair.identity, 0.0), weight)
        limit = self.params.max_lift
        return {
            tool: Lift(
                limit * own.get(tool, 0.0),
                limit * max(voices.get(tool, {}).values(), default=0.0),
                len(voices.get(tool, {})),
                count,
            )
            for tool, count in uses.items()
        }


@dataclass(frozen=True)
class LearnedView:
    """What one caller's search reads of the learned pairs."""

    index: LearnedIndex
    caller: str

    def lifts(self, query: str, vector: Array | None) -> dict[str, Lift]:
        return self.index.lifts(query, vector, self.caller) if len(self.index) else {}


def apply_lifts(
    ranked: list[Scored],
    lifts: dict[str, Lift],
    k: int,
    quorum: int,
    entry_of: Callable[[str], ToolEntry | None],
    counts: Callable[[str], bool] = lambda name: True,
) -> list[Scored]:
    """`ranked` with each tool's lift added and reordered. A lifted tool the ranking left out (no word of the
    query, too far in meaning) joins at the bottom first, on the caller's own pairs or a quorum's only; `entry_of`
    finds it among the tools being ranked, and one it cannot find is not lifted. `counts` says which tools take
    one of the top k slots (not those already loaded). The quorum rule caps other identities' lift below the
    k-th score."""
    if not lifts:
        return ranked
    present = {found.entry.name for found in ranked}
    floor = min((found.score for found in ranked), default=0.0)
    trusted = [name for name, lift in lifts.items() if lift.own > 0 or lift.supporters >= quorum]
    joined = [ranked_entry(entry, floor) for name in trusted if name not in present and (entry := entry_of(name))]
    everything = [*ranked, *joined]
    scale = max((abs(found.score) for found in ranked), default=0.0) or 1.0
    slots = [found.score for found in ranked if counts(found.entry.name)]
    kth = slots[k - 1] if len(slots) >= k else -math.inf
    lifted = []
    for found in everything:
        lift = lifts.get(found.entry.name)
        if lift is None:
            lifted.append(found)
            continue
        own = found.score + lift.own * scale
        shared = found.score + lift.shared * scale
        if lift.supporters < quorum:  # the quorum rule: no move into (or within) the top k on too few words
            below = math.nextafter(kth, -math.inf)
            shared = found.score if found.score >= kth else min(shared, max(found.score, below))
        lifted.append(replace(found, score=max(own, shared), learned=lift.uses))
    return sorted(lifted, key=lambda found: -found.score)


def learned_ranking(
    ranked: Iterator[Scored],
    discovery: Discovery,
    text: str,
    required: Sequence[str],
    allowed: set[int] | None,
    limit: int,
    skip: Callable[[str], bool],
    learned: LearnedView | None,
) -> Iterator[Scored]:
    """`ranked`, with the lifts of learned pairs near the query when there are any (else as it was, lazily)."""
    if learned is None:
        return ranked
    semantic = discovery.semantic
    lifts = learned.lifts(text, semantic.query_vector(text) if semantic is not None else None)
    if not lifts:
        return ranked

    def entry_of(name: str) -> ToolEntry | None:
        entry = discovery.by_name.get(name)
        return entry if entry is not None and not required and (allowed is None or id(entry) in allowed) else None

    pool = [scored for scored in ranked if allowed is None or id(scored.entry) in allowed]
    quorum = learned.index.params.quorum
    return iter(apply_lifts(pool, lifts, limit, quorum, entry_of, lambda name: not skip(name)))


def ranked_entry(entry: ToolEntry, score: float) -> Scored:
    return Scored(entry, score, 0.0)


def _decay(last_used: float, now: float, params: LearningParams) -> float:
    age = max(0.0, now - last_used) / DAY
    return float(0.5 ** (age / params.half_life_days))


def remembered(pairs: Iterable[LearnedPair], now: float, params: LearningParams) -> list[LearnedPair]:
    """The pairs still worth keeping: those whose weight has not decayed below 1/16 (four half-lives)."""
    horizon = 4 * params.half_life_days * DAY
    return [pair for pair in pairs if now - pair.last_used <= horizon]
