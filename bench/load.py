"""Load: N concurrent clients through the whole discovery loop (search, MCP call, answer), for a bounded time.

Starts the fake upstream and `toolsift serve` on the demo config (stdio MCP servers) as separate processes on
loopback, runs `--clients` concurrent conversations for `--seconds`, streaming or not, and reports throughput,
latency percentiles, CPU per conversation, errors and the gateway's peak RSS (sampled from /proc). Ends by itself.

Several setups in one run, one after the other, on the same clients and the same fake upstream:
- `--instances 1,4`: one gateway process for each count of processes of the finance server (the stdio server
  every conversation calls), side by side;
- `--replicas R --workers W` (R x W > 1): then also R gateways of W worker processes each, sharing state in one
  redis-server (started here; needs it on PATH), the clients spread over the replicas (each client keeps one).
  CPU per conversation counts every process of the setup (gateways, workers, stdio servers, Redis): on a machine
  with few cores this shows what sharing state costs, not a gain. Each worker process starts its own processes of
  the finance server, at the first `--instances` count.

The finance server answers in about a millisecond, so by default the gateway's CPU sets p99 and `instances` has
nothing to spread. `--call-ms MS` starts it through bench/serial_server.py instead (the same tools under the same
names): each call then takes MS milliseconds and a process serves one call at a time, like real stdio servers that
do one thing at a time, so one process serves at most 1000 / MS calls a second and N `instances` N times that.

    python bench/load.py [--clients 200] [--seconds 60] [--stream] [--instances 1,4] [--call-ms 50]
                         [--replicas 2 --workers 2] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from common import (  # noqa: E402
    add_record_options,
    demo_config,
    free_port,
    percentile,
    record,
    start_gateway,
    start_redis,
    wait_until_up,
)

TICKS = os.sysconf("SC_CLK_TCK")
CALLED_SERVER = "finance"  # the stdio server each conversation calls (finance__convert_currency)
SERIAL_SERVER = ROOT / "bench" / "serial_server.py"  # the same server, --call-ms per call, one call at a time


@dataclass(frozen=True)
class Setup:
    replicas: int = 1
    workers: int = 1
    instances: int = 1

    @property
    def label(self) -> str:
        shape = "1 process" if self.replicas * self.workers == 1 else f"{self.replicas} x {self.workers} workers"
        return f"{shape}, {CALLED_SERVER} x{self.instances}"

    @property
    def shared(self) -> bool:
        return self.replicas * self.workers > 1


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (workers, the stdio MCP servers), read from /proc."""
    found, queue = [], [pid]
    while queue:
        one = queue.pop()
        found.append(one)
        try:
            queue.extend(int(child) for child in Path(f"/proc/{one}/task/{one}/children").read_text().split())
        except OSError:
            continue
    return found


def rss_mb(roots: list[int]) -> float:
    """Resident memory of the setup's processes and their children, in MB."""
    total = 0
    for one in (pid for root in roots for pid in process_tree(root)):
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(roots: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each process of the setup, by pid."""
    used = {}
    for one in (pid for root in roots for pid in process_tree(root)):
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used[one] = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    return used


async def conversation(client: httpx.AsyncClient, url: str, stream: bool) -> None:
    body = {"model": "discovery", "stream": stream, "messages": [{"role": "user", "content": "100 USD in EUR?"}]}
    if stream:
        async with client.stream("POST", url, json=body) as response:
            response.raise_for_status()
            text = "".join([line async for line in response.aiter_lines()])
            if '"error"' in text:
                raise RuntimeError("error event: " + text[text.index('"error"') :][:200])
            if "[DONE]" not in text:
                raise RuntimeError("stream ended without [DONE]")
        return
    response = await client.post(url, json=body)
    response.raise_for_status()
    if response.json()["tool_discovery"]["tools_called"] != ["finance__convert_currency"]:
        raise RuntimeError("the loop did not run")


async def drive(urls: list[str], clients: int, seconds: float, stream: bool, roots: list[int]) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    reasons: dict[str, int] = {}
    peak = rss_mb(roots)
    samples: list[float] = []
    cpu_before = cpu_seconds(roots)
    stop = time.monotonic() + seconds
    per_url = max(1, clients // len(urls) + 1)
    limits = httpx.Limits(max_connections=per_url, max_keepalive_connections=per_url)
    pools = [httpx.AsyncClient(timeout=60, limits=limits) for _ in urls]

    async def worker(number: int) -> None:
        nonlocal errors
        client, url = pools[number % len(urls)], urls[number % len(urls)]
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                await conversation(client, url, stream)
                latencies.append(time.perf_counter() - started)
            except Exception as exc:  # counted and reported below
                errors += 1
                reason = f"{type(exc).__name__}: {str(exc)[:160]}"
                reasons[reason] = reasons.get(reason, 0) + 1

    async def sampler() -> None:
        nonlocal peak
        while time.monotonic() < stop:
            samples.append(rss_mb(roots))
            peak = max(peak, samples[-1])
            await asyncio.sleep(1)

    try:
        await asyncio.gather(sampler(), *(worker(number) for number in range(clients)))
    finally:
        for pool in pools:
            await pool.aclose()
    cpu_after = cpu_seconds(roots)
    cpu = sum(used - cpu_before.get(pid, 0.0) for pid, used in cpu_after.items())
    ms = [value * 1000 for value in latencies]
    third = max(1, len(samples) // 3)
    return {
        "conversations": len(latencies),
        "errors": errors,
        "per_s": len(latencies) / seconds,
        "p50": percentile(ms, 0.5) if ms else 0.0,
        "p99": percentile(ms, 0.99) if ms else 0.0,
        "cpu_ms_per_conversation": cpu * 1000 / len(latencies) if latencies else 0.0,
        "rss_peak": peak,
        "rss_first_third": sum(samples[:third]) / third if samples else 0.0,
        "rss_last_third": sum(samples[-third:]) / third if samples else 0.0,
        "reasons": reasons,
    }


def shared_redis() -> tuple[subprocess.Popen[bytes], str]:
    if shutil.which("redis-server") is None:
        raise SystemExit("--replicas/--workers share state in Redis: install redis-server (it is started here)")
    port = free_port()
    return start_redis(port), f"redis://127.0.0.1:{port}/0"


def setup_config(setup: Setup, call_ms: float) -> dict[str, Any]:
    """The demo config for `setup`: the called server at its `instances`, through bench/serial_server.py when calls
    are to take `call_ms` ms each."""
    config = demo_config()
    config["models"]["discovery"] = {"provider": "openai", "model": "discovery"}
    called = config["mcpServers"][CALLED_SERVER]
    called["instances"] = setup.instances
    if call_ms > 0:
        called["args"] = [str(SERIAL_SERVER), "--call-ms", f"{call_ms:g}"]
    return config


def run_setup(setup: Setup, args: argparse.Namespace, env: dict[str, str], log: IO[str]) -> dict[str, Any]:
    config = setup_config(setup, args.call_ms)
    redis = None
    if setup.shared:
        redis, url = shared_redis()
        config["sessions"] = {"redis_url": url}
    gateways = []
    try:
        for _ in range(setup.replicas):
            port = free_port()
            process, _ = start_gateway(config, port, env, log, ["--workers", str(setup.workers)])
            gateways.append((process, port))
        for process, port in gateways:
            wait_until_up(f"http://127.0.0.1:{port}/healthz", process)
        urls = [f"http://127.0.0.1:{port}/v1/chat/completions" for _, port in gateways]
        roots = [process.pid for process, _ in gateways] + ([redis.pid] if redis is not None else [])
        return asyncio.run(drive(urls, args.clients, args.seconds, args.stream, roots))
    finally:
        for process, _ in gateways:
            process.terminate()
        for process, _ in gateways:
            process.wait(60)
        if redis is not None:
            redis.terminate()
            redis.wait(15)


def setups(args: argparse.Namespace) -> list[Setup]:
    counts = [int(count) for count in args.instances.split(",")]
    if not counts or min(counts) < 1 or max(counts) > 16:
        raise SystemExit("--instances: counts from 1 to 16, e.g. 1,4")
    planned = [Setup(instances=count) for count in counts]
    if args.replicas * args.workers > 1:
        planned.append(Setup(args.replicas, args.workers, counts[0]))
    return planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--instances", default="1", help="processes of the called stdio server, e.g. 1,4")
    parser.add_argument(
        "--call-ms",
        type=float,
        default=0,
        metavar="MS",
        help="each call to the called server takes MS ms, one at a time per process (default 0: the example as is)",
    )
    parser.add_argument("--replicas", type=int, default=1, help="gateways sharing one Redis (with --workers)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes of each replica")
    add_record_options(parser, "load")
    args = parser.parse_args()
    if args.clients > 1000 or args.seconds > 600 or args.replicas > 8 or args.workers > 8:
        raise SystemExit("bounded: at most 1000 clients, 600 s, 8 replicas and 8 workers")
    if not 0 <= args.call_ms <= 10_000:
        raise SystemExit("--call-ms: from 0 to 10000")
    planned = setups(args)

    upstream_port = free_port()
    env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}/v1"}
    upstream = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_upstream.py"), str(upstream_port)])
    log = tempfile.NamedTemporaryFile("w", prefix="toolsift-load-", suffix=".log", delete=False)  # noqa: SIM115
    results: list[tuple[Setup, dict[str, Any]]] = []
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/", upstream)
        for setup in planned:
            results.append((setup, run_setup(setup, args, env, log)))
    finally:
        upstream.terminate()
        upstream.wait(15)
    report(args, results, log.name)


def report(args: argparse.Namespace, results: list[tuple[Setup, dict[str, Any]]], log: str) -> None:
    cores = os.cpu_count()
    kind = "streaming" if args.stream else "plain"
    print(
        f"Load: {args.clients} concurrent {kind} clients for {args.seconds:g} s, each conversation = 3 upstream rounds"
    )
    print(f"      (search_tools, an MCP call over stdio, the answer); {cores} logical cores")
    print(f"      {call_time(args.call_ms)}\n")
    header = f"{'setup':<28} {'conversations':>13} {'errors':>7} {'conv/s':>7} {'p50 ms':>8} {'p99 ms':>8}"
    print(f"{header} {'CPU ms/conv':>11} {'RSS peak MB':>12} {'RSS early / late':>18}")
    for setup, r in results:
        row = f"{setup.label:<28} {r['conversations']:>13,} {r['errors']:>7} {r['per_s']:>7.1f}"
        row += f" {r['p50']:>8.1f} {r['p99']:>8.1f} {r['cpu_ms_per_conversation']:>11.1f}"
        print(f"{row} {r['rss_peak']:>12.1f} {r['rss_first_third']:>8.1f} / {r['rss_last_third']:<8.1f}")
        for reason, count in r["reasons"].items():
            print(f"  error x{count}: {reason}")
    print(f"gateway log: {log}", file=sys.stderr)  # a machine path: never in a recorded table
    print()
    print(
        f"`{CALLED_SERVER} xN`: N processes of the called stdio server (its `instances`) in each gateway process, and\n"
        "in each worker of a replica. The call time is what one call to it takes; with --call-ms each process\n"
        "serves one call at a time, so calls beyond N wait their turn.\n"
        "CPU and RSS count every process of a setup: the gateways (and their workers), their stdio MCP servers and,\n"
        "with several processes, Redis. The thirds compare early and late memory (stability)."
    )
    if args.no_record:
        return
    rows = [{"setup": setup.label, **vars_of(setup), **plain(r)} for setup, r in results]
    first = rows[0]
    summary = {
        "clients": args.clients,
        "seconds": args.seconds,
        "stream": args.stream,
        "logical_cores": cores,
        "upstream_rounds_per_conversation": 3,
        "call_ms": args.call_ms,
        "called_server": called_server(args.call_ms),
        **{key: value for key, value in first.items() if key not in ("setup", "replicas", "workers", "instances")},
        "setups": rows,
    }
    record(args.out or "load", summary, load_generator=f"python httpx (asyncio, {args.clients} clients)")


def call_time(call_ms: float) -> str:
    """The report's line on what a call to the called server costs."""
    if call_ms > 0:
        return (
            f"call time: {call_ms:g} ms per {CALLED_SERVER} call, one call at a time per process "
            f"(--call-ms {call_ms:g}: at most {1000 / call_ms:.4g} calls/s per process)"
        )
    return f"call time: {CALLED_SERVER} as in the examples, about 1 ms per call (--call-ms 0)"


def called_server(call_ms: float) -> str:
    return f"bench/serial_server.py --call-ms {call_ms:g}" if call_ms > 0 else "examples/servers/finance.py"


def vars_of(setup: Setup) -> dict[str, int]:
    return {"replicas": setup.replicas, "workers": setup.workers, "instances": setup.instances}


def plain(r: dict[str, Any]) -> dict[str, Any]:
    """A setup's numbers under the record's names (the first setup's are also the record's top level, as before)."""
    return {
        "conversations": r["conversations"],
        "errors": r["errors"],
        "conversations_per_s": r["per_s"],
        "p50_ms": r["p50"],
        "p99_ms": r["p99"],
        "cpu_ms_per_conversation": r["cpu_ms_per_conversation"],
        "rss_peak_mb": r["rss_peak"],
        "rss_first_third_mb": r["rss_first_third"],
        "rss_last_third_mb": r["rss_last_third"],
        "error_reasons": r["reasons"],
    }


if __name__ == "__main__":
    main()
