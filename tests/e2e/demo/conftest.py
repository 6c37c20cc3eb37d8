"""The demo these tests share: one `toolsift demo` for the folder."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.support import ROOT, free_port, served_gateway


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolsift demo` on the bundled config; keyword search only, so that results do not depend on how far the
    background embedding of the tools has got (and the start is quicker)."""
    config = json.loads((ROOT / "config.json").read_text())
    for server in config["mcpServers"].values():
        server["args"] = [str(ROOT / arg) for arg in server["args"]]
    config["tool_discovery"]["semantic"] = {"enabled": False}
    path = tmp_path_factory.mktemp("demo") / "config.json"
    path.write_text(json.dumps(config))
    with served_gateway(path, free_port(), command="demo") as base:
        yield base
