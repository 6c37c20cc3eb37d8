"""The one interface every upstream implements: a chat-completions body in, a chat completion out.

Providers speak OpenAI's format at this seam whatever their own wire format is, so the loop never knows
which upstream it talks to.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol


class Provider(Protocol):
    name: str

    async def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one non-streaming chat-completions request; raise GatewayError on any failure."""
        ...

    def stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Send one streaming request; yield chat-completion chunks; raise GatewayError on any failure."""
        ...

    async def aclose(self) -> None: ...
