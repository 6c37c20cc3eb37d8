"""toolsift: an OpenAI-compatible gateway that defers MCP tools behind search_tools."""

from __future__ import annotations

import os
from importlib import metadata

# OpenBLAS (numpy's, which the search model and BM25 use) keeps a thread pool that it stops in a fork handler,
# waiting for its threads' work: a stdio MCP server spawned (a fork, on uvloop) while a worker thread embeds tools
# held the event loop in that handler, and the gateway answered nothing, for good. One BLAS thread has no pool to
# stop; the encoder runs in a worker thread anyway, beside the event loop on the other core. Set before numpy is
# imported (an operator's own setting wins).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")


def toolsift_version() -> str:
    """The installed package's version (a source tree run without installing has none to report)."""
    try:
        return metadata.version("toolsift")
    except metadata.PackageNotFoundError:
        return "0+unknown"
