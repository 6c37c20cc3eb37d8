"""A JSON syntax error as a person can fix it: the line, a caret under the spot, and the usual cause.

Config files are written by hand, often from a snippet that was JavaScript, JSON5 or Python: a comma after the
last item, a comment, single quotes, a key without quotes, `True` for `true`. The decoder's own message names
what it expected, not what is wrong; the hint names the mistake.
"""

from __future__ import annotations

import json


def describe(source: str, text: str, error: json.JSONDecodeError) -> list[str]:
    """The problem lines for `error` in `text` (the file named `source`)."""
    lines = [f"{source}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"]
    rows = text.splitlines()
    line, column = error.lineno, error.colno
    if text.strip() and error.pos >= len(text.rstrip()):  # at the end, past a last line break: its last text
        lines = [f"{source}: invalid JSON at the end of the file: {error.msg}"]
        line = len(text.rstrip().splitlines())
        column = len(rows[line - 1].rstrip()) + 1
    row = rows[line - 1] if text.strip() and line <= len(rows) else ""
    if row.strip():
        number = f"{line:>5}"
        lines += [f"{number} | {row.rstrip()}", f"{' ' * len(number)} | {' ' * (column - 1)}^"]
    hint = _hint(text, error)
    if hint:
        lines.append(f"hint: {hint}")
    return lines


def _hint(text: str, error: json.JSONDecodeError) -> str | None:
    at, message = text[error.pos : error.pos + 2], error.msg
    before = text[: error.pos].rstrip()
    if not text.strip():
        return "the file is empty: a config is one JSON object, at least {}"
    if error.pos >= len(text.rstrip()) and not message.startswith("Extra data"):
        return "the file ends too early: a closing } or ] is missing"
    if at.startswith(("//", "/*", "#")):
        return 'a comment: JSON has none; remove it (a server\'s note can go in its "description")'
    if at[:1] in "}]" and before.endswith(","):
        line = text.count("\n", 0, len(before)) + 1
        return f"a comma after the last item (line {line}): JSON allows none; remove it"
    if at.startswith("'"):
        return "single quotes: JSON strings and keys take double quotes"
    if message.startswith("Expecting property name") and (at[:1].isalpha() or at[:1] == "_"):
        return "a key without quotes: JSON keys take double quotes"
    if message.startswith("Expecting value"):
        word = text[error.pos :].split(None, 1)[0][:9] if text[error.pos :].strip() else ""
        if word.rstrip(",}]") in ("True", "False", "None", "undefined", "NaN"):
            return "JSON's literals are true, false and null, in lower case"
        if error.pos >= len(text.rstrip()):
            return "the file ends too early: a closing } or ] is missing"
    if message.startswith("Expecting ',' delimiter") and before and text[: error.pos].count("\n") > before.count("\n"):
        line = before.count("\n") + 1
        return f"a comma missing at the end of line {line}, between two items"
    if message.startswith("Extra data"):
        return "text after the end of the top-level object: an extra closing brace, or a second object?"
    if message.startswith("Invalid control character"):
        return "a line break or tab inside a string: write it as \\n or \\t"
    if message.startswith("Invalid \\escape"):
        return "a backslash in a string: write it twice (C:\\\\path), or use forward slashes"
    if message.startswith("Unterminated string"):
        return "a string without its closing double quote"
    return None
