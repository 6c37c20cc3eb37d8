"""How long Codex CLI takes, with its built-in `openai` provider pointed at the gateway, to run a one-turn prompt:
Codex tries the Responses API over a WebSocket first, and how the gateway refuses that upgrade decides how long it
waits before it goes on over HTTP. Against the demo model (no model time), so the run is Codex's own overhead.

    python bench/codex_start.py [--runs 5] [--baseline DIR] [--no-record] [--out NAME]

Needs Codex CLI from `make clients`. `--baseline DIR` also serves the code of another checkout, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, add_record_options, demo_config, free_port, record, wait_until_up

CODEX = ROOT / "tests" / "node_modules" / ".bin" / "codex"


def serve(checkout: Path, config: Path, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "app.cli", "demo", "--config", str(config), "--port", str(port)]
    return subprocess.Popen(command, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_run(base: str, home: Path, work: Path) -> tuple[float, int]:
    """Seconds for `codex exec` to finish, and how many WebSocket retries it reported."""
    (home / "config.toml").write_text(f'model = "gpt-5.1-codex"\nopenai_base_url = "{base}/v1"\n')
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "CODEX_"))}
    environment |= {"CODEX_HOME": str(home), "HOME": str(home), "OPENAI_API_KEY": "unused", "NO_COLOR": "1"}
    command = [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "Say hello."]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=environment, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"codex failed: {done.stderr[-2000:]}")
    return seconds, done.stderr.count("Reconnecting")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="another checkout, served interleaved as `baseline`")
    add_record_options(parser, "codex_start")
    args = parser.parse_args()
    if not CODEX.exists():
        raise SystemExit("Codex CLI is not installed: run `make clients`")
    targets = {"toolsift": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    config = demo_config(tool_discovery={"enabled": True, "semantic": {"enabled": False}})
    times: dict[str, list[tuple[float, int]]] = {name: [] for name in targets}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.json"
        path.write_text(json.dumps(config))
        servers = {}
        try:
            for name, checkout in targets.items():
                port = free_port()
                servers[name] = (serve(checkout, path, port), f"http://127.0.0.1:{port}")
            for process, base in servers.values():
                wait_until_up(f"{base}/healthz", process)
            for run in range(args.runs):
                for name, (_, base) in servers.items():
                    home, work = Path(folder) / f"{name}-{run}" / "home", Path(folder) / f"{name}-{run}" / "work"
                    home.mkdir(parents=True)
                    work.mkdir()
                    times[name].append(one_run(base, home, work))
        finally:
            for process, _ in servers.values():
                process.terminate()
                process.wait(30)
    results = {}
    print(f"{'target':<10} {'runs':>4} {'codex exec p50':>15} {'max':>7} {'WebSocket retries':>18}")
    for name, runs in times.items():
        seconds = [run[0] for run in runs]
        results[name] = {"runs": len(runs), "p50_s": statistics.median(seconds), "max_s": max(seconds),
                         "websocket_retries": max(run[1] for run in runs)}  # fmt: skip
        print(f"{name:<10} {len(runs):>4} {statistics.median(seconds):>14.2f}s {max(seconds):>6.2f}s "
              f"{results[name]['websocket_retries']:>18}")  # fmt: skip
    if "baseline" in results:
        results["speedup"] = results["baseline"]["p50_s"] / results["toolsift"]["p50_s"]
        print(f"codex exec p50: {results['speedup']:.1f}x faster than the baseline")
    if not args.no_record:
        record(args.out or "codex_start", results, load_generator="Codex CLI `codex exec` (tests/node_modules)")


if __name__ == "__main__":
    main()
