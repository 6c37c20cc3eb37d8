"""A bench run several times, its numbers' medians side by side: how a change is judged against the commit before
when one run's noise is larger than the change.

    python bench/repeat.py overhead --baseline DIR [--runs 5] [more overhead.py options]
    python bench/repeat.py search_scale --baseline DIR [--runs 5]

Each run is the bench itself with `--baseline DIR` (both checkouts measured in the same run); the table shows, for
each figure both targets report, every run's ratio (this checkout / baseline) and the median ratio. Recorded as
bench/results/<bench>-repeat.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS_ENV, add_record_options, checkout_commit, record

BENCH = Path(__file__).resolve().parent
# Where each bench keeps the figures of this checkout and of the baseline in its record.
FIGURES: dict[str, tuple[str, ...]] = {
    "overhead": ("cpu_ms_per_request", "p50_ms", "first_token_p50_ms", "requests_per_s"),
    "search_scale": ("keyword_p99_ms", "keyword_p50_ms", "hybrid_p99_ms", "hybrid_p50_ms"),
}


def figures(bench: str, results: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """(this checkout, baseline) for each figure of one run's record."""
    ours, base = results["targets"]["toolsift"], results["targets"]["baseline"]
    return {name: (ours[name], base[name]) for name in FIGURES[bench] if name in ours and name in base}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", choices=sorted(FIGURES))
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    add_record_options(parser, "BENCH-repeat")
    args, rest = parser.parse_known_args()  # the rest goes to the bench
    rest = [arg for arg in rest if arg != "--"]
    runs: list[dict[str, tuple[float, float]]] = []
    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, RESULTS_ENV: directory}
        for index in range(args.runs):
            name = f"run{index}"
            command = [sys.executable, str(BENCH / f"{args.bench}.py"), "--baseline", str(args.baseline)]
            subprocess.run([*command, "--out", name, *rest], env=env, check=True, stdout=subprocess.DEVNULL)
            runs.append(figures(args.bench, json.loads((Path(directory) / f"{name}.json").read_text())["results"]))
    baseline = checkout_commit(args.baseline)
    print(f"{args.bench}: {args.runs} runs, each measuring this checkout and {baseline} in the same run\n")
    print(f"{'figure':<22} {'median':>10} {'baseline':>10} {'ratio':>7}   per run")
    summary: dict[str, Any] = {}
    for figure in runs[0]:
        ratios = [ours / base if base else float("nan") for ours, base in (run[figure] for run in runs)]
        ours = statistics.median(run[figure][0] for run in runs)
        base = statistics.median(run[figure][1] for run in runs)
        ratio = statistics.median(ratios)
        summary[figure] = {"median": ours, "baseline_median": base, "median_ratio": ratio, "ratios": ratios}
        shown = " ".join(f"{value:.3f}" for value in ratios)
        print(f"{figure:<22} {ours:>10.3f} {base:>10.3f} {ratio:>7.3f}   {shown}")
    if not args.no_record:
        record(args.out or f"{args.bench}-repeat", {"runs": args.runs, "baseline": baseline, "figures": summary})


if __name__ == "__main__":
    main()
