"""The demo these tests share: one `toolsift demo` for the folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import free_port, served_gateway
from tests.support.gateway import demo_config_file


@pytest.fixture(scope="package")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="package")
def demo(demo_folder: Path) -> Iterator[str]:
    """`toolsift demo` on the bundled config; keyword search only (see `demo_config_file`)."""
    with served_gateway(demo_config_file(demo_folder), free_port(), command="demo") as base:
        yield base


@pytest.fixture
def demo_calls(demo_folder: Path) -> Path:
    """The demo servers' own log of the tools they ran, one `<server> <tool>` line each."""
    return demo_folder / "calls.log"
