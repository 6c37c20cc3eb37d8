"""`make check-clients`: the end-to-end tests of the real clients, run against their newest releases.

Claude Code, Codex CLI, the Vercel AI SDK (`ai`, `@ai-sdk/openai`) and the Anthropic TypeScript SDK are installed
from npm into a temporary folder, and the newest `openai`, `anthropic` and `openai-agents` into a temporary
virtualenv layered over the project's (the gateway and the test tools stay as the project pins them); neither
`.venv`, tests/node_modules nor tests/sdk-venv is touched. The tests that drive each client (found by what they
call) run once, and a table says, per client, the version tried and whether its tests passed. The table "Agents
and clients verified" in docs/fronts-and-clients.md is copied from it.

Usage: python tests/check_clients.py [--keep] [pytest options...]
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
E2E = ROOT / "tests" / "e2e"
NPM_PACKAGES = ["@anthropic-ai/claude-code", "@openai/codex", "ai", "@ai-sdk/openai", "@anthropic-ai/sdk"]
PYTHON_PACKAGES = ["openai", "anthropic", "openai-agents"]


@dataclass
class Client:
    name: str
    packages: list[str]  # what its version is read from: npm packages, or one Python distribution
    npm: bool
    marks: str  # a test file drives this client when it matches
    files: list[Path] = field(default_factory=list)
    version: str = "?"


CLIENTS = [
    Client("Claude Code", ["@anthropic-ai/claude-code"], True, r"run_claude\(|client_program\(\"claude\"\)"),
    Client("Codex CLI", ["@openai/codex"], True, r"run_codex\(|client_program\(\"codex\"\)"),
    Client("Vercel AI SDK", ["ai", "@ai-sdk/openai"], True, r"node_modules\(\)"),
    Client("openai (Python)", ["openai"], False, r"\b(Async)?OpenAI\("),
    Client("anthropic (Python)", ["anthropic"], False, r"\b(Async)?Anthropic\(|anthropic_sdk_client\.py"),
    Client("Anthropic SDK (TypeScript)", ["@anthropic-ai/sdk"], True, r"anthropic_sdk_client\.mjs"),
    Client("openai-agents (Python)", ["openai-agents"], False, r"^from agents import"),
]


def run(command: list[str], **options: object) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, **options)  # type: ignore[call-overload]


def install_npm(folder: Path) -> Path:
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"name": "toolsift-newest-clients", "private": True}))
    newest = [f"{package}@latest" for package in NPM_PACKAGES]
    run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *newest], cwd=folder)
    return folder / "node_modules"


def install_python(folder: Path) -> Path:
    """A virtualenv that sees the project's packages (a .pth adds its site-packages after its own) and gets the
    newest SDKs, and whatever newer dependencies they need, in its own."""
    run([sys.executable, "-m", "venv", str(folder)])
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    project = sysconfig.get_paths()["purelib"]
    (Path(own) / "_toolsift_project.pth").write_text(f"import site; site.addsitedir({project!r})\n")
    run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", *PYTHON_PACKAGES])
    for program in Path(sys.executable).parent.iterdir():  # `toolsift`, `mcp-server-time`: the tests find them
        if not (folder / "bin" / program.name).exists():  # beside the interpreter; they run on the project's own
            (folder / "bin" / program.name).symlink_to(program)
    return python


def versions(clients: list[Client], node_modules: Path, python: Path) -> None:
    script = "import importlib.metadata as m, json, sys; print(json.dumps({p: m.version(p) for p in sys.argv[1:]}))"
    found = subprocess.run([str(python), "-c", script, *PYTHON_PACKAGES], check=True, capture_output=True, text=True)
    pythons = json.loads(found.stdout)
    for client in clients:
        if client.npm:
            read = [
                json.loads((node_modules / name / "package.json").read_text())["version"] for name in client.packages
            ]
            client.version = " / ".join(read)
        else:
            client.version = pythons[client.packages[0]]


def select_tests(clients: list[Client]) -> list[Path]:
    every: list[Path] = []
    for path in sorted(E2E.rglob("test_*.py")):
        text = path.read_text()
        for client in clients:
            if re.search(client.marks, text, re.MULTILINE):
                client.files.append(path)
                every.append(path)
    return list(dict.fromkeys(every))


def outcomes(report: Path) -> list[tuple[str, str]]:
    """Each test's dotted module (and class) path and outcome, `pass`, `fail` or `skip`, from pytest's JUnit XML."""
    found: list[tuple[str, str]] = []
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        result = "fail" if {"failure", "error"} & kinds else "skip" if "skipped" in kinds else "pass"
        found.append((case.get("classname") or case.get("name") or "", result))
    return found


def verdict(client: Client, results: list[tuple[str, str]]) -> str:
    """`pass` when every file of the client's tests ran and none failed; a file that reported nothing failed."""
    if not client.files:
        return "no tests"
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for path in client.files:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = [result for where, result in results if where == module or where.startswith(module + ".")]
        for result in mine or ["fail"]:
            counts[result] += 1
    outcome = "fail" if counts["fail"] else "pass" if counts["pass"] else "skipped"
    return f"{outcome} ({counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped)"


def table(clients: list[Client], results: list[tuple[str, str]]) -> str:
    rows = [("client", "version", "result"), *((c.name, c.version, verdict(c, results)) for c in clients)]
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |" for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (width + 2) for width in widths) + "|")
    return "\n".join(lines)


def main(arguments: list[str]) -> int:
    keep = "--keep" in arguments
    options = [argument for argument in arguments if argument != "--keep"]
    if shutil.which("npm") is None:
        print("check-clients needs Node.js and npm", file=sys.stderr)
        return 2
    place = Path(tempfile.mkdtemp(prefix="toolsift-newest-clients-"))
    try:
        node_modules = install_npm(place / "npm")
        python = install_python(place / "venv")
        versions(CLIENTS, node_modules, python)
        files = select_tests(CLIENTS)
        report = place / "report.xml"
        environment = {**os.environ, "TOOLSIFT_CLIENTS_DIR": str(node_modules), "PYTHONPATH": str(ROOT),
                       "TOOLSIFT_ANTHROPIC_PYTHON": str(python)}  # fmt: skip
        environment.pop("CI", None)  # a client missing here is a skip the table shows, not a crash
        command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *options]
        print("+", " ".join(command), "...", flush=True)
        subprocess.run([*command, *map(str, files)], cwd=ROOT, env=environment, check=False)
        results = outcomes(report) if report.exists() else []
        print("\nNewest releases against this tree:\n", flush=True)
        print(table(CLIENTS, results), flush=True)
        return 1 if any(verdict(client, results).startswith("fail") for client in CLIENTS) else 0
    finally:
        if keep:
            print(f"\nkept: {place}")
        else:
            shutil.rmtree(place, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
