"""Tool arguments are checked against a schema's regular expressions on RE2 alone: no keyword that runs a pattern
(`pattern`, `patternProperties`, `additionalProperties` beside them, `propertyNames`, `unevaluatedProperties`)
reaches Python's backtracking `re`, a pattern RE2 cannot compile is skipped with one log line, and strings past
the cap are not matched."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest

from app.common import schema_check
from app.common.schema_check import MAX_CHECKED_CHARS, first_error

EVIL = r"^(a+)+$"
HOSTILE = "a" * 40 + "!"  # 2^40 steps for a backtracking engine


@pytest.fixture(autouse=True)
def no_backtracking(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Python's `re` refuses the hostile pattern: any validator that hands it there fails the test at once."""
    seen: list[str] = []

    def guard(original: Callable[..., Any]) -> Callable[..., Any]:
        def checked(pattern: Any, *args: Any, **kwargs: Any) -> Any:
            if isinstance(pattern, str) and "(a+)+" in pattern:
                seen.append(pattern)
                raise AssertionError(f"pattern {pattern!r} reached the backtracking engine")
            return original(pattern, *args, **kwargs)

        return checked

    for name in ("search", "match", "fullmatch", "compile", "findall", "finditer"):
        monkeypatch.setattr(re, name, guard(getattr(re, name)))
    schema_check.compiled.cache_clear()
    return seen


def _message(instance: Any, schema: dict[str, Any]) -> str | None:
    error = first_error(instance, schema)
    return None if error is None else error.message


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string", "pattern": EVIL},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string", "pattern": EVIL},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "string", "pattern": EVIL},
        {"type": "string", "pattern": EVIL},
    ],
)
def test_pattern_runs_on_re2_in_every_draft(schema: dict[str, Any]) -> None:
    assert _message(HOSTILE, schema) == f"{HOSTILE!r} does not match {EVIL!r}"
    assert first_error("aaaa", schema) is None


def test_every_keyword_that_matches_property_names_runs_on_re2() -> None:
    patterned = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}, "additionalProperties": False}
    assert _message({HOSTILE: 1}, patterned) == f"Additional properties are not allowed ({HOSTILE!r} was unexpected)"
    assert _message({"aaa": "x"}, patterned) == "'x' is not of type 'integer'"
    assert first_error({"aaa": 1}, patterned) is None
    named = {"type": "object", "propertyNames": {"pattern": EVIL}}
    assert _message({HOSTILE: 1}, named) == f"{HOSTILE!r} does not match {EVIL!r}"
    unevaluated = {"type": "object", "patternProperties": {EVIL: {}}, "unevaluatedProperties": False}
    assert first_error({HOSTILE: 1}, unevaluated) is None  # beside patternProperties it is left to the server
    assert _message({"b": 1}, {"properties": {"a": {}}, "unevaluatedProperties": False}) is not None


def test_a_pattern_re2_cannot_run_is_skipped_with_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": r"^(?!x)(a)\1$"}}}
    with caplog.at_level(logging.WARNING, "toolsift.schemas"):
        for _ in range(3):
            assert first_error({"s": "xyz"}, schema) is None
    lines = [record.getMessage() for record in caplog.records if record.name == "toolsift.schemas"]
    assert len(lines) == 1 and "not checked: RE2 cannot run it" in lines[0]


def test_strings_past_the_cap_are_not_matched_and_broken_schemas_check_nothing() -> None:
    schema = {"type": "string", "pattern": "^a+$"}
    assert first_error("b" * 10, schema) is not None
    assert first_error("b" * (MAX_CHECKED_CHARS + 1), schema) is None
    assert first_error({"x": 1}, {"type": "no-such-type"}) is None
    assert first_error("\udc00", schema) is None  # a lone surrogate: not UTF-8, so not RE2's to match
