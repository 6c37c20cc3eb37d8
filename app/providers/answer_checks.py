"""An upstream's answer checked against its shape before the gateway reads it.

A model's output is arbitrary and an upstream can send anything; the codecs read answers as dicts, so each one is
checked here, at the provider edge, once, against its codec's protocol model. Only the fields the gateway reads are
checked; everything else passes through untouched (the original dict goes on, not the model). A wrong shape
becomes a 502 `upstream_invalid_response` that names the field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError


def problem(shape: type[BaseModel], answer: dict[str, Any]) -> str | None:
    """None when `answer` has `shape`, else what is wrong with it: the first few fields and why, never their
    values (an upstream's text stays out of error messages)."""
    try:
        shape.model_validate(answer)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False, include_context=False)
        parts = [f"{'.'.join(str(p) for p in error['loc']) or 'the answer'}: {error['msg']}" for error in errors[:3]]
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return "; ".join(parts) + more
    return None
