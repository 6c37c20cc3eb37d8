"""What every front's request parsing shares: a strictly parsed JSON body, the gateway's size limits, and
validation failures as a 400 that names the parameter."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from app.common import strict_json
from app.common.errors import GatewayError

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


def load_body(raw_body: bytes) -> dict[str, Any]:
    """A request body as a JSON object (strictly parsed), or a 400 that says what is wrong with it."""
    try:
        payload = strict_json.loads(raw_body)
    except strict_json.JsonProblem as exc:
        where = f"'{exc.path}'" if exc.path else "the body"
        raise GatewayError(400, f"Invalid request: {where} {exc}.", param=exc.path, code="invalid_json") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GatewayError(400, f"Request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(payload, dict):
        raise GatewayError(400, "Request body must be a JSON object.", code="invalid_body")
    return payload


def invalid_request(exc: ValidationError, prefix: tuple[int | str, ...] = ()) -> GatewayError:
    """A validation failure as a 400 naming its first problem's parameter (under `prefix`, for a nested part)."""
    first = exc.errors()[0]
    param = param_path((*prefix, *first["loc"]))
    detail = re.sub(r" or instance of \w+", "", str(first["msg"]).removeprefix("Value error, "))
    if first["type"] == "missing":
        detail = "is required"
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return GatewayError(400, f"Invalid request: '{param}' {detail}{more}.", param=param)


_UNION_TAGS = frozenset({"str", "int", "float", "bool", "dict", "list", "none"})


def param_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif "[" in part or part in _UNION_TAGS:
            continue
        else:
            path += f".{part}" if path else part
    return path or "body"


def check_counts(payload: dict[str, Any], max_messages: int, max_tools: int) -> None:
    """The gateway's limits on how many messages and tools one request may carry."""
    for field_name, limit in (("messages", max_messages), ("tools", max_tools)):
        value = payload.get(field_name)
        if isinstance(value, list) and len(value) > limit:
            raise GatewayError(
                400, f"Too many {field_name}: {len(value)} (this gateway accepts at most {limit}).", param=field_name
            )
