"""The bill, measured: what each way of loading tools costs in input tokens once the provider's prompt cache is
counted.

Committed conversations (bench/data/cache: a chat app, an agent like Claude Code, a Codex-like Responses session)
run through the real gateway (`toolsift serve`) against scripted upstreams in this process (chat completions,
Anthropic Messages, Responses: bench/cache_upstream.py), which act as the model would: search for a need, call
the found tool, answer. The MCP tools are the first 20, 100 or 1,000 tools of bench/data's tool-retrieval data
(real MCP servers first), served by bench/cache_catalog.py, or (`demo`) the bundled demo's example servers, on
which the chat app asks for their tools. Every upstream request is billed by
bench/cache_bill.py: upstream requests, input tokens, the prefix-cacheable share (the longest prefix shared with an
earlier request of the conversation, in the provider's render order: tools, system, messages), uncached tokens,
and the effective input at the provider's published multipliers (OpenAI: cached 0.1x from 1,024 tokens in
128-token steps; Anthropic: write 1.25x, read 0.1x at the breakpoints the request carries), with each mode's
ratio to every tool loaded.

A mode is a config overlay (`MODES`, or `--mode NAME=JSON`); `"*"` under `providers` stands for every provider.
A mode whose config the gateway refuses is printed as not available. Search is by keywords (the search model off)
unless --semantic.

    python bench/cache.py [--quick] [--modes all,tools,call_tool,native,auto] [--catalogs demo,20,100,1000]
                          [--mode NAME=JSON] [--semantic] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from cache_bill import Ledger, Totals, render  # noqa: E402
from cache_upstream import Action, Model, Step, Upstreams  # noqa: E402
from common import DATA, add_record_options, free_port, input_schema, record, require_data, start_gateway  # noqa: E402

SCRIPTS = DATA / "cache"
TOOLS_DATA = DATA / "tool_retrieval_dev.json"
MODES: dict[str, dict[str, Any]] = {
    "all": {"tool_discovery": {"enabled": False}},  # every tool loaded
    "tools": {"tool_discovery": {"defer": "all"}, "providers": {"*": {"deferral": "tools"}}},  # found: appended
    "auto": {},  # the product's default (`defer: auto`)
    "call_tool": {"tool_discovery": {"defer": "all"}, "providers": {"*": {"deferral": "call_tool"}}},
    "native": {"tool_discovery": {"defer": "all"}, "providers": {"*": {"deferral": "native"}}},
}
PROVIDERS = {"chat": "openai", "anthropic": "anthropic", "responses": "openai_responses"}
RUNS = [("chat_app", "chat"), ("chat_app", "anthropic"), ("chat_app", "responses"), ("agent", "chat"),
        ("agent", "anthropic"), ("agent", "responses"), ("codex", "responses")]  # fmt: skip
QUICK_RUNS = [("chat_app", "chat"), ("agent", "anthropic"), ("codex", "responses")]
MAX_SERVERS = 12  # MCP server processes per catalog: the data's servers, the smaller merged past this
DEMO = "demo"  # the catalog of the bundled demo (examples/servers), played by the chat app on its own tools
DEMO_SERVERS = {"weather": "weather", "notes": "notes", "calendar": "calendar_server", "finance": "finance",
                "textkit": "textkit"}  # fmt: skip


# -- catalogs -----------------------------------------------------------------------------------------------------


def catalog_servers(size: int, data: Path) -> dict[str, list[dict[str, Any]]]:
    """The first `size` tools of the data (real MCP servers first), as at most MAX_SERVERS servers: the data's own
    servers in order, the ones past the limit merged into the last."""
    tools = sorted(json.loads(data.read_text())["tools"], key=lambda tool: tool["part"] != "livemcp")[:size]
    servers: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        name = re.sub(r"[^a-z0-9]+", "_", tool["server"].lower()).strip("_")[:24] or "server"
        if name not in servers and len(servers) == MAX_SERVERS:
            name = list(servers)[-1]
        schema = input_schema(tool)
        listed = servers.setdefault(name, [])
        if all(entry["name"] != tool["name"] for entry in listed):
            listed.append({"name": tool["name"], "description": tool["description"], "input_schema": schema,
                           "data_id": f"{tool['server']}/{tool['name']}"})  # fmt: skip
    return servers


def exposed_names(servers: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """The data's `server/tool` -> the gateway's name for it (`server__tool`)."""
    return {tool["data_id"]: f"{server}__{tool['name']}" for server, tools in servers.items() for tool in tools}


# -- conversations ------------------------------------------------------------------------------------------------


class DemoNames(dict[str, str]):
    """The demo's `server/tool` -> the gateway's name for it (`server__tool`)."""

    def __missing__(self, key: str) -> str:
        return key.replace("/", "__")


def load_script(name: str, names: dict[str, str]) -> dict[str, Any]:
    """A committed conversation with its MCP tools under the gateway's names and its steps as the model's."""
    script: dict[str, Any] = json.loads(require_data(SCRIPTS / f"{name}.json").read_text())
    steps = []
    for step in script["steps"]:
        actions = []
        for action in step["actions"]:
            if "mcp" in action:
                mcp = Action(names[action["mcp"]], action["arguments"], query=action["query"])
                actions.append(replace(mcp, expect=action.get("expect", "")))
            else:
                actions.append(Action(action["client"], action["arguments"], result=action["result"]))
        steps.append(Step(step["user"], tuple(actions), step["answer"]))
    script["model_steps"] = steps
    return script


class Client:
    """A client of one front that plays a script: sends each user turn with its whole history, runs the client
    tools the answer calls (their results from the script) and sends again, as a real client does."""

    def __init__(self, http: httpx.Client, script: dict[str, Any], model: str, session: str) -> None:
        self.http, self.script, self.model = http, script, model
        self.headers = {"X-Session-Id": session}
        self.answers: list[str] = []
        self.client_calls: list[str] = []

    def play(self) -> None:
        front = self.script["front"]
        history: list[dict[str, Any]] = []
        for step in self.script["model_steps"]:
            results = {action.tool: action.result for action in step.actions if not action.query}
            getattr(self, f"_{front}")(history, step.user, results)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(path, json=body, headers=self.headers)
        if response.status_code != 200:
            raise RuntimeError(f"{path}: {response.status_code} {response.text[:500]}")
        answer: dict[str, Any] = response.json()
        return answer

    def _chat(self, history: list[dict[str, Any]], user: str, results: dict[str, str]) -> None:
        if not history:
            history.append({"role": "system", "content": self.script["system"]})
        history.append({"role": "user", "content": user})
        tools = [{"type": "function", "function": tool} for tool in self.script["client_tools"]]
        for _ in range(8):
            body = {"model": self.model, "messages": history, **({"tools": tools} if tools else {})}
            message = self._post("/v1/chat/completions", body)["choices"][0]["message"]
            history.append({key: value for key, value in message.items() if value is not None})
            calls = message.get("tool_calls") or []
            if not calls:
                self.answers.append(message.get("content") or "")
                return
            for call in calls:
                name = call["function"]["name"]
                self.client_calls.append(name)
                history.append({"role": "tool", "tool_call_id": call["id"], "content": results.get(name, "no result")})

    def _messages(self, history: list[dict[str, Any]], user: str, results: dict[str, str]) -> None:
        history.append({"role": "user", "content": [{"type": "text", "text": user}]})
        system = [{"type": "text", "text": self.script["system"], "cache_control": {"type": "ephemeral"}}]
        tools = [{"name": tool["name"], "description": tool["description"], "input_schema": tool["parameters"]}
                 for tool in self.script["client_tools"]]  # fmt: skip
        for _ in range(8):
            marked = copy.deepcopy(history)  # as Claude Code does: a breakpoint on the newest message
            marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
            body = {"model": self.model, "max_tokens": 1024, "system": system, "tools": tools, "messages": marked}
            answer = self._post("/v1/messages", body)
            history.append({"role": "assistant", "content": answer["content"]})
            calls = [block for block in answer["content"] if block["type"] == "tool_use"]
            if not calls:
                self.answers.append("".join(block.get("text", "") for block in answer["content"]))
                return
            self.client_calls += [call["name"] for call in calls]
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call["id"], "content": results.get(call["name"], "no result")}
                for call in calls
            ]})  # fmt: skip

    def _responses(self, history: list[dict[str, Any]], user: str, results: dict[str, str]) -> None:
        history.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": user}]})
        tools = [{"type": "function", **tool} for tool in self.script["client_tools"]]
        for _ in range(8):
            body = {"model": self.model, "instructions": self.script["system"], "input": history, "tools": tools,
                    "store": False}  # fmt: skip
            output = self._post("/v1/responses", body)["output"]
            calls = [item for item in output if item["type"] == "function_call"]
            for item in output:
                if item["type"] == "message":
                    text = "".join(part.get("text", "") for part in item["content"])
                    history.append({"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": text}]})  # fmt: skip
                    if not calls:
                        self.answers.append(text)
                elif item["type"] == "function_call":
                    history.append({key: item[key] for key in ("type", "call_id", "name", "arguments")})
            if not calls:
                return
            for call in calls:
                self.client_calls.append(call["name"])
                history.append({"type": "function_call_output", "call_id": call["call_id"],
                                "output": results.get(call["name"], "no result")})  # fmt: skip


# -- one gateway per catalog and mode -----------------------------------------------------------------------------


def merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`base` with `overlay` merged in, key by key; `"*"` under `providers` stands for each provider."""
    result = copy.deepcopy(base)
    for key, value in overlay.items():
        if key == "providers" and "*" in value:
            value = {name: value["*"] for name in result.get("providers", {})}
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def catalog_config(servers: dict[str, Path]) -> dict[str, Any]:
    """`mcpServers` serving each catalog file with bench/cache_catalog.py."""
    script = str(ROOT / "bench" / "cache_catalog.py")
    return {name: {"command": sys.executable, "args": [script], "env": {"CATALOG": str(path)}}
            for name, path in servers.items()}  # fmt: skip


def demo_config() -> dict[str, Any]:
    """`mcpServers` of the bundled demo: its five example servers, 39 tools."""
    return {name: {"command": sys.executable, "args": [str(ROOT / "examples" / "servers" / f"{file}.py")]}
            for name, file in DEMO_SERVERS.items()}  # fmt: skip


def gateway_config(mcp_servers: dict[str, Any], upstream: str, semantic: bool) -> dict[str, Any]:
    providers = {name: {"type": kind, "base_url": upstream, "api_key": "bench", "max_retries": 0}
                 for name, kind in PROVIDERS.items()}  # fmt: skip
    return {
        "providers": providers,
        "default_provider": "chat",
        "models": {f"via-{name}": {"provider": name, "model": "scripted"} for name in PROVIDERS},
        "mcpServers": mcp_servers,
        "tool_discovery": {"enabled": True, "semantic": {"enabled": semantic}},
    }


def wait_for_gateway(port: int, process: Any, seconds: float = 120) -> bool:
    """True once the gateway answers with every server connected; False when it exits (its config refused)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json()
            down = {name: server.get("error") for name, server in health.get("servers", {}).items()
                    if server.get("state") == "down"}  # fmt: skip
            if down:
                raise SystemExit(f"catalog servers down: {down}")
            if health.get("search", {}).get("mode") != "embedding" and health.get("status") == "ok":
                return True
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise SystemExit(f"the gateway on port {port} did not come up")


@dataclass
class Row:
    catalog: int | str
    shape: str
    provider: str
    mode: str
    totals: Totals | None  # None: the mode is not available
    misses: int = 0
    client_calls: int = 0
    answers: int = 0
    tool_arrays: int = 0  # distinct `tools` arrays the conversation sent upstream

    def plain(self) -> dict[str, Any]:
        base = {"catalog": self.catalog, "shape": self.shape, "provider": self.provider, "mode": self.mode}
        if self.totals is None:
            return {**base, "available": False}
        totals = self.totals
        return {**base, "available": True, "requests": totals.requests, "input_tokens": totals.tokens,
                "cacheable_share": totals.share, "uncached_tokens": totals.uncached,
                "effective_input": totals.effective, "misses": self.misses, "client_calls": self.client_calls,
                "answers": self.answers, "distinct_tool_arrays": self.tool_arrays}  # fmt: skip


def run_mode(
    config: dict[str, Any], mode: str, catalog: int | str, runs: list[tuple[str, str]], upstreams: Upstreams,
    scripts: dict[str, dict[str, Any]],
) -> list[Row]:  # fmt: skip
    port = free_port()
    with tempfile.TemporaryFile("w+") as log:
        return _run_mode(config, mode, catalog, runs, upstreams, scripts, port, log)


def _run_mode(
    config: dict[str, Any], mode: str, catalog: int | str, runs: list[tuple[str, str]], upstreams: Upstreams,
    scripts: dict[str, dict[str, Any]], port: int, log: IO[str],
) -> list[Row]:  # fmt: skip
    process, workdir = start_gateway(config, port, log=log)
    rows = []
    try:
        if not wait_for_gateway(port, process):
            log.seek(0)
            reason = " ".join(log.read().split())[:300]
            print(f"  {mode}: not available ({reason})", file=sys.stderr)
            return [Row(catalog, shape, provider, mode, None) for shape, provider in runs]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as http:
            for shape, provider in runs:
                upstreams.requests.clear()
                misses = len(upstreams.model.misses)
                client = Client(http, scripts[shape], f"via-{provider}", f"bench-{shape}-{provider}-{mode}")
                client.play()
                ledger, totals = Ledger(), Totals()
                kind = PROVIDERS[provider]
                for _, body in upstreams.requests:
                    totals.add(ledger.bill(render(kind, body)), "anthropic" if kind == "anthropic" else "openai")
                arrays = {json.dumps(body.get("tools"), sort_keys=True) for _, body in upstreams.requests}
                rows.append(Row(catalog, shape, provider, mode, totals, len(upstreams.model.misses) - misses,
                                len(client.client_calls), len(client.answers), len(arrays)))  # fmt: skip
    finally:
        process.terminate()
        process.wait(30)
        shutil.rmtree(workdir, ignore_errors=True)
    return rows


def mode_rows(
    base: dict[str, Any], overlay: dict[str, Any], mode: str, catalog: int | str, runs: list[tuple[str, str]],
    upstreams: Upstreams, scripts: dict[str, dict[str, Any]],
) -> list[Row]:  # fmt: skip
    """The mode's rows; when the gateway refuses an overlay meant for every provider (`"*"`), it is tried on each
    provider alone, so a mode that one provider type supports and another does not still gets that type's rows."""
    rows = run_mode(merged(base, overlay), mode, catalog, runs, upstreams, scripts)
    each = overlay.get("providers", {}).get("*")
    if each is None or any(row.totals is not None for row in rows):
        return rows
    rows = []
    for provider in PROVIDERS:
        mine = [run for run in runs if run[1] == provider]
        if mine:
            alone = merged(base, {**overlay, "providers": {provider: each}})
            rows += run_mode(alone, mode, catalog, mine, upstreams, scripts)
    return sorted(rows, key=lambda row: runs.index((row.shape, row.provider)))


# -- the table ----------------------------------------------------------------------------------------------------


def table(rows: list[Row]) -> str:
    """One line per conversation and mode, with each mode's ratio of effective input to every tool loaded; a mode
    the gateway refused is one line per catalog."""
    baseline = {(row.catalog, row.shape, row.provider): row.totals for row in rows if row.mode == "all"}
    header = (f"{'catalog':>7} {'conversation':<12} {'upstream':<9} {'mode':<9} {'requests':>8} {'tokens in':>10} "
              f"{'cacheable':>9} {'uncached':>9} {'effective':>10} {'vs all':>7} {'arrays':>6} "
              f"{'misses':>6}")  # fmt: skip
    lines, refused = [header, "-" * len(header)], set()
    for row in rows:
        label = f"{row.catalog:>7} {row.shape:<12} {row.provider:<9} {row.mode:<9}"
        if row.totals is None:
            alike = [other for other in rows if (other.catalog, other.mode) == (row.catalog, row.mode)]
            if any(other.totals is not None for other in alike):
                lines.append(f"{label} not available")
            elif (row.catalog, row.mode) not in refused:
                refused.add((row.catalog, row.mode))
                lines.append(f"{row.catalog:>7} {'(every one)':<12} {'':<9} {row.mode:<9} not available")
            continue
        totals, base = row.totals, baseline.get((row.catalog, row.shape, row.provider))
        ratio = f"{totals.effective / base.effective:.2f}x" if base and base.effective else "-"
        lines.append(f"{label} {totals.requests:>8} {totals.tokens:>10,} {totals.share:>9.1%} {totals.uncached:>9,} "
                     f"{totals.effective:>10,.0f} {ratio:>7} {row.tool_arrays:>6} {row.misses:>6}")  # fmt: skip
    return "\n".join(lines)


def serve_upstreams(upstreams: Upstreams) -> tuple[uvicorn.Server, str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(upstreams.app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the scripted upstreams did not start")
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the 100-tool catalog and one conversation per front")
    parser.add_argument("--modes", default="all,tools,call_tool,native,auto", help="modes to run, in order")
    parser.add_argument("--mode", action="append", default=[], metavar="NAME=JSON", help="add or replace a mode")
    parser.add_argument("--catalogs", default="demo,20,100,1000", help="catalog sizes, and `demo`: the bundled one")
    parser.add_argument("--semantic", action="store_true", help="hybrid search with the local model")
    parser.add_argument("--data", type=Path, default=TOOLS_DATA, help="the tool-retrieval data file")
    add_record_options(parser, "cache")
    args = parser.parse_args()
    data = require_data(args.data)
    modes = dict(MODES)
    for extra in args.mode:
        name, _, overlay = extra.partition("=")
        modes[name] = json.loads(overlay)
    chosen = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    if unknown := [mode for mode in chosen if mode not in modes]:
        parser.error(f"unknown modes {unknown}; known: {sorted(modes)}")
    catalogs: list[int | str] = (
        [100]
        if args.quick
        else [size if size == DEMO else int(size) for size in (each.strip() for each in args.catalogs.split(","))]
    )
    runs = QUICK_RUNS if args.quick else RUNS

    model = Model()
    upstreams = Upstreams(model)
    server, upstream_url = serve_upstreams(upstreams)
    rows: list[Row] = []
    started = time.monotonic()
    try:
        for size in catalogs:
            if size == DEMO:
                chat_app = load_script("chat_app_demo", DemoNames())
                model.learn(chat_app["model_steps"])
                base = gateway_config(demo_config(), upstream_url, args.semantic)
                shown = [run for run in runs if run[0] == "chat_app"]
                for mode in chosen:
                    print(f"catalog {size}: mode {mode}", file=sys.stderr)
                    rows += mode_rows(base, modes[mode], mode, size, shown, upstreams, {"chat_app": chat_app})
                continue
            assert isinstance(size, int)
            servers = catalog_servers(size, data)
            names = exposed_names(servers)
            scripts = {shape: load_script(shape, names) for shape in {shape for shape, _ in runs}}
            for script in scripts.values():
                model.learn(script["model_steps"])
            with tempfile.TemporaryDirectory(prefix="toolsift-cache-") as folder:
                paths = {}
                for name, tools in servers.items():
                    paths[name] = Path(folder) / f"{name}.json"
                    paths[name].write_text(json.dumps(tools))
                base = gateway_config(catalog_config(paths), upstream_url, args.semantic)
                for mode in chosen:
                    print(f"catalog {size}: mode {mode}", file=sys.stderr)
                    rows += mode_rows(base, modes[mode], mode, size, runs, upstreams, scripts)
    finally:
        server.should_exit = True
    text = table(rows)
    print(text)
    print(
        f"\n({time.monotonic() - started:.0f} s) o200k_base tokens. cacheable: the share of input in a prefix shared "
        "with an earlier request of the conversation; effective: input at the upstream's own multipliers (OpenAI's "
        "for chat and Responses, Anthropic's at the breakpoints the requests carry); arrays: distinct `tools` "
        "arrays sent upstream; misses: scripted MCP tools not found, or whose result did not reach the model"
    )
    if not args.no_record:
        name = args.out or "cache"
        results = {"modes": {mode: modes[mode] for mode in chosen}, "catalogs": catalogs, "semantic": args.semantic,
                   "rows": [row.plain() for row in rows]}  # fmt: skip
        record(name, results).with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
