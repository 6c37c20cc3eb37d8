"""Which gateways run on this machine, and on which config: `toolsift serve` and `demo` note their URL in toolsift's
folder while they run, so `toolsift search` (tools, manifest) asks the gateway serving its config, on whatever port
it was started (`make demo PORT=8100`), with no URL to pass. `--url` and `$TOOLSIFT_URL` still win."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from app.common.home import toolsift_home

FOLDER = "running"


def _folder() -> Path:
    return toolsift_home() / FOLDER


def note(url: str, config: str) -> Path:
    """Record this process's gateway; returns the note, to `forget` when the gateway stops."""
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{os.getpid()}.json"
    path.write_text(json.dumps({"url": url, "config": str(Path(config).resolve()), "pid": os.getpid()}))
    return path


def forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def serving(config: str) -> str | None:
    """The URL of a running gateway on `config` (the latest started), or None. Notes of processes that are gone
    (killed without stopping) are removed."""
    wanted = str(Path(config).resolve())
    found: list[tuple[float, str]] = []
    for path in _folder().glob("*.json") if _folder().is_dir() else ():
        try:
            entry = json.loads(path.read_text())
            pid, url, served = int(entry["pid"]), str(entry["url"]), str(entry["config"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not _alive(pid):
            forget(path)
        elif served == wanted:
            found.append((path.stat().st_mtime, url))
    return max(found)[1] if found else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
