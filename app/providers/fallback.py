"""Fallbacks: when a model fails with a retryable error (after its own retries), try the next one.

A stream falls back only before its first chunk; once the client has bytes, a failure is reported instead.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace

from app.common.errors import GatewayError
from app.core.model import Delta, UpstreamRequest
from app.providers.base import Provider

log = logging.getLogger("toolsift.upstream")


class FallbackProvider:
    def __init__(self, candidates: Sequence[tuple[Provider, str]]) -> None:
        self.candidates = list(candidates)
        self.name = self.candidates[0][0].name
        # The hosted tools every candidate runs: a request that goes to any of them keeps only those.
        served = [frozenset[str](getattr(provider, "hosted_tools", frozenset())) for provider, _ in self.candidates]
        self.hosted_tools = frozenset.intersection(*served)

    async def complete(self, request: UpstreamRequest) -> Delta:
        for position, (provider, model) in enumerate(self.candidates):
            try:
                return await provider.complete(replace(request, model=model))
            except GatewayError as exc:
                self._give_up_unless_next(exc, position)
        raise AssertionError("unreachable")  # pragma: no cover

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        for position, (provider, model) in enumerate(self.candidates):
            chunks = provider.stream(replace(request, model=model))
            try:
                first = await anext(chunks)
            except StopAsyncIteration:
                return
            except GatewayError as exc:
                await chunks.aclose()
                self._give_up_unless_next(exc, position)
                continue
            try:
                yield first
                async for chunk in chunks:
                    yield chunk
            finally:
                await chunks.aclose()
            return

    def _give_up_unless_next(self, exc: GatewayError, position: int) -> None:
        if not exc.retryable or position + 1 >= len(self.candidates):
            raise exc
        (failed, failed_model), (following, following_model) = self.candidates[position : position + 2]
        log.warning(
            "upstream fallback from=%s/%s to=%s/%s status=%d",
            failed.name, failed_model, following.name, following_model, exc.status,
        )  # fmt: skip

    async def aclose(self) -> None:
        """The wrapped providers are shared and closed by the router."""
