"""Time to first content byte: through the gateway (its chat and Responses fronts) vs straight to the same local
streaming upstream.

Starts a minimal OpenAI-compatible streaming upstream and `toolsift serve` (on the bundled demo's example
servers, so every request builds its tool list and manifest) as separate processes, then sends interleaved
streaming requests to each and reports p50/p99 of both and the gateway's overhead, measured in one run.

    python bench/ttft.py [--requests 300] [--baseline DIR] [--no-record] [--out NAME]

`--baseline DIR` also runs the toolsift of another checkout as the target `baseline`, interleaved, same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import add_record_options, demo_config, free_port, percentile, record, start_gateway, wait_until_up

UPSTREAM_APP = """
import json, sys
import uvicorn

CHUNKS = ["Hello", " from", " a", " fast", " upstream", "."]
BASE = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "bench-model"}

def event(delta, finish=None):
    body = {**BASE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return ("data: " + json.dumps(body) + "\\n\\n").encode()

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": event({"role": "assistant", "content": ""}), "more_body": True})
    for text in CHUNKS:
        await send({"type": "http.response.body", "body": event({"content": text}), "more_body": True})
    await send({"type": "http.response.body", "body": event({}, "stop") + b"data: [DONE]\\n\\n", "more_body": False})

uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""


RESPONSES_TEXT = '"type":"response.output_text.delta"'
CLIENT = "python httpx (one client, sequential requests)"


def first_content_seconds(client: httpx.Client, url: str, body: dict[str, object]) -> float:
    """Seconds from sending the request to the first chunk that carries content."""
    started = time.perf_counter()
    elapsed: float | None = None
    with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            compact = line.replace(" ", "")
            text = ('"content":"' in compact and '"content":""' not in compact) or RESPONSES_TEXT in compact
            if elapsed is None and text:
                elapsed = time.perf_counter() - started
    if elapsed is None:
        raise RuntimeError(f"no content from {url}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="requests to each target (default 300)")
    parser.add_argument("--baseline", type=Path, help="also measure the toolsift of this checkout, same run")
    add_record_options(parser, "ttft")
    args = parser.parse_args()

    upstream_port, gateway_port = free_port(), free_port()
    env = {**os.environ, "OPENAI_API_KEY": "bench", "OPENAI_BASE_URL": f"http://127.0.0.1:{upstream_port}/v1"}
    upstream = subprocess.Popen([sys.executable, "-c", UPSTREAM_APP, str(upstream_port)])
    gateway, _ = start_gateway(demo_config(), gateway_port, env)
    processes = [gateway]
    body = {"model": "fast", "stream": True, "messages": [{"role": "user", "content": "Say hello."}]}
    responses_body = {"model": "fast", "stream": True, "input": "Say hello."}
    targets = {
        "direct": (f"http://127.0.0.1:{upstream_port}/v1/chat/completions", body),
        "gateway": (f"http://127.0.0.1:{gateway_port}/v1/chat/completions", body),
        "responses": (f"http://127.0.0.1:{gateway_port}/v1/responses", responses_body),
    }
    health = [f"http://127.0.0.1:{gateway_port}/healthz"]
    if args.baseline:
        baseline_port = free_port()
        baseline_env = {**env, "PYTHONPATH": str(args.baseline.resolve())}
        processes.append(start_gateway(demo_config(), baseline_port, baseline_env)[0])
        targets["baseline"] = (f"http://127.0.0.1:{baseline_port}/v1/chat/completions", body)
        health.append(f"http://127.0.0.1:{baseline_port}/healthz")
    try:
        wait_until_up(f"http://127.0.0.1:{upstream_port}/", upstream)
        for process, url in zip(processes, health, strict=True):
            wait_until_up(url, process)
        samples: dict[str, list[float]] = {name: [] for name in targets}
        with httpx.Client(timeout=30) as client:
            for url, sent in targets.values():  # warm-up: connections, imports, first-request caches
                for _ in range(20):
                    first_content_seconds(client, url, sent)
            for _ in range(args.requests):
                for name, (url, sent) in targets.items():
                    samples[name].append(first_content_seconds(client, url, sent))
    finally:
        for process in [*processes, upstream]:
            process.terminate()
        for process in [*processes, upstream]:
            process.wait(15)

    print(f"Time to first content byte, {args.requests} interleaved streaming requests each (ms)\n")
    print(f"{'target':<10} {'p50':>8} {'p99':>8} {'mean':>8}")
    results: dict[str, Any] = {"requests_per_target": args.requests, "targets": {}}
    for name, values in samples.items():
        ms = [value * 1000 for value in values]
        p50, p99, mean = percentile(ms, 0.5), percentile(ms, 0.99), statistics.fmean(ms)
        print(f"{name:<10} {p50:>8.2f} {p99:>8.2f} {mean:>8.2f}")
        results["targets"][name] = {"p50_ms": p50, "p99_ms": p99, "mean_ms": mean}
    direct = [value * 1000 for value in samples["direct"]]
    through = [value * 1000 for value in samples["gateway"]]
    overhead_p50 = percentile(through, 0.5) - percentile(direct, 0.5)
    overhead_p99 = percentile(through, 0.99) - percentile(direct, 0.99)
    print(f"\noverhead   p50 {overhead_p50:+.2f} ms, p99 {overhead_p99:+.2f} ms (target: p50 under 5 ms)")
    responses_p50 = percentile([value * 1000 for value in samples["responses"]], 0.5) - percentile(direct, 0.5)
    ratio = responses_p50 / max(overhead_p50, 1e-9)
    print(f"Responses front p50 {responses_p50:+.2f} ms ({ratio:.2f}x the chat front's)")
    results["gateway_added"] = {"p50_ms": overhead_p50, "p99_ms": overhead_p99}
    results["responses_added"] = {"p50_ms": responses_p50, "ratio_to_chat": ratio}
    if "baseline" in samples:
        before = [value * 1000 for value in samples["baseline"]]
        base_p50 = percentile(before, 0.5) - percentile(direct, 0.5)
        base_p99 = percentile(before, 0.99) - percentile(direct, 0.99)
        print(f"baseline   p50 {base_p50:+.2f} ms, p99 {base_p99:+.2f} ms")
        results["baseline_added"] = {"p50_ms": base_p50, "p99_ms": base_p99}
    if not args.no_record:
        record(args.out or "ttft", results, load_generator=CLIENT)


if __name__ == "__main__":
    main()
