"""The modules a request passes through from its route to the upstream call, in order.

    python bench/hops.py [--front chat|responses|messages] [--stream]

A chat request (one MCP server deferred, so discovery is on) is sent to the ASGI app in memory, its upstream
answered by respx; every call into an `app.` module is traced with `sys.setprofile` until the upstream request
is handed to a transport. The table lists the modules in the order they were first entered, then each call the
server edge (`app.server.*`) made into a module below it: each is a step the edge orchestrated itself instead of
handing the request over once. Prints the table and records bench/results/hops-<front>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

try:
    import respx
except ModuleNotFoundError:  # the dev extra's, not make install's: this bench plays the upstream with it
    sys.exit("bench/hops.py plays the upstream with respx, from the dev extra: run `make dev` first")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import parse_config
from app.engine.api import Engine
from app.engine.gateway import Gateway
from app.server.app import create_app
from bench.common import ROOT, add_record_options, record

UPSTREAM = "http://upstream.bench/v1"
BODIES: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": "fast", "messages": [{"role": "user", "content": "hi"}]}),
    "responses": ("/v1/responses", {"model": "fast", "input": "hi"}),
    "messages": (
        "/v1/messages",
        {"model": "fast", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
    ),
}
COMPLETION = {
    "id": "c",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
}


def trace(front: str, stream: bool) -> tuple[list[str], list[str]]:
    """The `app.` modules entered, in order, consecutive repeats collapsed, until the upstream call."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notes_server", ROOT / "examples" / "servers" / "notes.py")
    assert spec and spec.loader
    notes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(notes)
    config = parse_config(
        {
            "providers": {"up": {"base_url": UPSTREAM, "api_key": "k", "max_retries": 0}},
            "models": {"fast": {"provider": "up", "model": "m"}},
            "mcpServers": {"notes": {"command": "unused", "defer_loading": True}},
            "tool_discovery": {"semantic": {"enabled": False}},
        },
        environ={},
    )
    path, body = BODIES[front]
    body = {**body, "stream": stream}
    modules: list[str] = []
    edge_calls: list[str] = []  # each call the server edge made below itself
    sent = False

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal sent
        if sent or event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if frame.f_code.co_name == "handle_async_request" and not module.startswith("httpx._transports.asgi"):
            request = frame.f_locals.get("request")  # a transport sending a request: the upstream call, or the client's
            sent = isinstance(request, httpx.Request) and request.url.host == "upstream.bench"
        if sent:
            return
        if module.startswith("app.") and (not modules or modules[-1] != module):
            modules.append(module)
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back is not None else ""
        if caller.startswith("app.server.") and module.startswith("app.") and not module.startswith("app.server."):
            edge_calls.append(f"{caller.removeprefix('app.')} -> {module.removeprefix('app.')}.{frame.f_code.co_name}")

    async def run() -> None:
        gateway = Gateway(config, mcp_targets={"notes": notes.mcp})
        await gateway.start()
        app = create_app(Engine(gateway))
        sse = "data: " + str(COMPLETION).replace("'", '"') + "\n\ndata: [DONE]\n\n"
        try:
            with respx.mock(assert_all_called=False) as router:
                reply = httpx.Response(200, text=sse) if stream else httpx.Response(200, json=COMPLETION)
                if stream:
                    reply.headers["content-type"] = "text/event-stream"
                router.post(f"{UPSTREAM}/chat/completions").mock(return_value=reply)
                router.route(host="gw").pass_through()
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw") as client:
                    await client.post(path, json=body)  # warm: imports, caches
                    sys.setprofile(profile)
                    try:
                        await client.post(path, json=body)
                    finally:
                        sys.setprofile(None)
        finally:
            await gateway.stop()

    asyncio.run(run())
    start = next(index for index, module in enumerate(modules) if module.startswith("app.server."))
    return modules[start:], edge_calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--front", choices=sorted(BODIES), default="chat")
    parser.add_argument("--stream", action="store_true")
    add_record_options(parser, "hops")
    args = parser.parse_args()
    modules, edge_calls = trace(args.front, args.stream)
    distinct = list(dict.fromkeys(modules))
    print(f"{'#':>3}  module (first entered, {args.front}{' stream' if args.stream else ''})")
    for index, module in enumerate(distinct, 1):
        print(f"{index:>3}  {module}")
    print("\ncalls the server edge made below itself before the upstream call:")
    for call in edge_calls:
        print(f"     {call}")
    print(f"\nmodules: {len(distinct)}; calls from the edge below it: {len(edge_calls)}")
    if not args.no_record:
        name = args.out or f"hops-{args.front}{'-stream' if args.stream else ''}"
        record(name, {"modules": distinct, "edge_calls": edge_calls}, argv=sys.argv)


if __name__ == "__main__":
    main()
