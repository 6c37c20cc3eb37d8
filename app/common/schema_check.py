"""Checking a tool call's arguments against the tool's JSON schema, with work bounded by the arguments' size.

A schema comes from an MCP server, which may be hostile, and its `pattern`s from anyone: run on Python's
backtracking `re`, `^(a+)+$` against 30 characters takes seconds of the event loop. So every regular expression a
schema holds (`pattern`, the keys of `patternProperties`, and so `additionalProperties` and
`unevaluatedProperties` beside them) runs on RE2, whose time is linear in the text. A pattern RE2 cannot compile
(a backreference, a lookaround) or one longer than `MAX_PATTERN_CHARS` is not checked, with one log line, never
handed to a backtracking engine; nor is a string longer than `MAX_CHECKED_CHARS`. Either is left to the tool's
server, which checks its own arguments anyway.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from typing import Any

import jsonschema
import re2
from jsonschema import validators

log = logging.getLogger("toolsift.schemas")
MAX_CHECKED_CHARS = 100_000  # longer strings are not matched against a pattern (RE2 is linear; this bounds the line)
MAX_PATTERN_CHARS = 4096
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a pattern RE2 refuses is logged once, below, not on stderr


def first_error(instance: Any, schema: Any) -> jsonschema.ValidationError | None:
    """The first way `instance` breaks `schema` (jsonschema's best match), or None when it fits. A schema that is
    not valid JSON Schema checks nothing: the backend's broken schema is the backend's to enforce."""
    if not isinstance(schema, dict | bool):
        return None
    base = validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        base.check_schema(schema, format_checker=_schema_formats(base))
    except jsonschema.SchemaError:
        return None
    checker = _linear(base, _has_pattern_properties(schema))(schema)
    try:
        error: jsonschema.ValidationError | None = jsonschema.exceptions.best_match(checker.iter_errors(instance))
    except Exception as exc:  # an unresolvable $ref and the like: nothing this gateway can check
        log.warning("arguments not checked against the schema: %s", type(exc).__name__)
        return None
    return error


@functools.cache
def _schema_formats(base: type[Any]) -> jsonschema.FormatChecker:
    """The formats a schema itself is checked with, less `regex` (which would compile its patterns on `re`):
    a pattern is compiled when it is used, on RE2."""
    formats = jsonschema.FormatChecker(())
    formats.checkers = {name: check for name, check in base.FORMAT_CHECKER.checkers.items() if name != "regex"}
    return formats


def _has_pattern_properties(schema: Any) -> bool:
    """Whether `patternProperties` is anywhere in the schema (iteratively: a schema can nest deeper than Python's
    recursion limit)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "patternProperties" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Any | None:
    """`pattern` compiled by RE2, or None (logged once while it stays in this cache) when it will not be checked."""
    if len(pattern) > MAX_PATTERN_CHARS:
        log.warning("schema pattern not checked: %d characters, over %d", len(pattern), MAX_PATTERN_CHARS)
        return None
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        log.warning("schema pattern %r not checked: RE2 cannot run it (%s)", pattern[:200], _reason(exc))
        return None


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else ""
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


def matches(pattern: str, text: str) -> bool | None:
    """Whether `pattern` is found in `text` (JSON Schema patterns are not anchored); None when not checked."""
    regex = compiled(pattern)
    if regex is None or len(text) > MAX_CHECKED_CHARS:
        return None
    try:
        return regex.search(text) is not None
    except UnicodeError:  # a lone surrogate, which UTF-8 (RE2's text) cannot hold
        return None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and matches(pattern, instance) is False:
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def _matched_by(name: str, patterns: Any) -> bool:
    """A property name some `patternProperties` key matches; an unchecked pattern counts as matching (the
    property is then treated as the pattern's own, not as an extra one)."""
    return isinstance(patterns, dict) and any(matches(str(p), name) is not False for p in patterns)


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if matches(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [name for name in instance if name not in known and not _matched_by(name, patterns)]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(extra) for extra in sorted(extras))
        verb = "was" if len(extras) == 1 else "were"
        yield jsonschema.ValidationError(f"Additional properties are not allowed ({shown} {verb} unexpected)")


def _unchecked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    return iter(())


@functools.cache
def _linear(base: type[Any], pattern_properties: bool) -> type[Any]:
    """`base` (the schema's draft) with every keyword that runs a regular expression on RE2. jsonschema's
    `unevaluatedProperties` matches `patternProperties` keys on `re`, so beside them it is not checked."""
    replaced: dict[str, Any] = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    if pattern_properties:
        replaced["unevaluatedProperties"] = _unchecked
    extended: type[Any] = validators.extend(base, {key: c for key, c in replaced.items() if key in base.VALIDATORS})
    return extended
