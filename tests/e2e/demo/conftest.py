"""The demo these tests share: one `toolsift demo` for the folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import free_port, served_gateway
from tests.support.gateway import demo_config_file


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolsift demo` on the bundled config; keyword search only (see `demo_config_file`)."""
    with served_gateway(demo_config_file(tmp_path_factory.mktemp("demo")), free_port(), command="demo") as base:
        yield base
