"""What the benches share: free ports, starting `toolsift serve` on a config, waiting for it, percentiles, the
data files they read and the JSON record each run leaves in bench/results."""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data"
RESULTS = ROOT / "bench" / "results"
RESULTS_ENV = "TOOLSIFT_BENCH_RESULTS"  # another directory for the records (tests)


def require_data(path: Path) -> Path:
    """`path`, or exit 2 naming it: a bench measures the data it was asked for, never a stand-in."""
    if not path.is_file():
        print(
            f"error: no data file at {path}; the benches' data ships in the repository's bench/data "
            "(see bench/data/README.md), or pass --data FILE",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return path


def input_schema(tool: dict[str, Any]) -> Any:
    """A data file's tool schema as an object: some are stored as JSON text, a few of them broken (an empty
    object schema then, as a server with no parameters would list)."""
    schema = tool["input_schema"]
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError:
            schema = {"type": "object", "properties": {}}
    return schema


# Whether this run writes the tracked record behind the docs' figures (`--record`): a run without it, as a reader
# trying a bench, writes to bench/results/local/ (untracked), so it never changes a figure the docs quote.
TRACKED = False


class _Tracked(argparse.Action):
    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        global TRACKED
        TRACKED = True
        setattr(namespace, self.dest, True)


def add_record_options(parser: argparse.ArgumentParser, name: str) -> None:
    """--record, --no-record and --out NAME, the same on every bench."""
    parser.add_argument(
        "--record",
        action=_Tracked,
        nargs=0,
        default=False,
        help=f"write bench/results/{name}.json, the record behind the docs' figures (without it: bench/results/local/)",
    )
    parser.add_argument("--no-record", action="store_true", help="write no record at all")
    parser.add_argument("--out", metavar="NAME", help=f"record as NAME.json (default: {name})")


def record(
    name: str,
    results: dict[str, Any],
    *,
    load_generator: str | None = None,
    argv: list[str] | None = None,
    results_dir: Path | None = None,
) -> Path:
    """Write `<results_dir>/<name>.json`: the run's numbers with what is needed to reproduce and judge them (the
    machine, the commit, the command, the load generator), so a published figure points at one recorded run."""
    directory = results_dir or Path(os.environ.get(RESULTS_ENV) or (RESULTS if TRACKED else RESULTS / "local"))
    commit, dirty = git_state()
    document = {
        "bench": name,
        "recorded_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "git_commit": commit,
        "dirty": dirty,
        "command": command_line(sys.argv if argv is None else argv),
        "machine": machine(),
        "load_generator": load_generator,
        "results": _plain(results),
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"recorded: {shown}", file=sys.stderr)
    return path


_RESULT_INPUTS = ("app", "bench", "examples", "config.json", "pyproject.toml", "Makefile")


def git_state() -> tuple[str | None, bool | None]:
    """(HEAD's short hash, whether the code differs from it), or (None, None) without git or a repository. Only
    what can change a result counts (the code, the benches, the data, the config, the dependencies); the records
    themselves (bench/results) and documents do not: one bench's record must not mark the next."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        changes = _git(
            "status", "--porcelain", "--untracked-files=no", "--", *_RESULT_INPUTS, ":(exclude)bench/results"
        )
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head, bool(changes)


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10)
    return done.stdout.strip()


def command_line(argv: list[str]) -> str:
    """The command as run from the repository's root, e.g. `python bench/overhead.py --requests 300`."""
    script = Path(argv[0]) if argv else Path("?")
    resolved = script.resolve()
    shown = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else script.name
    return shlex.join(["python", shown, *map(shown_argument, argv[1:])])


def shown_argument(argument: str) -> str:
    """An argument as recorded: a path outside the repository says what it is, never where it was (another
    checkout by its commit, a file by its name), so a record names no machine's folders."""
    if not argument.startswith(("/", "~")):
        return argument
    path = Path(argument).expanduser()
    if path.resolve().is_relative_to(ROOT):
        return path.resolve().relative_to(ROOT).as_posix() or "."
    return f"<checkout at {checkout_commit(path)}>" if path.is_dir() else path.name


def checkout_commit(path: Path) -> str:
    """The short commit of the git checkout at `path` (a baseline), or its folder's name without git."""
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return path.name
    return done.stdout.strip() or path.name


def machine() -> dict[str, Any]:
    """CPU model, logical cores, memory, OS and Python: enough to tell whether two records are comparable."""
    cpu = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or platform.machine()
    memory_kb = _proc_field("/proc/meminfo", "MemTotal")
    memory = round(int(memory_kb.split()[0]) / 1024**2, 1) if memory_kb else None
    return {
        "cpu": cpu or None,
        "logical_cores": os.cpu_count(),
        "memory_gib": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def _proc_field(path: str, key: str) -> str | None:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].strip() == key), None)


def _plain(value: Any) -> Any:
    """Plain JSON: floats to 6 significant digits (stable, readable), non-finite floats as null, tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return float(f"{value:.6g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    raise TypeError(f"not plain JSON: {type(value).__name__}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(port: int) -> subprocess.Popen[bytes]:
    """A redis-server of the caller's own on `port` (no persistence), once it accepts connections; the benches
    and the tests start theirs here."""
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.terminate()
    raise RuntimeError(f"redis-server did not accept connections on port {port} within 10 s")


def wait_until_up(url: str, process: subprocess.Popen[bytes], seconds: float = 90) -> None:
    """Until `url` answers; a gateway's /healthz until its tools are embedded too, so that no bench measures
    the background embedding that follows a start."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"process for {url} exited early")
        try:
            response = httpx.get(url, timeout=1)
            settled = not url.endswith("/healthz") or response.json().get("search", {}).get("mode") != "embedding"
            if settled:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not come up")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def demo_config(**changes: Any) -> dict[str, Any]:
    """The bundled config with absolute server paths, so it runs from a temporary directory."""
    config: dict[str, Any] = json.loads((ROOT / "config.json").read_text())
    for server in config["mcpServers"].values():
        server["args"] = [str(ROOT / arg) for arg in server["args"]]
    config.update(changes)
    return config


def start_gateway(
    config: dict[str, Any],
    port: int,
    env: dict[str, str] | None = None,
    log: IO[str] | None = None,
    extra: list[str] | None = None,
) -> tuple[subprocess.Popen[bytes], Path]:
    """`toolsift serve` on `config` in its own process (with `extra` arguments, e.g. `--workers 2`); returns it and
    its working directory."""
    workdir = Path(tempfile.mkdtemp(prefix="toolsift-bench-"))
    (workdir / "config.json").write_text(json.dumps(config))
    toolsift = Path(sys.executable).parent / "toolsift"
    command = [str(toolsift), "serve", "--config", str(workdir / "config.json"), "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--log-level", "warning", *(extra or [])],
        env=env,
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT if log else subprocess.DEVNULL,
    )
    return process, workdir
