"""docs/development.md draws the tree of `app/`: every module is named in the part of the tree for its package, so a
module added without a word on where it belongs fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = re.compile(r"^( {2,})([a-z_]+(?:/[a-z_]+)*)/", re.MULTILINE)  # "  engine/", "    mcp/", "  mcp/client/"


def tree() -> str:
    doc = (ROOT / "docs" / "development.md").read_text()
    start = doc.index("```\napp/\n")
    return doc[start : doc.index("\n```\n", start)]


def sections(text: str) -> dict[str, str]:
    """Each package's part of the tree, by its path under app/ (a nested entry's path includes its parent's)."""
    found: dict[str, str] = {}
    marks = list(SECTION.finditer(text))
    parents: list[tuple[int, str]] = []
    for index, mark in enumerate(marks):
        depth = len(mark[1])
        parents = [(level, path) for level, path in parents if level < depth]
        path = "/".join([*(path for _, path in parents[-1:]), mark[2]])
        end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
        found[path] = text[mark.start() : end]
        parents.append((depth, path))
    return found


def test_every_module_is_named_where_its_package_is_drawn() -> None:
    text = tree()
    parts = sections(text)
    missing = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        relative = path.relative_to(ROOT / "app")
        if path.name == "__init__.py" or "__pycache__" in relative.parts:
            continue
        package = "/".join(relative.parts[:-1])
        where = (
            text
            if not package
            else next(
                (part for name, part in sorted(parts.items(), key=lambda item: -len(item[0])) if package == name), None
            )
        )
        if where is None or not re.search(rf"(?<![\w/]){re.escape(path.stem)}(\.py|[\s,)/]|$)", where):
            missing.append(str(relative))
    assert not missing, f"docs/development.md's tree does not name: {', '.join(missing)}"


def test_the_sections_are_read_as_drawn() -> None:
    parts = sections(tree())
    assert {"server", "fronts", "fronts/mcp", "engine", "mcp/client", "store"} <= set(parts)
