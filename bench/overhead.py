"""Pass-through overhead: what the gateway adds to a call that uses no MCP tool, against the upstream direct and,
with `--litellm`, against LiteLLM's proxy (installed by this bench into its own venv, one worker), same run.

For each target: sequential latency and first-token latency (interleaved requests), CPU per request of its
own process (from /proc, one target at a time), and throughput with 32 concurrent clients (measured with `wrk`
when it is installed, which keeps the load generator's own CPU small; with Python otherwise or with --no-wrk).
Loopback only. The run is recorded as bench/results/overhead.json, or overhead-python.json when the throughput
came from the Python load generator.

    python bench/overhead.py [--requests 300] [--seconds 10] [--litellm] [--baseline DIR] [--no-wrk]
                             [--no-record] [--out NAME]

`--baseline DIR` also runs the toolsift of another checkout (say `git worktree add /tmp/before HEAD~5`) as the
target `baseline`, interleaved with this one, so a change is measured against what it replaces in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from common import add_record_options, free_port, percentile, record, start_gateway, wait_until_up  # noqa: E402
from ttft import CLIENT, first_content_seconds  # noqa: E402

LITELLM_VENV = ROOT / "bench" / ".litellm-venv"
TICKS = os.sysconf("SC_CLK_TCK")
CONCURRENCY = 32
PYTHON_LOAD = "python httpx (asyncio)"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def start_litellm(upstream: str, port: int) -> subprocess.Popen[bytes]:
    if not (LITELLM_VENV / "bin" / "litellm").exists():
        print("installing litellm[proxy] into bench/.litellm-venv (once)...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
        subprocess.run([str(LITELLM_VENV / "bin" / "pip"), "install", "-q", "litellm[proxy]"], check=True)
    config = Path(tempfile.mkdtemp(prefix="litellm-")) / "config.yaml"
    config.write_text(
        "model_list:\n  - model_name: fast\n    litellm_params:\n"
        f"      model: openai/bench-model\n      api_base: {upstream}\n      api_key: bench\n"
        # Neither proxy checks client keys in this comparison.
        "general_settings:\n  dangerously_permit_weak_or_unset_master_key: true\n"
    )
    return subprocess.Popen(
        [str(LITELLM_VENV / "bin" / "litellm"), "--config", str(config), "--port", str(port), "--num_workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def sequential_ms(client: httpx.Client, url: str, body: dict[str, object]) -> float:
    started = time.perf_counter()
    client.post(url, json=body).raise_for_status()
    return (time.perf_counter() - started) * 1000


async def throughput(url: str, body: dict[str, object], seconds: float, concurrency: int = 32) -> tuple[float, int]:
    done = errors = 0
    stop = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def worker() -> None:
            nonlocal done, errors
            while time.monotonic() < stop:
                try:
                    (await client.post(url, json=body)).raise_for_status()
                    done += 1
                except httpx.HTTPError:
                    errors += 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / seconds, errors


def wrk_version() -> str | None:
    """`wrk <version>` of the wrk on PATH (`wrk -v` prints it and exits 1), or None when there is none."""
    if not shutil.which("wrk"):
        return None
    done = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    words = (done.stdout or done.stderr).split()
    return " ".join(words[:2]) if words[:1] == ["wrk"] else "wrk"


def wrk_throughput(url: str, body: dict[str, object], seconds: float, concurrency: int = 32) -> tuple[float, int]:
    """Throughput measured with wrk (C, one thread): the load generator then costs little of the shared CPU."""
    script = Path(tempfile.mkdtemp(prefix="wrk-")) / "post.lua"
    payload = json.dumps(body).replace("\\", "\\\\").replace('"', '\\"')
    script.write_text(
        f'wrk.method = "POST"\nwrk.body = "{payload}"\nwrk.headers["Content-Type"] = "application/json"\n'
    )
    result = subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", f"-d{int(seconds)}s", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
    )
    rate = float(next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("Requests/sec:")))
    errors = sum(int(n) for line in result.stdout.splitlines() if "Non-2xx" in line for n in line.split()[-1:])
    return rate, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--litellm", action="store_true", help="also measure LiteLLM's proxy (installs it once)")
    parser.add_argument("--baseline", type=Path, help="also measure the toolsift of this checkout, same run")
    parser.add_argument("--no-wrk", action="store_true", help="throughput from the Python load generator")
    add_record_options(parser, "overhead")
    args = parser.parse_args()
    wrk = None if args.no_wrk else wrk_version()

    upstream_port, gateway_port, litellm_port = free_port(), free_port(), free_port()
    upstream_url = f"http://127.0.0.1:{upstream_port}/v1"
    config = {
        "providers": {"up": {"base_url": upstream_url, "api_key": "bench"}},
        "models": {"fast": {"provider": "up", "model": "bench-model"}},
    }
    upstream = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_upstream.py"), str(upstream_port)])
    gateway, _ = start_gateway(config, gateway_port)
    processes = {"direct": upstream, "toolsift": gateway}
    targets = {
        "direct": f"{upstream_url}/chat/completions",
        "toolsift": f"http://127.0.0.1:{gateway_port}/v1/chat/completions",
        "responses": f"http://127.0.0.1:{gateway_port}/v1/responses",  # the Responses front, same gateway
    }
    processes["responses"] = gateway
    if args.baseline:
        baseline_port = free_port()
        env = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
        processes["baseline"], _ = start_gateway(config, baseline_port, env=env)
        targets["baseline"] = f"http://127.0.0.1:{baseline_port}/v1/chat/completions"
    if args.litellm:
        processes["litellm"] = start_litellm(upstream_url, litellm_port)
        targets["litellm"] = f"http://127.0.0.1:{litellm_port}/v1/chat/completions"
    chat: dict[str, object] = {"model": "fast", "messages": [{"role": "user", "content": "Say hello."}]}
    bodies = {name: chat for name in targets} | {"responses": {"model": "fast", "input": "Say hello."}}
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/", upstream)
        wait_until_up(f"http://127.0.0.1:{gateway_port}/healthz", gateway)
        if args.baseline:
            wait_until_up(targets["baseline"].replace("/v1/chat/completions", "/healthz"), processes["baseline"])
        if args.litellm:
            wait_until_up(f"http://127.0.0.1:{litellm_port}/health/liveliness", processes["litellm"], seconds=180)
        latency: dict[str, list[float]] = {name: [] for name in targets}
        first: dict[str, list[float]] = {name: [] for name in targets}
        cpu: dict[str, float] = {}
        with httpx.Client(timeout=30) as client:
            for name, url in targets.items():  # warm-up
                for _ in range(30):
                    sequential_ms(client, url, bodies[name])
            for _ in range(args.requests):
                for name, url in targets.items():
                    latency[name].append(sequential_ms(client, url, bodies[name]))
            # CPU per request of each target's own process, one target at a time after a pause, so that neither
            # another proxy's after-request work nor the upstream serving the proxies is counted.
            for name, url in targets.items():
                time.sleep(1)
                before = cpu_seconds(processes[name].pid)
                for _ in range(args.requests):
                    sequential_ms(client, url, bodies[name])
                cpu[name] = (cpu_seconds(processes[name].pid) - before) * 1000 / args.requests
            for _ in range(args.requests):
                for name, url in targets.items():
                    first[name].append(first_content_seconds(client, url, {**bodies[name], "stream": True}) * 1000)
        if wrk:
            rates = {
                name: wrk_throughput(url, bodies[name], args.seconds, CONCURRENCY) for name, url in targets.items()
            }
        else:
            rates = {
                name: asyncio.run(throughput(url, bodies[name], args.seconds, CONCURRENCY))
                for name, url in targets.items()
            }
    finally:
        for process in set(processes.values()):
            process.terminate()
        for process in set(processes.values()):
            process.wait(30)

    print(f"Pass-through overhead: {args.requests} interleaved requests per target, {args.seconds:g} s at 32 clients\n")
    header = f"{'target':<10} {'p50 ms':>8} {'p99 ms':>8} {'1st token p50':>14}"
    print(f"{header} {'CPU ms/req':>11} {'req/s (c=32)':>13} {'errors':>7}")
    results: dict[str, Any] = {
        "requests_per_target": args.requests,
        "throughput_seconds": args.seconds,
        "throughput_clients": CONCURRENCY,
        "latency_client": CLIENT,
        "targets": {},
    }
    for name in targets:
        rate, errors = rates[name]
        row = {
            "p50_ms": percentile(latency[name], 0.5),
            "p99_ms": percentile(latency[name], 0.99),
            "first_token_p50_ms": percentile(first[name], 0.5),
            "cpu_ms_per_request": cpu[name],
            "requests_per_s": rate,
            "errors": errors,
        }
        results["targets"][name] = row
        print(
            f"{name:<10} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f} {row['first_token_p50_ms']:>14.2f} "
            f"{cpu[name]:>11.2f} {rate:>13.1f} {errors:>7}"
        )
    added = percentile(latency["toolsift"], 0.5) - percentile(latency["direct"], 0.5)
    added_first = percentile(first["toolsift"], 0.5) - percentile(first["direct"], 0.5)
    cpu_added = cpu["toolsift"]
    print(
        f"\ntoolsift adds p50 {added:+.2f} ms (first token {added_first:+.2f} ms), {cpu_added:.2f} ms CPU per request"
    )
    results["toolsift_added"] = {"p50_ms": added, "first_token_p50_ms": added_first, "cpu_ms_per_request": cpu_added}
    responses = percentile(latency["responses"], 0.5) - percentile(latency["direct"], 0.5)
    print(
        f"the Responses front adds p50 {responses:+.2f} ms ({responses / max(added, 1e-9):.2f}x the chat front's), "
        f"{cpu['responses']:.2f} ms CPU per request ({cpu['responses'] / max(cpu_added, 1e-9):.2f}x)"
    )
    results["responses_added"] = {
        "p50_ms": responses,
        "p50_ratio_to_chat": responses / max(added, 1e-9),
        "cpu_ms_per_request": cpu["responses"],
        "cpu_ratio_to_chat": cpu["responses"] / max(cpu_added, 1e-9),
    }
    if "baseline" in targets:
        base_added = percentile(latency["baseline"], 0.5) - percentile(latency["direct"], 0.5)
        base_first = percentile(first["baseline"], 0.5) - percentile(first["direct"], 0.5)
        cpu_ratio = cpu_added / max(cpu["baseline"], 1e-9)
        rate_ratio = rates["toolsift"][0] / max(rates["baseline"][0], 1e-9)
        print(
            f"baseline adds p50 {base_added:+.2f} ms (first token {base_first:+.2f} ms), {cpu['baseline']:.2f} ms CPU "
            f"per request; toolsift / baseline: CPU {cpu_ratio:.2f}x, throughput {rate_ratio:.2f}x"
        )
        results["baseline_added"] = {
            "p50_ms": base_added,
            "first_token_p50_ms": base_first,
            "cpu_ms_per_request": cpu["baseline"],
            "toolsift_cpu_ratio": cpu_ratio,
            "toolsift_throughput_ratio": rate_ratio,
        }
    if "litellm" in targets:
        ratio = rates["toolsift"][0] / max(rates["litellm"][0], 1e-9)
        print(f"throughput toolsift / litellm: {ratio:.1f}x")
        results["toolsift_litellm_throughput_ratio"] = ratio
    if not args.no_record:
        default = "overhead" if wrk else "overhead-python"
        record(args.out or default, results, load_generator=wrk or PYTHON_LOAD)


if __name__ == "__main__":
    main()
