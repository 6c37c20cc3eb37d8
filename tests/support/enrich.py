"""Enrichment's tests: an upstream that answers the enrichment prompt (in memory, at the engine's seam), the
answers it writes, and a server of many tools to enrich."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from fastmcp import FastMCP

from app.core.model import Delta, StopReason, UpstreamRequest, Usage

# Words no tool of the tests says: a search for them finds a tool only through what the model wrote of it.
ONLY_IN_PHRASINGS = "reconcile quarterly ledger"


def asked_names(request: UpstreamRequest) -> list[str]:
    """The tool names an enrichment prompt asks about (its user message: a line of JSON per tool)."""
    text = request.messages[-1].text()
    return [json.loads(line)["name"] for line in text.splitlines() if line.startswith("{")]


def written(name: str) -> dict[str, Any]:
    """What the stand-in model writes of a tool: `ONLY_IN_PHRASINGS` for tools named `*_07`, plain words else."""
    phrasings = [f"need {name} now", f"help with {name}", f"find {name} tool"]
    if name.endswith("_07"):
        phrasings.append(ONLY_IN_PHRASINGS)
    return {"purpose": f"Use {name} for its job.", "phrasings": phrasings}


def answer(names: list[str]) -> str:
    return json.dumps({name: written(name) for name in names})


class EnrichingUpstream:
    """A `Provider` answering enrichment prompts: `reply(names, call)` writes the answer's text (by default every
    asked tool, well formed); `calls` holds the names each call asked about."""

    def __init__(self, name: str = "up", reply: Callable[[list[str], int], str] | None = None) -> None:
        self.name = name
        self.reply = reply or (lambda names, call: answer(names))
        self.calls: list[list[str]] = []
        self.requests: list[UpstreamRequest] = []

    async def complete(self, request: UpstreamRequest) -> Delta:
        names = asked_names(request)
        self.calls.append(names)
        self.requests.append(request)
        return Delta(content=self.reply(names, len(self.calls)), stop=StopReason(), usage=Usage(100, 50, 150))

    async def stream(self, request: UpstreamRequest) -> AsyncGenerator[Delta, None]:
        yield await self.complete(request)

    async def aclose(self) -> None:
        return None


# The finance example server's tools, and words none of them says: only the enrichment below holds them.
FINANCE = [
    "convert_currency", "get_exchange_rates", "get_stock_quote", "calculate_loan_payment", "compound_interest",
    "portfolio_value", "estimate_income_tax",
]  # fmt: skip
NEST_EGG = "nest egg projection"


def finance_written() -> str:
    """An answer enriching every finance tool, NEST_EGG among compound_interest's phrasings: an upstream answers
    every batch with it (the gateway reads the tools each batch asked about)."""
    found = {}
    for name in FINANCE:
        phrasings = [f"help with {name}", f"use {name}", f"find {name}"]
        extra = [NEST_EGG] if name == "compound_interest" else []
        found[f"finance__{name}"] = {"purpose": f"Does {name}.", "phrasings": [*phrasings, *extra]}
    return json.dumps(found)


def many_tools(count: int, name: str = "ops", changed: int | None = None) -> FastMCP:
    """A server of `count` tools `task_00` ... (tool `changed`, when given, with another description)."""
    server = FastMCP(name)
    for number in range(count):
        description = f"Run maintenance step {number} on the cluster."
        if number == changed:
            description = f"Run the revised maintenance step {number} on the cluster."
        server.tool(name=f"task_{number:02d}", description=description)(_step)
    return server


def _step(node: str) -> str:
    return "ok"
