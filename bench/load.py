"""Load: N concurrent clients through the whole discovery loop (search, MCP call, answer), for a bounded time.

Starts the fake upstream and `toolsift serve` on the demo config (stdio MCP servers) as separate processes on
loopback, runs `--clients` concurrent conversations for `--seconds`, streaming or not, and reports throughput,
latency percentiles, errors and the gateway's peak RSS (sampled from /proc). Ends by itself.

    python bench/load.py [--clients 200] [--seconds 60] [--stream] [--no-record] [--out NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    wait_until_up,
)


def rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its children (the stdio MCP servers), in MB."""
    total = 0
    pids = [pid] + [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


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


async def drive(url: str, clients: int, seconds: float, stream: bool, gateway_pid: int) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    reasons: dict[str, int] = {}
    peak = rss_mb(gateway_pid)
    samples: list[float] = []
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:

        async def worker() -> None:
            nonlocal errors
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
                samples.append(rss_mb(gateway_pid))
                peak = max(peak, samples[-1])
                await asyncio.sleep(1)

        await asyncio.gather(sampler(), *(worker() for _ in range(clients)))
    ms = [value * 1000 for value in latencies]
    third = max(1, len(samples) // 3)
    return {
        "conversations": len(latencies),
        "errors": errors,
        "per_s": len(latencies) / seconds,
        "p50": percentile(ms, 0.5) if ms else 0.0,
        "p99": percentile(ms, 0.99) if ms else 0.0,
        "rss_peak": peak,
        "rss_first_third": sum(samples[:third]) / third if samples else 0.0,
        "rss_last_third": sum(samples[-third:]) / third if samples else 0.0,
        "reasons": reasons,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--stream", action="store_true")
    add_record_options(parser, "load")
    args = parser.parse_args()
    if args.clients > 1000 or args.seconds > 600:
        raise SystemExit("bounded: at most 1000 clients and 600 s")

    upstream_port, gateway_port = free_port(), free_port()
    config = demo_config()
    config["models"]["discovery"] = {"provider": "openai", "model": "discovery"}
    env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}/v1"}
    upstream = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_upstream.py"), str(upstream_port)])
    log = tempfile.NamedTemporaryFile("w", prefix="toolsift-load-", suffix=".log", delete=False)  # noqa: SIM115
    gateway, _ = start_gateway(config, gateway_port, env, log)
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/", upstream)
        wait_until_up(f"http://127.0.0.1:{gateway_port}/healthz", gateway)
        url = f"http://127.0.0.1:{gateway_port}/v1/chat/completions"
        result = asyncio.run(drive(url, args.clients, args.seconds, args.stream, gateway.pid))
    finally:
        gateway.terminate()
        upstream.terminate()
        gateway.wait(30)
        upstream.wait(15)
    kind = "streaming" if args.stream else "plain"
    print(
        f"Load: {args.clients} concurrent {kind} clients for {args.seconds:g} s, each conversation = 3 upstream rounds"
    )
    print("      (search_tools, an MCP call over stdio, the answer)\n")
    header = f"{'conversations':>13} {'errors':>7} {'conv/s':>7} {'p50 ms':>8} {'p99 ms':>8}"
    print(f"{header} {'RSS peak MB':>12} {'RSS early / late':>18}")
    r = result
    row = f"{r['conversations']:>13,} {r['errors']:>7} {r['per_s']:>7.1f} {r['p50']:>8.1f} {r['p99']:>8.1f}"
    print(f"{row} {r['rss_peak']:>12.1f} {r['rss_first_third']:>8.1f} / {r['rss_last_third']:<8.1f}")
    for reason, count in result["reasons"].items():
        print(f"  error x{count}: {reason}")
    print(f"\ngateway log: {log.name}")
    print("RSS is the gateway and its stdio MCP servers; the thirds compare early and late memory (stability).")
    if not args.no_record:
        results = {
            "clients": args.clients,
            "seconds": args.seconds,
            "stream": args.stream,
            "upstream_rounds_per_conversation": 3,
            "conversations": r["conversations"],
            "errors": r["errors"],
            "conversations_per_s": r["per_s"],
            "p50_ms": r["p50"],
            "p99_ms": r["p99"],
            "rss_peak_mb": r["rss_peak"],
            "rss_first_third_mb": r["rss_first_third"],
            "rss_last_third_mb": r["rss_last_third"],
            "error_reasons": r["reasons"],
        }
        record(args.out or "load", results, load_generator=f"python httpx (asyncio, {args.clients} clients)")


if __name__ == "__main__":
    main()
