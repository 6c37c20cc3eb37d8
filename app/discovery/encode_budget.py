"""What meaning search may spend on one request's queries: the tokens the encoder reads for them.

Encoding a query costs CPU in proportion to its tokens (about 1 ms per token here, a query read up to
`semantic.max_tokens` and each of its sentences too), and a model reply may ask many long queries. So each request
gets `semantic.query_tokens_per_request` tokens of encoding; a query past that is ranked by its keywords alone, and
its result says so. Counting is the tokenizer's (linear, in the worker thread); an endpoint backend's tokens are
estimated from the length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.discovery.embeddings import Embedder, LocalEmbedder
from app.discovery.hybrid import sentences

DEFAULT_QUERY_TOKENS = 1024  # `semantic.query_tokens_per_request`: about 0.6 s of one core here
CHARS_PER_TOKEN = 4  # an estimate for endpoint backends, whose tokenizer is not ours
ROW_OVERHEAD = 2  # the [CLS] and [SEP] tokens of every encoded text (the local tokenizer counts them itself)


@dataclass
class EncodeBudget:
    """The encoder tokens a request may spend on its queries, and the queries it ranked by keywords alone: `over`
    when the tokens were spent, `busy` when the encoder was busy past `semantic.query_wait_seconds`."""

    tokens: int
    spent: int = 0
    over: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)

    def note(self, texts: Sequence[str]) -> str | None:
        """What a search result says of those of its `texts` ranked by keywords alone, or None."""
        over = [text for text in texts if text in self.over]
        busy = [text for text in texts if text in self.busy and text not in over]
        notes = []
        if over:
            notes.append(
                f"Ranked by keywords alone, not by meaning: {_listed(over)}. This request used the query tokens the "
                f"gateway encodes for one request ({self.tokens}, semantic.query_tokens_per_request)."
            )
        if busy:
            notes.append(f"Ranked by keywords alone, not by meaning: {_listed(busy)}. The query encoder was busy.")
        return "\n".join(notes) or None

    def take(self, cost: int) -> bool:
        if self.spent + cost > self.tokens:
            return False
        self.spent += cost
        return True


def _listed(texts: Sequence[str], most: int = 5, width: int = 60) -> str:
    shown = [repr(text if len(text) <= width else text[: width - 3] + "...") for text in texts[:most]]
    return ", ".join(shown) + (f" and {len(texts) - most} more" if len(texts) > most else "")


def query_cost(backend: Embedder, text: str, sentence_parts: bool) -> int:
    """The tokens the encoder reads for `text`: the whole, each read up to the backend's query length, and each of
    its sentences when a task of several is also ranked per sentence."""
    parts = [text, *(sentences(text) if sentence_parts else [])]
    if isinstance(backend, LocalEmbedder):
        most = backend.query_tokens
        return sum(min(backend.encoder.token_count(part), most) for part in parts)
    return sum(len(part) // CHARS_PER_TOKEN + ROW_OVERHEAD for part in parts)
