"""Every runnable code block of README.md and docs/*.md, run as written against `toolsift demo`.

A block in sh, bash, console, python or js is run unless it is marked `<!-- not-run: reason -->` (tests/support/
docs.py), so a doc change that breaks a snippet fails here. What changes: the port (the docs say 8000; one demo on a
free port serves this module) and a fixed environment (the demo's URL for the CLI, no provider or gateway keys of
the machine's). Each block must exit 0 and print something, and what the text around it promises it prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.demo.model import LABEL
from tests.support import free_port, served_gateway
from tests.support.clients import npm_package
from tests.support.docs import DOCS, Block, bad_markers, every_block
from tests.support.gateway import ROOT, demo_config_file

BLOCKS = every_block()
RUN = [block for block in BLOCKS if block.runner]
VENV = Path(sys.executable).parent.parent
# What a block's output must hold, by a text only that block contains: what the docs around it promise (the tools'
# own results for the prompts, the tools the search finds).
PROMISES = {
    "Convert 250 USD to EUR and save the result as a note.": [LABEL, "219.25", "notes__create_note"],
    "What's on my work calendar on 2025-06-09?": [LABEL, "Sprint planning", "calendar__list_events"],
    "Find a free hour on my work calendar on 2025-06-09.": [LABEL, "2025-06-09T10:30:00", "calendar__find_free_slots"],
    "300000 USD loan at 6.5% over 30 years": [LABEL, "1896.2", "'search_calls': 1"],
    'input="Note: buy milk."': [LABEL, "notes__create_note", "'search_calls'"],
    "Where is order o-1?": [LABEL, "order o-1: shipped"],
    '"5 USD in EUR?"': [LABEL, '"converted": 4.38', "finance__convert_currency", "weather__get_current_weather"],
    'toolsift search "convert currency"': ["finance__convert_currency"],
    "/admin/search?query=convert+currency": ['"finance__convert_currency"'],
}


def promises(block: Block) -> list[str]:
    return [text for key, wanted in PROMISES.items() if key in block.code for text in wanted]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with served_gateway(demo_config_file(tmp_path_factory.mktemp("demo")), free_port(), command="demo") as base:
        yield base


def environment(base: str) -> dict[str, str]:
    """The machine's environment without keys or URLs of its own for providers, clients or toolsift, and the
    demo's: the CLI asks it, and `.venv/bin` comes first on PATH."""
    own = ("OPENAI_", "ANTHROPIC_", "TOOLSIFT_", "CODEX_")
    kept = {key: value for key, value in os.environ.items() if not key.startswith(own)}
    return kept | {
        "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "TOOLSIFT_URL": base,
        "TOOLSIFT_ADMIN_KEY": "unused",
        "TOOLSIFT_HOME": os.environ.get("TOOLSIFT_HOME", ""),
        "NO_COLOR": "1",
    }


def command(block: Block, code: str, folder: Path) -> list[str]:
    """How a block runs: bash with errors fatal, the venv's Python, or Node with the snippet saved as `.mjs` (as
    the docs say to) beside the pinned npm packages."""
    if block.runner == "bash":
        if block.language == "console":  # only the `$ ` lines are commands; the rest is their output
            code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ ")) + "\n"
        return ["bash", "-euo", "pipefail", "-c", code]
    if block.runner == "python":
        (folder / "snippet.py").write_text(code)
        return [sys.executable, "snippet.py"]
    (folder / "node_modules").symlink_to(npm_package("openai"))  # skips (or fails in CI) without the pinned SDK
    (folder / "snippet.mjs").write_text(code)
    node = shutil.which("node")
    assert node is not None, "Node.js runs the JavaScript examples"
    return [node, "snippet.mjs"]


@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_the_block_runs_as_written(block: Block, demo: str, tmp_path: Path) -> None:
    port = demo.rsplit(":", 1)[1]
    code = block.code.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace("localhost:8000", f"localhost:{port}")
    (tmp_path / ".venv").symlink_to(VENV)  # the docs' `.venv/bin/...` from the project's folder
    finished = subprocess.run(
        command(block, code, tmp_path), cwd=tmp_path, env=environment(demo), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    output = f"stdout:\n{finished.stdout[-3000:]}\nstderr:\n{finished.stderr[-3000:]}"
    shown = f"{block.id} exited {finished.returncode}\n{output}"
    assert finished.returncode == 0, shown
    assert finished.stdout.strip(), shown
    for wanted in promises(block):
        assert wanted in finished.stdout, f"{wanted!r} not printed\n{shown}"


def test_every_promise_names_a_block_that_is_run() -> None:
    for key in PROMISES:
        assert any(key in block.code for block in RUN), f"no runnable block contains {key!r}"


def test_every_not_run_marker_marks_a_block_and_says_why() -> None:
    for path in DOCS:
        assert bad_markers(path) == [], f"{path.relative_to(ROOT)}: not-run markers without a block or a reason"


def test_the_docs_have_runnable_blocks_of_every_kind() -> None:
    assert {block.runner for block in RUN} == {"bash", "python", "js"}
    assert any(block.path.name == "README.md" for block in RUN)
