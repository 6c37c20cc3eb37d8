"""How long an MCP client waits for `initialize` from `toolsift mcp --stdio`, from the spawn, with the bundled
demo's five servers configured (keyword search): the MCP Inspector gives up after 15 s, and other clients sooner.
Also how long until the first `tools/list` is answered (it waits for the servers' start).

    python bench/stdio_initialize.py [--runs 10] [--baseline DIR] [--no-record] [--out NAME]

`--baseline DIR` also runs the code of another checkout, interleaved, in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, add_record_options, demo_config, record

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}  # fmt: skip


def one_run(checkout: Path, config: Path) -> tuple[float, float]:
    """Seconds from the spawn to the `initialize` answer, and to the first `tools/list` answer: the checkout's code
    run by this interpreter, as its `toolsift` entry point runs it."""
    started = time.perf_counter()
    command = [sys.executable, "-m", "app.cli", "mcp", "--stdio", "--config", str(config)]
    process = subprocess.Popen(command, cwd=checkout, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        process.stdout.readline()
        initialized = time.perf_counter() - started
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):  # fmt: skip
            process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        while json.loads(process.stdout.readline()).get("id") != 2:
            pass
        return initialized, time.perf_counter() - started
    finally:
        process.stdin.close()
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline", type=Path, help="another checkout, run interleaved as `baseline`")
    add_record_options(parser, "stdio_initialize")
    args = parser.parse_args()
    targets = {"toolsift": ROOT}
    if args.baseline:
        targets["baseline"] = args.baseline.resolve()
    config = demo_config(tool_discovery={"enabled": True, "semantic": {"enabled": False}})
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
        for _ in range(args.runs):
            for name, checkout in targets.items():
                times[name].append(one_run(checkout, path))
    results = {}
    print(f"{'target':<10} {'runs':>4} {'initialize p50':>15} {'max':>6} {'tools/list p50':>15} {'max':>6}")
    for name, runs in times.items():
        first, listed = [run[0] for run in runs], [run[1] for run in runs]
        results[name] = {"runs": len(runs), "initialize_p50_s": statistics.median(first),
                         "initialize_max_s": max(first), "tools_list_p50_s": statistics.median(listed),
                         "tools_list_max_s": max(listed)}  # fmt: skip
        print(f"{name:<10} {len(runs):>4} {statistics.median(first):>14.2f}s {max(first):>5.2f}s "
              f"{statistics.median(listed):>14.2f}s {max(listed):>5.2f}s")  # fmt: skip
    if "baseline" in times:
        ratio = results["baseline"]["initialize_p50_s"] / results["toolsift"]["initialize_p50_s"]
        print(f"initialize p50: {ratio:.1f}x faster than the baseline")
        results["initialize_speedup"] = ratio
    if not args.no_record:
        record(args.out or "stdio_initialize", results, load_generator="bench/stdio_initialize.py (one client)")


if __name__ == "__main__":
    main()
