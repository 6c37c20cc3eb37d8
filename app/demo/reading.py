"""What the demo model reads in a user's message: content words (stemmed, for matching tool definitions), the
separate tasks of one request, and the facts arguments are filled from (numbers with units, dates, codes, ...).

Plain regular expressions on purpose: the demo must be predictable and say what it could not understand, never
guess like a real model would.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import snowballstemmer

STOP_WORDS = frozenset(
    """a about after again all also am an and any are as at be been before but by can could do does for from get
    give had has have he her here him his how i if in into is it its just let me might more most much my no not
    now of off on once only or our out over please s she should show so some such tell than that the their them
    then there these they this those to too up us very want was we were what whats when where which while who why
    will with would you your yours today right""".split()
)
# Small talk: a message of only these is answered without looking for tools.
CHAT_WORDS = frozenset(
    """hello hi hey thanks thank bye goodbye ok okay yes yeah nope good morning evening afternoon night great cool
    nice who doing fine""".split()
)
NOUN_STARTS = frozenset({"a", "an", "the", "my", "your", "our", "their", "its", "his", "her", "some", "any"})
# Words that point back at an earlier step's outcome ("save the result as a note").
REFERENCES = frozenset({"result", "results", "it", "that", "this", "them", "answer", "output", "outcome"})

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})\b|\b(\d{1,2})\s*(am|pm)\b", re.IGNORECASE)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s'\"<>]+")
_DICTATED = re.compile(r"^\s*[A-Za-z][\w ]{0,30}:\s+(\S.*)", re.DOTALL)  # no backtracking over long texts
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<!\w)'([^']+)'(?!\w)|`([^`]+)`")
_CODE = re.compile(r"\b[A-Z]{2,5}\b")
_NUMBER = re.compile(r"([$€£]\s?)?(?<![\w.])(\d[\d,]*(?:\.\d+)?)(?!\d)(\s*%|\s*[A-Za-z]+)?")
_WORD_QUANTITY = re.compile(r"\b(an?|one|half an?)\s+(?:[a-z]+\s+)?(second|minute|hour|day|week|month|year)s?\b", re.I)
_PLACE = re.compile(r"\b(?:in|for|at|from|of|near)\s+((?:[A-Z][a-z]+)(?:\s+[A-Z][a-z]+)*)")
_SPLIT = re.compile(r"\s*(?:[.;!?]\s+|,?\s+(?:and then|then|and|also)\s+)", re.IGNORECASE)

UNITS = {
    "%": "percent", "percent": "percent", "pct": "percent",
    "second": "seconds", "seconds": "seconds", "sec": "seconds", "secs": "seconds", "s": "seconds",
    "minute": "minutes", "minutes": "minutes", "min": "minutes", "mins": "minutes",
    "hour": "hours", "hours": "hours", "hr": "hours", "hrs": "hours", "h": "hours",
    "day": "days", "days": "days", "week": "weeks", "weeks": "weeks",
    "month": "months", "months": "months", "year": "years", "years": "years", "yr": "years", "yrs": "years",
}  # fmt: skip
TIME_IN_SECONDS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}


@cache
def _stemmer() -> Any:
    return snowballstemmer.stemmer("english")


def stem(word: str) -> str:
    return str(_stemmer().stemWord(word.lower()))


def words(text: str) -> list[str]:
    """Lower-case words of `text`, possessives and contractions folded ("what's" -> "whats")."""
    found = [re.sub(r"'s$", "", word.lower()).replace("'", "") for word in _WORD.findall(text)]
    return [word.strip("-") for word in found if word.strip("-")]


def content_words(text: str) -> list[str]:
    """The words that say what is wanted, in order, once each: what a model would put in a search query."""
    return list(dict.fromkeys(word for word in words(text) if word not in STOP_WORDS and len(word) > 1))


def stems(text: str) -> set[str]:
    return {stem(word) for word in content_words(text)}


def split_tasks(message: str) -> list[str]:
    """A request's separate asks ("Convert X and save the result as a note" is two). Quoted text is never split;
    a piece that names fewer than two things ("London and Paris") or starts like a noun phrase ("and an md5
    digest") stays with the one before it."""
    quoted: list[str] = []

    def hide(match: re.Match[str]) -> str:
        quoted.append(match[0])
        return f"\x00{len(quoted) - 1}\x00"

    tasks: list[str] = []
    for piece in _SPLIT.split(_QUOTED.sub(hide, message.replace("\x00", " ").strip())):
        piece = re.sub("\x00(\\d+)\x00", lambda match: quoted[int(match[1])], piece).strip(" .;!?")
        if not piece:
            continue
        first = piece.split()[0].lower()
        if tasks and (len(content_words(piece)) < 2 or first in NOUN_STARTS):
            tasks[-1] = f"{tasks[-1]} and {piece}"
        else:
            tasks.append(piece)
    return tasks or [message.strip()]


@dataclass
class Quantity:
    value: float
    unit: str  # "percent", a time unit, "money", or the word that followed the number ("" for none)
    before: str  # the word just before the number ("to", "over", ...)


@dataclass
class Facts:
    """Everything in one task an argument can be filled from."""

    text: str
    words: list[str]
    dates: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    dictated: str | None = None  # what follows "Note:" (a short label, then a colon): the text to write down
    codes: list[tuple[str, str]] = field(default_factory=list)  # (code, the word before it)
    quantities: list[Quantity] = field(default_factory=list)
    places: list[str] = field(default_factory=list)

    @property
    def refers_back(self) -> bool:
        return any(word in REFERENCES for word in self.words)


def read_facts(text: str) -> Facts:
    facts = Facts(text=text, words=words(text))
    dictated = _DICTATED.match(text)
    facts.dictated = dictated[1].strip().rstrip(".") if dictated else None
    rest = text
    for match in _QUOTED.finditer(text):
        facts.quoted.append(next(group for group in match.groups() if group is not None))
    rest = _QUOTED.sub(" ", rest)
    facts.emails = _EMAIL.findall(rest)
    facts.urls = _URL.findall(rest)
    rest = _URL.sub(" ", _EMAIL.sub(" ", rest))
    facts.dates = _DATE.findall(rest)
    rest = _DATE.sub(" ", rest)
    for match in _TIME.finditer(rest):
        hour, minute = (int(match[1]), int(match[2])) if match[1] else (int(match[3]) % 12, 0)
        if match[4] and match[4].lower() == "pm":
            hour += 12
        if hour < 24 and minute < 60:
            facts.times.append(f"{hour:02d}:{minute:02d}")
    rest = _TIME.sub(" ", rest)
    facts.codes = [(match[0], _word_before(rest, match.start())) for match in _CODE.finditer(rest)]
    facts.quantities = _quantities(rest)
    facts.places = list(dict.fromkeys(match[1] for match in _PLACE.finditer(rest)))
    return facts


def _quantities(text: str) -> list[Quantity]:
    found: list[Quantity] = []
    for match in _NUMBER.finditer(text):
        symbol, number, after = match[1], match[2].replace(",", ""), (match[3] or "").strip()
        try:
            value = float(number)
        except ValueError:
            continue
        unit = UNITS.get(after.lower(), "")
        if symbol or _CODE.fullmatch(after):
            unit = "money"
        elif not unit and after and after.lower() not in STOP_WORDS:
            unit = after.lower()
        found.append(Quantity(value, unit, _word_before(text, match.start())))
    for match in _WORD_QUANTITY.finditer(text):
        value = 0.5 if match[1].lower().startswith("half") else 1.0
        found.append(Quantity(value, UNITS[match[2].lower()], _word_before(text, match.start())))
    return found


def _word_before(text: str, position: int) -> str:
    before = _WORD.findall(text[:position][-40:])
    return before[-1].lower() if before else ""
