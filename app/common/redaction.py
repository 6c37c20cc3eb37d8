"""Configured secrets kept out of every text that leaves the gateway or enters a log.

The set is process-wide because log records from every library (httpx, uvicorn, the MCP SDK) meet in one
logging system; each gateway adds its config's secrets when it is built and removes them when it stops.
Matching is plain substring search (`str.replace`, longest secret first), linear in the text, so it can run on
every error message, tool result and log record without a regex's worst cases.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

REDACTED = "[redacted]"
_REDACTED_BYTES = REDACTED.encode()
MIN_SECRET_CHARS = 4  # shorter values (`1`, `on`, `v2`) are flags, not keys: redacting them would mangle text

_lock = threading.Lock()
_owners: dict[int, frozenset[str]] = {}
_tokens = itertools.count(1)
_secrets: tuple[str, ...] = ()  # longest first, so a secret containing another is replaced whole
_encoded: tuple[bytes, ...] = ()  # the same, as UTF-8, for bytes on their way out
_request_secrets: ContextVar[tuple[str, ...]] = ContextVar("toolsift_request_secrets", default=())


def register(secrets: Iterable[str]) -> int:
    """Redact `secrets` from now on; return a token for `unregister`."""
    kept = frozenset(secret for secret in secrets if len(secret) >= MIN_SECRET_CHARS)
    with _lock:
        token = next(_tokens)
        _owners[token] = kept
        _rebuild()
    return token


def add_request_secret(secret: str) -> None:
    """Redact `secret` for the rest of the current request only (a caller's own upstream key)."""
    if len(secret) >= MIN_SECRET_CHARS:
        _request_secrets.set((*_request_secrets.get(), secret))


def unregister(token: int) -> None:
    with _lock:
        _owners.pop(token, None)
        _rebuild()


def _rebuild() -> None:
    global _secrets, _encoded
    _secrets = tuple(sorted(set().union(*_owners.values()), key=lambda secret: (-len(secret), secret)))
    _encoded = tuple(secret.encode() for secret in _secrets)


def active() -> bool:
    """Whether anything is to be redacted now (configured secrets, or the current request's)."""
    return bool(_secrets or _request_secrets.get())


def longest() -> int:
    """The length of the longest secret: a text cut this far past a limit still shows any secret whole."""
    secrets = _secrets
    return len(secrets[0]) if secrets else 0


def redact(text: str) -> str:
    """`text` with every configured secret (and the current request's) replaced by `[redacted]`."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    for secret in _request_secrets.get():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact_bytes(data: bytes) -> bytes:
    """`redact` for UTF-8 text on its way out (a response body, an SSE event): what the one exit of every HTTP
    answer runs (app/server/redacting.py)."""
    for secret in _encoded:
        if secret in data:
            data = data.replace(secret, _REDACTED_BYTES)
    for text in _request_secrets.get():
        secret = text.encode()
        if secret in data:
            data = data.replace(secret, _REDACTED_BYTES)
    return data


def redact_value(value: Any) -> Any:
    """Every string inside a JSON-like value redacted (keys included); other values unchanged."""
    if not _secrets and not _request_secrets.get():
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(key): redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value
