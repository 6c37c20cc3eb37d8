"""Decode a client's JSON as the standard defines it, so that what Python's decoder tolerates cannot fail later.

Python accepts `NaN`, `Infinity`, numbers that overflow to infinity (`1e999`) and lone UTF-16 surrogates
(`"\\ud800"`); none of them can be encoded again for an upstream. It raises `RecursionError` on deep nesting
and `ValueError` past 4,300 integer digits; moderately deep nesting that it does accept can still exhaust the
stack when the body is encoded again. Each of these is a `JsonProblem` naming where it is, for a 400.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 128
# The C decoder holds the GIL while it builds values, so a body of millions of tiny values would stall every
# other request even in a worker thread; counting them first is a memchr over the bytes. 100,000 is beyond any
# real request (512 tools with schemas and 2,000 messages use a few tens of thousands).
MAX_VALUES = 100_000
MAX_INT_DIGITS = 4300
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_CONTAINERS = frozenset({dict, list})


class JsonProblem(ValueError):
    """Valid-looking JSON the gateway cannot carry; `path` is where (e.g. `messages[0].content`), if known."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class _Invalid:
    """Stands in for a value the decoder let through, until the walk finds where it is."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def loads(raw: bytes | str, max_values: int | None = MAX_VALUES) -> Any:
    """`json.loads`, but a `JsonProblem` for anything standard JSON (RFC 8259) or our encoder cannot carry."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if max_values is not None and raw.count(b",") + raw.count(b"[") + raw.count(b"{") > max_values:
        raise JsonProblem(f"holds more than {max_values:,} JSON values (arrays, objects and list items)")
    invalid: list[_Invalid] = []

    def mark(problem: str) -> _Invalid:
        invalid.append(_Invalid(problem))
        return invalid[-1]

    def number(text: str) -> float | _Invalid:
        value = float(text)
        return value if math.isfinite(value) else mark(f"is a number out of range ({text[:24]})")

    def integer(text: str) -> int | _Invalid:
        if len(text) - text.startswith("-") > MAX_INT_DIGITS:
            return mark(f"is an integer with more than {MAX_INT_DIGITS:,} digits")
        return int(text)

    def constant(name: str) -> _Invalid:
        return mark(f"is {name}, which is not JSON")

    try:
        value = json.loads(raw, parse_float=number, parse_int=integer, parse_constant=constant)
    except RecursionError:  # past about 990 levels; the walk below sets the limit
        raise JsonProblem(f"is nested more than {MAX_DEPTH} levels deep") from None
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _too_deep(value):
        raise JsonProblem(f"is nested more than {MAX_DEPTH} levels deep")
    if invalid or _SURROGATE_ESCAPE.search(raw):
        _find_invalid(value)
    return value


def _too_deep(value: Any) -> bool:
    """Nested deeper than MAX_DEPTH: one level at a time, containers only, stopping at the limit."""
    level = [value] if type(value) in _CONTAINERS else []
    for _ in range(MAX_DEPTH):
        if not level:
            return False
        level = [
            child
            for item in level
            for child in (item.values() if type(item) is dict else item)
            if type(child) in _CONTAINERS
        ]
    return bool(level)


def _find_invalid(value: Any) -> None:
    """Raise for the first invalid value or lone surrogate, with its path; iterative, so depth costs no stack."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Invalid):
            raise JsonProblem(item.problem, path or None)
        if isinstance(item, str) and not _encodable(item):
            raise JsonProblem("contains a lone UTF-16 surrogate, which is not valid Unicode", path or None)
        if isinstance(item, dict):
            for key, child in reversed(item.items()):
                if not _encodable(key):
                    raise JsonProblem("has a key with a lone UTF-16 surrogate, not valid Unicode", path or None)
                stack.append((child, f"{path}.{key}" if path else key))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(item))))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
