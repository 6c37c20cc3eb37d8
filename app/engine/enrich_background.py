"""Enrichment in the background (`tool_discovery.enrich`): after start-up and after every catalog change, the
deferred tools whose text the cache does not hold are asked about, a batch at a time. No request waits for it:
search uses the keyword and meaning indexes it has, and each batch's enrichments reach them when the discovery is
rebuilt, in the worker pool and paced (at most once per `mcp_limits.rebuild_interval_seconds`, and at least five
times the last rebuild's duration apart, so a catalog of 10,000 tools is not re-indexed after every batch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from app.common.home import toolsift_home
from app.common.offload import off_loop
from app.config import Config, EnrichConfig
from app.core.catalog import ToolEntry
from app.discovery.enrichment import EnrichmentCache
from app.engine.enrichment import Enricher, Outcome, model_key, plan
from app.providers import Route

log = logging.getLogger("toolsift.enrich")
REBUILD_SPACING = 5  # rebuilds for enrichment are at least this many times their own duration apart


def enrichment_cache(config: Config, alias: str | None = None) -> EnrichmentCache | None:
    """The cache of `alias`'s enrichments (default: the config's `tool_discovery.enrich` model), or None when
    the config names none."""
    settings = config.tool_discovery.enrich
    alias = alias or (settings.model if settings is not None else None)
    if alias is None:
        return None
    folder = settings.cache_dir if settings is not None else None
    directory = Path(folder).expanduser() if folder else toolsift_home() / "enrichment"
    return EnrichmentCache(directory, model_key(config, alias))


class Paced:
    """`work` run on demand, never two at once and paced: a demand while it runs (or too soon after) is served
    by one later run, at least `interval` seconds and `spacing` times the last run's duration after it started."""

    def __init__(self, work: Callable[[], Awaitable[None]], interval: float, spacing: float = 0.0) -> None:
        self.work, self.interval, self.spacing = work, interval, spacing
        self._dirty = False
        self._last = -float("inf")
        self._spacing = 0.0
        self._task: asyncio.Task[None] | None = None

    def wake(self) -> None:
        self._dirty = True
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run_while_dirty(), name="enrich:paced")

    async def _run_while_dirty(self) -> None:
        while self._dirty:
            await asyncio.sleep(max(0.0, self._last + max(self.interval, self._spacing) - time.monotonic()))
            self._dirty = False
            started = self._last = time.monotonic()
            try:
                await self.work()
            except Exception:  # the next demand tries again; serving goes on with what it has
                log.exception("enrichment: background work failed")
            self._spacing = self.spacing * (time.monotonic() - started)

    @property
    def busy(self) -> bool:
        return self._task is not None and not self._task.done()

    async def settled(self) -> None:
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()


class BackgroundEnrichment:
    """The gateway's own enrichment runs: one at a time, each over the tools its catalog defers that are not
    cached yet; one token budget (`max_tokens`) for the gateway's whole life."""

    def __init__(
        self,
        settings: EnrichConfig,
        cache: EnrichmentCache,
        route: Callable[[], Route],
        deferred: Callable[[], list[ToolEntry]],
        refresh: Callable[[], Awaitable[None]],
        interval: float,
    ) -> None:
        self.settings, self.cache, self.route, self.deferred = settings, cache, route, deferred
        self.outcome = Outcome()  # across runs: the budget is spent once
        self.refreshing = Paced(refresh, interval, REBUILD_SPACING)
        self.running = Paced(self._run, 0.0)

    def wake(self) -> None:
        """The catalog changed (or the gateway started): enrich what is new."""
        if not self.outcome.stopped.startswith("token budget"):
            self.running.wake()

    async def _run(self) -> None:
        planned = await off_loop(plan, self.deferred(), self.cache, self.settings.batch_size)
        if not planned.batches:
            return
        log.info(
            "enrichment: asking %s about %d tools in %d batches (about %s tokens; %d cached)",
            self.settings.model, len(planned.jobs), len(planned.batches), f"{planned.tokens:,}", planned.cached,
        )  # fmt: skip
        self.outcome.stopped = ""
        enricher = Enricher(self.route(), self.cache, self.settings.max_tokens, on_batch=self.refreshing.wake)
        self.outcome.skipped.clear()  # this run's, each also logged with why
        before = self.outcome.enriched
        await enricher.run(planned, self.outcome)
        log.info(
            "enrichment: %d tools enriched, %d skipped, %s tokens spent since start-up",
            self.outcome.enriched - before, len(self.outcome.skipped), f"{self.outcome.tokens:,}",
        )  # fmt: skip

    def status(self) -> dict[str, object]:
        """For /healthz: the model, whether a run is going on, and what the runs since start-up did."""
        outcome = self.outcome
        found: dict[str, object] = {"model": self.settings.model, "running": self.running.busy,
                                    "cached": len(self.cache), "enriched": outcome.enriched,
                                    "skipped": len(outcome.skipped), "tokens": outcome.tokens}  # fmt: skip
        if outcome.stopped:
            found["stopped"] = outcome.stopped
        return found

    async def settled(self) -> None:
        """Until the runs and rebuilds asked for so far are done (tests, benches)."""
        await self.running.settled()
        await self.refreshing.settled()

    async def aclose(self) -> None:
        await self.running.aclose()
        await self.refreshing.aclose()
