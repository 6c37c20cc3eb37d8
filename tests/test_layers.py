"""Data flows one way: server edge -> fronts -> engine -> discovery, MCP client, providers -> codecs -> core -> shared
modules.

Every `app/` module is parsed (never imported) and each of its imports, including lazy and type-only ones,
must point to its own layer or a lower one. A module that needs something from above means that thing belongs
lower down: move it, don't import upward.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.unit

APP = ROOT / "app"

# Highest first. A module belongs to the layer of the longest prefix naming it; top-level modules not named
# here (config, errors, identity, logs, redaction, strict_json, tokens, the package itself) are shared.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # What the `toolsift` command runs: free to use everything, used by nothing below.
    ("entry", ("app.cli", "app.commands", "app.remote", "app.render", "app.demo")),
    ("server", ("app.server",)),
    # Wire formats over the engine; the inspection reports are the admin API's and the CLI's view of it.
    ("fronts", ("app.fronts", "app.mcp.front", "app.inspection")),
    ("engine", ("app.engine",)),
    ("lower", ("app.discovery", "app.mcp.client", "app.providers")),
    # One codec per wire format (protocol types, translation to and from the typed model), shared by the front
    # and the provider of that format. It imports the core and shared modules only.
    ("codecs", ("app.codecs",)),
    # The typed model, the tool catalog and deferral: the vocabulary every layer above speaks (providers take typed
    # rounds, discovery ranks catalog entries, the MCP client builds catalogs). It imports shared modules only.
    ("core", ("app.core",)),
    ("shared", ("app",)),
]


def _rank(module: str) -> tuple[int, str]:
    """The module's layer (0 is the highest) and its name, by the longest matching prefix."""
    matches = [
        (len(prefix), rank, name)
        for rank, (name, prefixes) in enumerate(LAYERS)
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    assert matches, module
    _, rank, name = max(matches)
    return rank, name


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path, module: str) -> set[tuple[int, str]]:
    """Every `app` module `path` imports, with its line; `from app.x import y` counts as `app.x.y` when y is a
    module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[tuple[int, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {(node.lineno, alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *filter(None, [base])])
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add((node.lineno, target if _is_module(target) else base))
    return {(line, name) for line, name in found if name == "app" or name.startswith("app.")}


def _violations() -> list[str]:
    problems: list[str] = []
    for path in sorted(APP.rglob("*.py")):
        module = _module_name(path)
        rank, layer = _rank(module)
        for line, target in sorted(_imports(path, module)):
            target_rank, target_layer = _rank(target)
            if target_rank < rank:
                where = path.relative_to(ROOT)
                problems.append(f"{where}:{line}: {module} ({layer}) imports {target} ({target_layer})")
    return problems


def test_no_module_imports_from_a_higher_layer() -> None:
    problems = _violations()
    assert not problems, "imports pointing up a layer:\n" + "\n".join(problems)


def test_every_module_is_placed() -> None:
    modules = [_module_name(path) for path in APP.rglob("*.py")]
    assert {_rank(module)[1] for module in modules} == {name for name, _ in LAYERS}
    assert _rank("app.engine.gateway")[1] == "engine" and _rank("app.core.model")[1] == "core"
    assert _rank("app.mcp.front.server")[1] == "fronts" and _rank("app.config")[1] == "shared"


def test_an_upward_import_is_seen(tmp_path: Path) -> None:
    """Lazy, type-only and relative imports count; `from app import x` names module x when there is one."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from app import tokens, toolsift_version\n"
        "from .gateway import Gateway\n"
        "if TYPE_CHECKING:\n    from app.fronts.base import Call\n"
        "def late() -> None:\n    import app.server.auth\n",
        encoding="utf-8",
    )
    found = {name for _, name in _imports(source, "app.engine.probe")}
    assert found == {"app.tokens", "app", "app.engine.gateway", "app.fronts.base", "app.server.auth"}
    upward = {name for name in found if _rank(name)[0] < _rank("app.engine.probe")[0]}
    assert upward == {"app.fronts.base", "app.server.auth"}
