"""Validation errors as one line each, naming the key: what is wrong and, for a misspelt key, what was meant.

pydantic says where and what; these lines say it in the config's own words (`mcpServers.weather.arg: unknown
key; did you mean 'args'?`), so the fix is in the message.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Union

from pydantic import BaseModel, ValidationError

from app.config.mcp import ExcludeSpec

INTERNAL = frozenset({"unset_env", "from_env", "base_dir", "notes"})  # set by the loader, never by a file


def describe(exc: ValidationError, root: type[BaseModel]) -> list[str]:
    lines: list[str] = []
    for error in exc.errors():
        parts = [str(part) for part in error["loc"]]
        message = str(error["msg"]).removeprefix("Value error, ")
        tagged = [part for part in parts if _is_union_tag(part)]
        parts = [part for part in parts if not _is_union_tag(part)]
        if tagged and parts[0] == "tool_sets":
            message = 'expected true, false, a list of tool names, or {"exclude": [tool names]}'
        elif error["type"] == "extra_forbidden":
            message = "unknown key" + _did_you_mean(parts[-1], known_keys(root, error["loc"][:-1]))
        elif error["type"] == "bool_type":
            message = f"expected true or false (a JSON boolean), not {error['input']!r}"
        # Cross-section checks run on the whole config and already name their keys.
        prefix = f"{'.'.join(parts)}: " if parts else ""
        lines.extend(f"{prefix}{line}" for line in message.split("\n"))
    return list(dict.fromkeys(lines))


def known_keys(root: type[BaseModel], location: tuple[int | str, ...]) -> list[str]:
    """The keys the section at `location` takes (their JSON spelling), or [] when it is not a section."""
    annotation: Any = root
    for part in location:
        annotation = _inside(annotation, part)
        if annotation is None:
            return []
    model = _model(annotation)
    if model is None:
        return []
    return [field.alias or name for name, field in model.model_fields.items() if name not in INTERNAL]


def _did_you_mean(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:
        close = [name for name in known if name.lower() == key.lower().replace("-", "_")]
    return f"; did you mean {close[0]!r}?" if close else ""


def _inside(annotation: Any, part: int | str) -> Any:
    """The annotation of what `part` names inside a value of `annotation`: a field, a map's value, a list item."""
    model = _model(annotation)
    if model is not None:
        for name, field in model.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return None
    for option in _options(annotation):
        origin = typing.get_origin(option)
        if origin is dict and isinstance(part, str):
            return typing.get_args(option)[1]
        if origin is list and isinstance(part, int):
            return typing.get_args(option)[0]
    return None


def _model(annotation: Any) -> type[BaseModel] | None:
    for option in _options(annotation):
        if isinstance(option, type) and issubclass(option, BaseModel):
            return option
    return None


def _options(annotation: Any) -> list[Any]:
    """The members of a union (`X | None`), or the annotation itself; `Annotated` unwrapped."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [option for member in typing.get_args(annotation) for option in _options(member)]
    return [annotation]


def _is_union_tag(part: str) -> bool:
    """Whether a location part names a union's member (pydantic tags union errors with the member's type)."""
    return part in {"bool", "str", "int", "float", ExcludeSpec.__name__} or part.startswith(("list[", "literal["))
