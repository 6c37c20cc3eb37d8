"""Filling a tool's arguments from what the user said, by reading the tool's JSON schema as a model would: a
parameter's name, type, enum, bounds and description decide which fact of the message it takes. A required
parameter nothing fits stays missing, and the demo model asks for it instead of inventing a value.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from app.demo.reading import STOP_WORDS, TIME_IN_SECONDS, UNITS, Facts, stem, words

TITLE_NAMES = {"title", "name", "subject", "summary", "label", "heading", "topic"}
BODY_NAMES = {"body", "text", "content", "message", "description", "note", "details", "input"}
TO_WORDS = {"to", "into", "in"}


@dataclass
class Context:
    """What earlier steps of the same request produced, for a task that refers back ("save the result")."""

    previous_task: str = ""
    previous_result: str = ""


@dataclass
class Filled:
    arguments: dict[str, Any] = field(default_factory=dict)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (parameter, its description)
    used: int = 0  # arguments taken from the message, not defaults


def fill(schema: dict[str, Any], facts: Facts, context: Context) -> Filled:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return Filled()
    required = [name for name in _list(schema.get("required")) if isinstance(name, str) and name in properties]
    order = required + [name for name in properties if name not in required]
    filled = Filled()
    taken: set[str] = set()  # facts already used, so two parameters never get the same one
    for name in order:
        spec = properties[name] if isinstance(properties[name], dict) else {}
        value = _value_for(name, spec, facts, context, taken)
        if value is not None:
            filled.arguments[name] = value
            filled.used += 1
        elif name in required:
            filled.missing.append((name, str(spec.get("description") or _kind(spec) or "")))
    return filled


def _kind(spec: dict[str, Any]) -> str:
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), None)
    if isinstance(kind, str):
        return kind
    for option in _list(spec.get("anyOf")) or _list(spec.get("oneOf")):
        if isinstance(option, dict) and _kind(option) not in ("", "null"):
            return _kind(option)
    return "string" if "enum" in spec else ""


def _value_for(name: str, spec: dict[str, Any], facts: Facts, context: Context, taken: set[str]) -> Any:
    about = f"{name.replace('_', ' ')} {spec.get('description') or ''}".lower()
    label = set(words(name.replace("_", " ")))
    kind = _kind(spec)
    choice = _choice(spec, facts)
    if choice is not None:
        return choice
    if kind in ("number", "integer"):
        return _number(about, spec, kind, facts, taken)
    if kind == "array":
        items = spec.get("items")
        if "email" in about or (isinstance(items, dict) and "email" in str(items.get("description", "")).lower()):
            return list(facts.emails) or None
        return None
    if kind != "string":
        return None
    if "date" in about or "yyyy-mm-dd" in about:
        return _date(label, about, facts)
    for wanted, found in (("email", facts.emails), ("url", facts.urls)):
        if wanted in about:
            return _first_free(found, taken)
    if re.search(r"\b(city|location|place|region|town|country)\b", about):
        return _first_free(facts.places, taken)
    if re.search(r"\b(code|symbol|ticker|currency)\b", about):
        return _code(label, facts, taken)
    return _text(label, facts, context, taken)


def _choice(spec: dict[str, Any], facts: Facts) -> Any:
    """An enum value, or one of the quoted options a description lists ("'work', 'personal' or 'team'"), that the
    user named."""
    options: list[Any] = list(_list(spec.get("enum")))
    for option in _list(spec.get("anyOf")):
        if isinstance(option, dict):
            options += _list(option.get("enum")) or ([option["const"]] if "const" in option else [])
    description = str(spec.get("description") or "")
    if not options and _kind(spec) == "string" and not re.search(r"\be\.g\.|for example|such as", description):
        options = re.findall(r"'([^']+)'", description)
    said = " ".join(facts.words)
    for option in options:
        if isinstance(option, str) and re.search(rf"\b{re.escape(option.lower())}\b", said):
            return option
    return None


def _date(label: set[str], about: str, facts: Facts) -> str | None:
    if not facts.dates:
        return None
    last = bool(label & {"end", "last", "until", "to", "finish"})
    day = facts.dates[-1] if last else facts.dates[0]
    if "time" in about and "iso 8601" in about and "yyyy-mm-dd" not in about:
        return f"{day}T{facts.times[0]}:00" if facts.times else None  # a datetime needs the time as well
    return day


def _code(label: set[str], facts: Facts, taken: set[str]) -> str | None:
    """Codes in order; a code after "to"/"into"/"in" goes to a `to`/`target` parameter, the others to the rest."""
    wants_target = bool(label & {"to", "target", "dest", "destination", "into"})
    for code, before in facts.codes:
        if code not in taken and (before in TO_WORDS) == wants_target:
            taken.add(code)
            return code
    return None


def _number(about: str, spec: dict[str, Any], kind: str, facts: Facts, taken: set[str]) -> float | int | None:
    """A number in the unit the parameter names (percent, years, minutes, ...; "per year" names none), converted
    between time units; a parameter without a unit takes the next plain or money number."""
    plain = re.sub(r"\bper \w+", " ", about)
    unit = "percent" if re.search(r"percent|\brate\b", plain) else ""
    unit = unit or next((UNITS[word] for word in re.findall(r"[a-z]+", plain) if word in UNITS and len(word) > 2), "")
    chosen: tuple[int, float] | None = None
    for index, quantity in enumerate(facts.quantities):
        if f"q{index}" in taken:
            continue
        value = _convert(quantity.value, quantity.unit, unit) if unit else None
        counted = quantity.unit not in (*UNITS.values(), "money", "")
        if value is None and not unit and counted and quantity.unit in about:
            value = quantity.value  # "10 shares" for a parameter about shares
        if value is None and not unit and quantity.unit in ("", "money"):
            value = quantity.value
        if value is not None and _in_bounds(value, spec):
            chosen = (index, value)
            break
    if chosen is None:
        return None
    taken.add(f"q{chosen[0]}")
    value = chosen[1]
    return int(value) if float(value).is_integer() else value


def _convert(value: float, have: str, want: str) -> float | None:
    if have == want:
        return value
    if have in TIME_IN_SECONDS and want in TIME_IN_SECONDS:
        return value * TIME_IN_SECONDS[have] / TIME_IN_SECONDS[want]
    return None


def _in_bounds(value: float, spec: dict[str, Any]) -> bool:
    checks = [spec, *[option for option in _list(spec.get("anyOf")) if isinstance(option, dict)]]
    for check in checks:
        if isinstance(check.get("minimum"), int | float) and value < check["minimum"]:
            return False
        if isinstance(check.get("maximum"), int | float) and value > check["maximum"]:
            return False
        if isinstance(check.get("exclusiveMinimum"), int | float) and value <= check["exclusiveMinimum"]:
            return False
    return True


def _text(label: set[str], facts: Facts, context: Context, taken: set[str]) -> str | None:
    """Free text: what follows a word naming the parameter, else a quoted string the user gave; or, when the task
    refers back, the earlier step and its result."""
    identifier = bool(label & {"id", "ids", "key", "uuid"})
    named = _named(label, facts, taken)  # "tagged work" for `tag`; "order o-1" for `order_id`
    if named is not None and (not identifier or re.search(r"\d", named)):
        return named
    if identifier:
        return None  # an identifier is one the user wrote (with a digit) or comes from an earlier result
    quoted = _first_free(facts.quoted, taken)
    if quoted is not None:
        return quoted
    if facts.dictated and label & (TITLE_NAMES | BODY_NAMES):
        return facts.dictated[:80] if label & TITLE_NAMES else facts.dictated  # a title and a body may say the same
    if facts.refers_back and context.previous_result:
        if label & TITLE_NAMES:
            return context.previous_task[:80]
        if label & BODY_NAMES:
            return f"{context.previous_task}: {compact(context.previous_result)}"
    return None


_NAMED = re.compile(r"\b([A-Za-z][\w-]*)(?=\s+(?:\"([^\"]+)\"|'([^']+)'|([\w-]+)))")


def _named(label: set[str], facts: Facts, taken: set[str]) -> str | None:
    """What follows a word that names the parameter: "tagged work" for `tag`, "body 'milk, eggs'" for `body`."""
    wanted = {stem(word) for word in label if word not in STOP_WORDS}
    for match in _NAMED.finditer(facts.text):
        value = match[2] or match[3] or match[4]
        if stem(match[1]) in wanted and value.lower() not in STOP_WORDS and value not in taken:
            taken.add(value)
            return value
    return None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _first_free(values: list[str], taken: set[str]) -> str | None:
    for value in values:
        if value not in taken:
            taken.add(value)
            return value
    return None


def compact(result: str, limit: int = 1500) -> str:
    """A tool result on one line: JSON re-serialised compactly, anything else as is; long ones cut."""
    try:
        text = json.dumps(json.loads(result), ensure_ascii=False)
    except (ValueError, TypeError):
        text = " ".join(result.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
