"""Tool-definition tokens in the first upstream call, discovery off vs on; and a Claude-Code-style request's client
tools with `auto_defer_client_tools` off vs on.

Catalogs: the bundled demo (its example servers, listed in memory), and catalogs of 100 and 1,000 tools: real
tool definitions from the public tool-retrieval data in bench/data (LiveMCPBench MCP servers and StableToolBench
RapidAPI tools, Apache-2.0). The Claude-Code-style request has its own 15 tools (generated definitions of a
typical size) and 50 or 100 MCP tools, both generated and from the data. Counts are o200k_base tokens of the
`tools` array as sent (see app/common/tokens.py).

    python bench/tokens.py [--data PATH] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import DATA, add_record_options, input_schema, record, require_data  # noqa: E402

from app.codecs.openai_chat.requests import chat_request, tool_to_openai  # noqa: E402
from app.common import tokens  # noqa: E402
from app.config import Config, load_config, parse_config  # noqa: E402
from app.core.model import ChatRequest  # noqa: E402
from app.discovery.cache import DiscoveryCache  # noqa: E402
from app.engine.request_tools import RequestTools, prepare_request_tools  # noqa: E402
from app.fronts.chat.wire import parse_chat_request  # noqa: E402
from app.mcp.client.catalog_build import build_catalog  # noqa: E402

DEFAULT_DATA = DATA / "tool_retrieval_dev.json"
HELLO = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
REQUEST = chat_request(*parse_chat_request(json.dumps(HELLO).encode()))
CLAUDE_CODE_TOOLS = ["Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch",
                     "WebSearch", "TodoWrite", "Task", "ExitPlanMode", "BashOutput", "KillShell"]  # fmt: skip
KEEP = ["Bash", "Read", "Edit"]


def sent(request_tools: RequestTools) -> list[dict[str, Any]]:
    """The tool definitions of the first upstream call, as an OpenAI-compatible upstream gets them."""
    return [tool_to_openai(spec) for spec in request_tools.definitions()]


def first_call_tokens(config: Config, listings: dict[str, list[Any]]) -> tuple[int, int, int]:
    """(tokens with discovery off, tokens with it on, tools loaded on the first call with it on)."""
    results = []
    for enabled in (False, True):
        variant = config.model_copy(
            update={"tool_discovery": config.tool_discovery.model_copy(update={"enabled": enabled})}
        )
        catalog = build_catalog(variant, listings, version=1)
        request_tools = prepare_request_tools(
            catalog, variant, REQUEST, DiscoveryCache(variant.tool_discovery.manifest_max_tokens)
        )
        results.append((tokens.count_tools(sent(request_tools)), len(request_tools.loaded_names)))
    return results[0][0], results[1][0], results[1][1]


EXAMPLES = ROOT / "examples" / "servers"


async def demo_listings(config: Config) -> dict[str, list[Any]]:
    """The tools of the config's bundled example servers, listed in memory (no process); a server the config adds
    (`uvx ...`, a remote URL, a script of your own) is skipped, and said so: the row measures the demo."""
    from fastmcp import Client

    listings: dict[str, list[Any]] = {}
    for name, server in config.mcp_servers.items():
        path = (config.base_dir / server.args[0]).resolve() if server.command and server.args else None
        spec = importlib.util.spec_from_file_location(f"bench_{name}", path) if path else None
        if path is None or path.parent != EXAMPLES or not path.is_file() or spec is None or spec.loader is None:
            print(f"demo config: skipping server {name!r}: not one of examples/servers/", file=sys.stderr)
            continue
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        async with Client(module.mcp) as client:
            listings[name] = await client.list_tools()
    if not listings:
        raise SystemExit("bench/tokens.py: the config has none of the bundled example servers (examples/servers/)")
    return listings


def data_listings(path: Path, count: int) -> dict[str, list[Any]]:
    """The first `count` tools of the data file, real MCP servers first, whole servers at a time."""
    data = json.loads(path.read_text())
    listings: dict[str, list[Any]] = {}
    for total, tool in enumerate(sorted(data["tools"], key=lambda t: t["part"] != "livemcp")):
        if total >= count:
            break
        schema = input_schema(tool)
        tool_ns = SimpleNamespace(
            name=tool["name"], description=tool["description"], input_schema=schema, meta=None, title=None
        )
        listings.setdefault(tool["server"], []).append(tool_ns)
    return listings


def generated_listings(count: int, seed: int = 7) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    verbs = ["get", "list", "create", "update", "delete", "search", "export", "sync"]
    nouns = ["invoice", "customer", "ticket", "order", "report", "user", "project", "file", "message", "event"]
    listings: dict[str, list[Any]] = {}
    for index in range(count):
        server = f"service{index // 8:03d}"
        verb, noun = rng.choice(verbs), rng.choice(nouns)
        properties = {
            f"{noun}_id": {"type": "string", "description": f"Identifier of the {noun} to {verb}."},
            "limit": {"type": "integer", "description": "Maximum number of results to return (1-100)."},
            "fields": {"type": "array", "items": {"type": "string"}, "description": "Fields to include in the answer."},
        }
        description = f"{verb.title()} a {noun} in {server}. Returns the {noun} record with its metadata and status."
        schema = {"type": "object", "properties": properties, "required": [f"{noun}_id"]}
        listings.setdefault(server, []).append(
            SimpleNamespace(
                name=f"{verb}_{noun}_{index}", description=description, input_schema=schema, meta=None, title=None
            )
        )
    return listings


def claude_code_request(listings: dict[str, list[Any]]) -> ChatRequest:
    """A request as Claude Code sends it with MCP servers configured in it: its own tools (generated definitions of
    a typical size) and every MCP tool as `mcp__<server>__<tool>`, all client tools."""
    words = "Runs the operation in the user's workspace, checking its inputs first and reporting what changed. "
    tools = [
        {"type": "function", "function": {"name": name, "description": f"{name}. " + words * 12, "parameters": {
            "type": "object", "properties": {f"arg_{i}": {"type": "string", "description": words} for i in range(4)}}}}
        for name in CLAUDE_CODE_TOOLS
    ]  # fmt: skip
    for server, listed in listings.items():
        for tool in listed:
            name = f"mcp__{server}__{tool.name}"[:64]
            function = {"name": name, "description": tool.description or "", "parameters": tool.input_schema}
            tools.append({"type": "function", "function": function})
    body = {**HELLO, "tools": tools}
    return chat_request(*parse_chat_request(json.dumps(body).encode(), max_tools=4096))


def auto_defer_tokens(request: ChatRequest) -> tuple[int, int, int]:
    """(client tool tokens sent as is, with auto-deferral keeping Bash/Read/Edit, tools loaded with it)."""
    results = []
    for auto in (None, {"min_tokens": 8000, "keep": KEEP}):
        config = parse_config({"tool_discovery": {"auto_defer_client_tools": auto}}, environ={})
        catalog = build_catalog(config, {}, version=1)
        request_tools = prepare_request_tools(catalog, config, request, DiscoveryCache())
        results.append((tokens.count_tools(sent(request_tools)), len(request_tools.loaded_names)))
    return results[0][0], results[1][0], results[1][1]


def mcp_connect_tokens(config: Config, listings: dict[str, list[Any]]) -> tuple[int, int]:
    """An MCP client's `tools/list` at connect time: every server directly vs toolsift's lazy front."""
    direct = [_mcp_shape(tool) for tools in listings.values() for tool in tools]
    catalog = build_catalog(config, listings, version=1)
    request_tools = prepare_request_tools(
        catalog, config, REQUEST, DiscoveryCache(config.tool_discovery.manifest_max_tokens)
    )
    lazy = [
        {
            "name": d["function"]["name"],
            "description": d["function"]["description"],
            "inputSchema": d["function"]["parameters"],
        }
        for d in sent(request_tools)
    ]
    return tokens.count_text(json.dumps(direct, ensure_ascii=False)), tokens.count_text(
        json.dumps(lazy, ensure_ascii=False)
    )


def _mcp_shape(tool: Any) -> dict[str, Any]:
    if hasattr(tool, "model_dump"):
        dumped: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="tool-retrieval data (default: bench/data)")
    add_record_options(parser, "tokens")
    args = parser.parse_args()
    data = require_data(args.data)

    demo = load_config(ROOT / "config.json", environ={})
    rows = [("demo config", demo, asyncio.run(demo_listings(demo)))]
    for count in (100, 1000):
        listings = data_listings(data, count)
        servers = {name: {"command": "unused"} for name in listings}
        config = parse_config({"mcpServers": servers, "tool_discovery": {"defer_all": True}}, environ={})
        rows.append((f"{count:,} tools (data)", config, listings))

    unit = "o200k_base tokens" if tokens.exact() else "estimated tokens (install the 'tokens' extra for exact counts)"
    results: dict[str, Any] = {"unit": unit, "data": data.name, "first_call": [], "auto_defer": [], "mcp_connect": []}
    print(f"Tool-definition tokens in the first upstream call ({unit})\n")
    header = f"{'catalog':<28} {'tools':>6} {'discovery off':>14} {'discovery on':>13} {'loaded':>10} {'cut':>7}"
    print(header)
    print("-" * len(header))
    for label, config, listings in rows:
        tool_count = sum(len(tools) for tools in listings.values())
        off, on, loaded = first_call_tokens(config, listings)
        cut = 1 - on / off if off else 0.0
        print(f"{label:<28} {tool_count:>6} {off:>14,} {on:>13,} {loaded:>10} {cut:>7.1%}")
        results["first_call"].append(
            {"catalog": label, "tools": tool_count, "discovery_off_tokens": off, "discovery_on_tokens": on,
             "loaded_tools": loaded, "cut_pct": cut * 100}
        )  # fmt: skip

    print(f"\nClaude-Code-style request: client tools, auto_defer_client_tools off vs on, keep {KEEP} ({unit})\n")
    header = f"{'client tools':<28} {'tools':>6} {'sent as is':>14} {'auto-deferred':>13} {'loaded':>10} {'cut':>7}"
    print(header)
    print("-" * len(header))
    for count, source in ((50, "generated"), (100, "generated"), (50, "data"), (100, "data")):
        listings = generated_listings(count) if source == "generated" else data_listings(data, count)
        request = claude_code_request(listings)
        off, on, loaded = auto_defer_tokens(request)
        label = f"{len(CLAUDE_CODE_TOOLS)} own + {count} MCP ({source})"
        print(f"{label:<28} {len(request.tools):>6} {off:>14,} {on:>13,} {loaded:>10} {1 - on / off:>7.1%}")
        results["auto_defer"].append(
            {"client_tools": label, "mcp_tools": source, "tools": len(request.tools), "sent_as_is_tokens": off,
             "auto_deferred_tokens": on, "loaded_tools": loaded, "cut_pct": (1 - on / off) * 100}
        )  # fmt: skip

    print(f"\nMCP clients: tools/list at connect time, straight to the servers vs toolsift's lazy front ({unit})\n")
    header = f"{'catalog':<28} {'direct':>10} {'lazy front':>11} {'cut':>7}"
    print(header)
    print("-" * len(header))
    for label, config, listings in rows:
        direct, lazy = mcp_connect_tokens(config, listings)
        print(f"{label:<28} {direct:>10,} {lazy:>11,} {1 - lazy / direct:>7.1%}")
        results["mcp_connect"].append(
            {"catalog": label, "direct_tokens": direct, "lazy_front_tokens": lazy, "cut_pct": (1 - lazy / direct) * 100}
        )
    if not args.no_record:
        record(args.out or "tokens", results)


if __name__ == "__main__":
    main()
