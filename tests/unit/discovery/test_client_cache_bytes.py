"""The cache of requests' deferred client tools counts what it holds in the bytes Python uses, so non-ASCII lists
and lists beside a large catalog stay within its bound: each cached list's count is at least two thirds of what it
really holds (`sys.getsizeof`, deep, without what the shared discovery holds), and a cache filled with many lists
holds at most 1.5 times its bound."""

from __future__ import annotations

import random
import sys
import types
from typing import Any

import numpy as np
import pytest
from fastmcp import FastMCP
from fastmcp.tools import Tool

from app.discovery.search import Discovery
from app.engine.gateway import Gateway
from tests.support import chat_body, engine_request, make_config

CYRILLIC = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
FRAKTUR = "".join(chr(0x1D51E + i) for i in range(26))  # letters outside the first plane: 4 bytes each in a str
MCP_TOOLS = 2000


def held(roots: list[Any], seen: set[int]) -> int:
    """Deep `sys.getsizeof` of `roots`, each object once, skipping what `seen` holds (and adding to it)."""
    total, stack = 0, list(roots)
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, type | types.ModuleType | types.FunctionType | types.MethodType):
            continue
        seen.add(id(value))
        total += sys.getsizeof(value)
        if isinstance(value, np.ndarray | str | bytes | int | float):
            continue
        if isinstance(value, dict):
            stack.extend([*value.keys(), *value.values()])
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend(value)
        else:
            stack.extend(vars(value).values() if hasattr(value, "__dict__") else ())
            slots = [slot for cls in type(value).__mro__ for slot in getattr(cls, "__slots__", ())]
            stack.extend(getattr(value, slot) for slot in slots if hasattr(value, slot))
    return total


def tools(seed: int, alphabet: str, count: int, chars: int, vocabulary: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(4, 10))) for _ in range(vocabulary)]

    def text(size: int) -> str:
        return " ".join(rng.choice(words) for _ in range(max(1, size // 8)))

    return [
        {
            "type": "function",
            "defer_loading": True,
            "function": {
                "name": f"t{seed}_{i}",
                "description": text(chars),
                "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": text(160)}}},
            },
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def big_server() -> FastMCP:
    """One in-memory server of MCP_TOOLS tools for the module (building them is most of a test's time; a gateway
    only lists and calls them)."""
    server = FastMCP("big")
    for i in range(MCP_TOOLS):
        server.add_tool(Tool.from_function(lambda: "ok", name=f"tool_{i}", description=f"Ordinary tool {i}"))
    return server


@pytest.fixture
async def started(big_server: FastMCP) -> Any:
    """Start gateways beside the server of MCP_TOOLS deferred tools, the client-tool cache bounded at `mb` MiB."""
    running: list[Gateway] = []

    async def start(mb: int) -> Gateway:
        config = make_config(
            mcpServers={"big": {"command": "unused", "defer_loading": True}},
            mcp_limits={"max_tools_per_server": MCP_TOOLS},
            tool_sets={},
            tool_discovery={"enabled": True, "client_index_cache_mb": mb},
        )
        gateway = Gateway(config, mcp_targets={"big": big_server})
        await gateway.start()
        running.append(gateway)
        return gateway

    yield start
    for gateway in running:
        await gateway.stop()


def shared(gateway: Gateway) -> set[int]:
    """What every cached list refers to without holding it: the shared discovery and the catalog."""
    seen: set[int] = set()
    held([gateway.discovery.get(gateway.mcp.catalog, None, []), gateway.mcp.catalog, gateway.semantic], seen)
    return seen


def cached(gateway: Gateway) -> list[tuple[Discovery, int]]:
    return list(gateway.discovery.clients._entries.values())


@pytest.mark.parametrize(
    ("alphabet", "count", "chars", "vocabulary"),
    [
        pytest.param(CYRILLIC, 1, 300, 20, id="one small Cyrillic tool beside 2,000 MCP tools"),
        pytest.param(CYRILLIC, 20, 8000, 100, id="long Cyrillic descriptions"),
        pytest.param(FRAKTUR, 20, 8000, 100, id="text outside the first plane"),
    ],
)
async def test_a_cached_lists_count_is_what_it_holds(
    started: Any, alphabet: str, count: int, chars: int, vocabulary: int
) -> None:
    gateway = await started(16)
    await gateway.request_tools(
        engine_request(chat_body("x", tools=tools(1, alphabet, count, chars, vocabulary))), None
    )
    [(discovery, counted)] = cached(gateway)
    real = held([discovery], shared(gateway))
    print(f"holds {real:,} bytes, counted {counted:,}")
    assert real <= 1.5 * counted, f"holds {real:,} bytes, counted {counted:,}"


async def test_a_full_cache_holds_at_most_one_and_a_half_times_its_bound(started: Any) -> None:
    gateway = await started(2)
    for seed in range(40):
        body = chat_body("x", tools=tools(seed, CYRILLIC, 2, 600, 20))
        await gateway.request_tools(engine_request(body), None)
    kept = cached(gateway)
    assert len(kept) >= 1
    real = held([discovery for discovery, _ in kept], shared(gateway))
    bound = gateway.discovery.clients.max_bytes
    print(f"{len(kept)} lists hold {real:,} bytes, bound {bound:,}")
    assert real <= 1.5 * bound, f"{len(kept)} lists hold {real:,} bytes, bound {bound:,}"
