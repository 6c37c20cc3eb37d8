"""`toolsift enrich`: have the configured model write each deferred tool's purpose and search phrasings, once.

It connects the config's MCP servers as `toolsift check` does, asks about the deferred tools the cache does not
hold yet (a batch per upstream call, through the gateway's own providers and routing), and caches each batch's
answers as it goes: run it again and it asks only about tools that are new or changed, or that an interrupted run
did not reach. `--dry-run` lists what it would ask and the tokens that would cost, without calling; `--max-tokens`
stops it when the next batch would pass the budget. Progress is a bar on a terminal, plain lines otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from app.cli.inspect import connected
from app.common import tokens
from app.common.errors import GatewayError
from app.common.offload import off_loop
from app.config import Config
from app.engine.enrich_background import enrichment_cache
from app.engine.enrichment import Enricher, Outcome, Plan, Progress, model_key, plan

DEFAULT_BATCH = 15
MAX_BATCH = 50  # as the config's batch_size: an answer for more tools than this is long to wait for and to check
BAR_WIDTH = 30


async def enrich(config: Config, args: argparse.Namespace) -> int:
    settings = config.tool_discovery.enrich
    alias = args.model or (settings.model if settings is not None else None)
    if alias is None:
        print("toolsift: name the model that writes the enrichment: --model ALIAS, or tool_discovery.enrich.model "
              "in the config", file=sys.stderr)  # fmt: skip
        return 2
    if alias not in config.models and config.default_provider is None:
        known = ", ".join(sorted(config.models)) or "none"
        print(f"toolsift: {alias!r} is not a model alias of this config (models: {known})", file=sys.stderr)
        return 2
    batch_size = args.batch_size or (settings.batch_size if settings is not None else DEFAULT_BATCH)
    if batch_size > MAX_BATCH:
        print(f"toolsift: --batch-size is at most {MAX_BATCH}", file=sys.stderr)
        return 2
    budget = args.max_tokens if args.max_tokens is not None else (settings.max_tokens if settings else None)
    cache = enrichment_cache(config, alias)
    assert cache is not None
    await off_loop(cache.load)
    async with connected(config) as gateway:
        deferred = [entry for entry in gateway.mcp.catalog.tools.values() if entry.deferred]
        planned = await off_loop(plan, deferred, cache, batch_size)
        print(f"model: {alias} ({model_key(config, alias)}); {len(deferred)} deferred tools, {planned.cached} "
              f"already enriched, {len(planned.jobs)} to ask about", file=sys.stderr)  # fmt: skip
        if args.dry_run:
            return dry_run(planned, batch_size, budget)
        if not planned.batches:
            print("nothing to ask: every deferred tool is enriched", file=sys.stderr)
            return 0
        try:
            route = gateway.router.route(alias)
        except GatewayError as exc:
            print(f"toolsift: {exc.message}", file=sys.stderr)
            return 2
        outcome = await Enricher(route, cache, budget, progress=progress_printer(len(planned.batches))).run(planned)
    return summary(outcome)


def dry_run(planned: Plan, batch_size: int, budget: int | None) -> int:
    """What a run would send: the tools, in batches, and the tokens (prompts counted, answers estimated)."""
    kind = "o200k tokens" if tokens.exact() else "tokens, estimated at 4 characters each"
    print(f"would ask about {len(planned.jobs)} tools in {len(planned.batches)} calls of up to {batch_size}, "
          f"about {planned.tokens:,} {kind} in all (prompts and answers)")  # fmt: skip
    if budget is not None and planned.tokens > budget:
        print(f"--max-tokens {budget:,} would stop it before the end; run it again to go on")
    for number, batch in enumerate(planned.batches, 1):
        print(f"call {number}: {', '.join(job.name for job in batch)}")
    return 0


def progress_printer(batches: int) -> Callable[[Progress], None]:
    """A bar redrawn in place on a terminal (stderr), one plain line per batch otherwise."""
    live = sys.stderr.isatty()
    state = {"batch": 0}

    def show(progress: Progress) -> None:
        state["batch"] += 1
        counts = f"{progress.done}/{progress.total} tools, {progress.enriched} enriched, {progress.tokens:,} tokens"
        if live:
            filled = BAR_WIDTH * progress.done // max(progress.total, 1)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            print(f"\renriching [{bar}] {counts}\033[K", end="", file=sys.stderr, flush=True)
        else:
            print(f"enriched batch {state['batch']}/{batches}: {counts}", file=sys.stderr, flush=True)

    return show


def summary(outcome: Outcome) -> int:
    """The run in one line; 1 when it skipped tools or stopped early (run it again to go on)."""
    if sys.stderr.isatty() and outcome.calls:
        print(file=sys.stderr)  # past the bar
    print(f"enriched {outcome.enriched} tools in {outcome.calls} calls, {outcome.tokens:,} tokens; "
          f"{len(outcome.skipped)} skipped")  # fmt: skip
    if outcome.stopped:
        print(f"stopped: {outcome.stopped}", file=sys.stderr)
    return 1 if outcome.skipped or outcome.stopped else 0
