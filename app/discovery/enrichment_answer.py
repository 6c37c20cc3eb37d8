"""The model's enrichment answer, read as untrusted text: one JSON object, each tool's purpose and phrasings
checked against a small schema, every string bounded and stripped of control characters.

The answer comes from an upstream model and ends up in the index, in the console and in log lines, so nothing of
it is taken on trust: an answer longer than `max_chars` is refused unread, a tool the batch did not ask about is
ignored, and an entry that breaks the schema is reported with why, for the one retry and then the log line.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.common.strict_json import JsonProblem, loads

MAX_PURPOSE_CHARS = 200
MAX_PHRASING_CHARS = 100
MIN_PHRASINGS, MAX_PHRASINGS = 3, 6
MAX_ANSWER_CHARS_PER_TOOL = 2048  # an answer for a batch is read up to this many characters a tool
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Enrichment:
    """What the model said a tool is for (`purpose`) and how one would search for it (`phrasings`)."""

    purpose: str
    phrasings: tuple[str, ...]

    @property
    def text(self) -> str:
        """The enrichment as one text: what the keyword field reads and the meaning vector is computed from."""
        return "; ".join((self.purpose.rstrip("."), *self.phrasings))

    def as_json(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "phrasings": list(self.phrasings)}


@dataclass(frozen=True)
class Answer:
    """A batch's answer: the tools it enriched, and why each other asked tool was not."""

    found: dict[str, Enrichment] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)


def clean(text: str) -> str:
    """`text` without control and format characters (escapes, bidi overrides, zero-width marks), its whitespace
    collapsed: a model's text is shown in terminals and logs and indexed as words."""
    kept = "".join(
        " " if char.isspace() else char
        for char in text
        if char.isspace() or unicodedata.category(char) not in ("Cc", "Cf", "Cs")
    )
    return _SPACES.sub(" ", kept).strip()


def check(value: Any) -> Enrichment | str:
    """One tool's entry as an `Enrichment`, or why it is not one."""
    if not isinstance(value, dict):
        return "its entry is not an object"
    purpose, phrasings = value.get("purpose"), value.get("phrasings")
    if not isinstance(purpose, str) or not clean(purpose):
        return "no purpose string"
    purpose = clean(purpose)
    if len(purpose) > MAX_PURPOSE_CHARS:
        return f"purpose longer than {MAX_PURPOSE_CHARS} characters"
    if not isinstance(phrasings, list) or not all(isinstance(phrasing, str) for phrasing in phrasings):
        return "phrasings is not a list of strings"
    kept = list(dict.fromkeys(cleaned for cleaned in map(clean, phrasings) if cleaned))
    if not MIN_PHRASINGS <= len(kept) <= MAX_PHRASINGS:
        return f"{len(kept)} distinct phrasings, not {MIN_PHRASINGS}-{MAX_PHRASINGS}"
    if any(len(phrasing) > MAX_PHRASING_CHARS for phrasing in kept):
        return f"a phrasing longer than {MAX_PHRASING_CHARS} characters"
    return Enrichment(purpose, tuple(kept))


def read_answer(text: str, names: Iterable[str]) -> Answer:
    """The answer `text` to a batch that asked about `names`: blocking (strict JSON), so a caller past a few
    kilobytes runs it in a thread. Whatever is wrong with the whole answer is every asked tool's problem."""
    asked = list(names)
    limit = MAX_ANSWER_CHARS_PER_TOOL * max(len(asked), 1)
    if len(text) > limit:
        return _all(asked, f"the answer was longer than {limit:,} characters")
    try:
        document = loads(_FENCE.sub("", text.strip()), max_values=64 * max(len(asked), 1))
    except (JsonProblem, ValueError, RecursionError) as exc:
        return _all(asked, f"the answer was not JSON ({_short(exc)})")
    if isinstance(document, dict) and isinstance(document.get("tools"), dict) and len(document) == 1:
        document = document["tools"]  # {"tools": {...}}, a wrapping models often add
    if not isinstance(document, dict):
        return _all(asked, "the answer was not a JSON object")
    return read_entries(document, asked)


def read_entries(document: Mapping[str, Any], asked: Iterable[str]) -> Answer:
    """Each asked tool's entry of a decoded answer, checked."""
    answer = Answer()
    for name in asked:
        if name not in document:
            answer.problems[name] = "the answer did not mention it"
            continue
        checked = check(document[name])
        if isinstance(checked, Enrichment):
            answer.found[name] = checked
        else:
            answer.problems[name] = checked
    return answer


def _all(names: list[str], problem: str) -> Answer:
    return Answer(problems=dict.fromkeys(names, problem))


def _short(exc: Exception) -> str:
    return clean(str(exc))[:80]
