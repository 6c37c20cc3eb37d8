"""Who is asking, as the engine sees a request: plain values the server edge reads off the connection.

The engine never reads an ASGI scope or a header: whatever front or process a request came through (HTTP, the
MCP front, `run_task`, a test), it arrives as a `Caller`, so every per-request rule can be run and tested
without HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.common.identity import ANONYMOUS, Identity
from app.common.logs import new_request_id


@dataclass(frozen=True, slots=True)
class Caller:
    """`identity` keys every piece of per-caller state; `session_id` is the one the transport carried (a header),
    which wins over a body's; `upstream_key` is the caller's own upstream key, used only by providers configured
    with `forward_client_auth`; `front` names the API it came through, for its traces; `admitted` spares a request
    its limits when the request that started it was already counted."""

    identity: Identity = ANONYMOUS
    request_id: str = field(default_factory=new_request_id)
    session_id: str | None = None
    upstream_key: str | None = field(default=None, repr=False)
    front: str = ""
    admitted: bool = False  # already counted against the identity's limits (a run_task inside an MCP request)
