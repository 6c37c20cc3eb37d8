"""The front page and docs/ link to each other by file and heading: every relative link names a file that exists and,
with `#anchor`, a heading of it (as GitHub makes anchors), so moving text cannot leave a dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.gateway import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of a file's headings: lower case, punctuation but `-` and `_` dropped, spaces as `-`."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    headings = re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("path", DOCS, ids=[str(path.relative_to(ROOT)) for path in DOCS])
def test_every_relative_link_reaches_a_file_and_heading(path: Path) -> None:
    for target in LINK.findall(path.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{path.relative_to(ROOT)}: {target} names no file"
        if anchor:
            assert anchor in anchors(linked), f"{path.relative_to(ROOT)}: {target} names no heading of {linked.name}"


def test_the_front_page_links_every_doc() -> None:
    front = (ROOT / "README.md").read_text()
    for path in DOCS[1:]:
        assert f"(docs/{path.name})" in front, path.name
