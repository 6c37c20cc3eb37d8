"""What a new user reads and runs first says true things: the token figures of the README's opening are the recorded
bench's, `make demo PORT=...` is documented and works as `make run`'s, and `make install` shows its progress."""

from __future__ import annotations

import re

from tests.support import ROOT


def test_the_opening_token_figures_are_the_recorded_bench_run() -> None:
    opening = (ROOT / "README.md").read_text().split("## Quick start")[0]
    recorded = (ROOT / "bench" / "results" / "tokens.txt").read_text()
    assert "10-60K" not in opening
    rows = {
        "demo config": ("39", "4,396"),
        "100 tools (data)": ("100", "22,198"),
        "1,000 tools (data)": ("1000", "140,222"),
    }
    for row, (tools, off) in rows.items():
        line = next(line for line in recorded.splitlines() if line.startswith(row))
        assert line.split()[-5:-3] == [tools, off], line
        assert off in opening, f"{row}: {off} tokens"
    assert "39 tools are 4,396 tokens" in opening


def test_make_demo_takes_a_port_and_the_readme_says_so() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo = re.search(r"^demo: install\n\t(.+)$", makefile, re.M)
    assert demo and "--port $(PORT)" in demo.group(1) and "--host $(HOST)" in demo.group(1)
    assert "`make demo PORT=8001`" in (ROOT / "README.md").read_text()


def test_make_install_shows_its_progress() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("$(STAMP): pyproject.toml\n", 1)[1].split("\n\n", 1)[0]
    installs = [line for line in recipe.splitlines() if "pip install" in line]
    assert installs and not any("--quiet" in line or " -q " in line for line in installs), "pip's progress shows"
    assert sum("@echo" in line for line in recipe.splitlines()) >= 3, "each step says what it does"
