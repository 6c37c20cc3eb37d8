"""The code blocks of README.md and docs/*.md, read the way the snippet tests run them.

The convention the docs follow: a block in a runnable language (sh, bash, console, python, js) is run by the tests
against `toolsift demo`, unless the line right before its fence is `<!-- not-run: the reason -->` (Docker, a real
provider key, a client program the tests drive elsewhere, a command that serves until stopped). A new block is run
by default, so a snippet cannot stop working unnoticed. Other languages (json, yaml, toml, plain text) are
configuration or output, never run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.gateway import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUNNABLE = {"sh": "bash", "bash": "bash", "shell": "bash", "console": "bash", "python": "python", "js": "js"}
NOT_RUN = re.compile(r"^<!-- not-run: (?P<reason>\S.*?) -->$")
FENCE = re.compile(r"^(?P<indent> *)```(?P<language>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text, and why it is not run (None: it is run)."""

    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    not_run: str | None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runner(self) -> str | None:
        """How the tests run it (`bash`, `python`, `js`), or None when it is not run."""
        return None if self.not_run is not None else RUNNABLE.get(self.language)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent = len(opening["indent"])
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
        code = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
        marker = NOT_RUN.match(lines[index - 1].strip()) if index else None
        found.append(Block(path, index + 1, opening["language"], code, marker["reason"] if marker else None))
        index = end + 1
    return found


def every_block() -> list[Block]:
    return [block for path in DOCS for block in blocks(path)]


def bad_markers(path: Path) -> list[int]:
    """Lines of `not-run` markers that mark nothing (no fence right after) or give no reason."""
    lines = path.read_text().splitlines()
    return [
        number
        for number, line in enumerate(lines, 1)
        if line.strip().startswith("<!-- not-run")
        and (not NOT_RUN.match(line.strip()) or number >= len(lines) or not FENCE.match(lines[number]))
    ]


def section_blocks(path: Path, heading: str, language: str) -> list[Block]:
    """The blocks of one language under a `## heading` of a Markdown file (up to the next `## `)."""
    lines = path.read_text().splitlines()
    start = lines.index(f"## {heading}") + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return [block for block in blocks(path) if start < block.line <= end and block.language == language]
