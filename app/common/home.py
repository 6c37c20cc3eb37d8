"""toolsift's own folder on this machine, for what outlives a process: the search model's vectors, and which
gateways are running (so a command finds the one serving its config). Standard library only: the CLI's fast paths
read it."""

from __future__ import annotations

import os
from pathlib import Path


def toolsift_home() -> Path:
    """`TOOLSIFT_HOME`, else `$XDG_CACHE_HOME/toolsift` or `~/.cache/toolsift`."""
    explicit = os.environ.get("TOOLSIFT_HOME")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolsift"
