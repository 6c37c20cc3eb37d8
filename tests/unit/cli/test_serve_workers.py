"""`toolsift serve --workers N`: several workers share state only through Redis, so N > 1 without it is refused
before anything starts, with a message that says what to set."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from unittest import mock

import pytest

from app.cli import main
from tests.support import free_port

PORT = str(free_port())


def write_config(tmp_path: Path, **changes: object) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"providers": {}, "mcpServers": {}, **changes}))
    return str(path)


def test_several_workers_without_redis_are_refused_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path)
    with mock.patch("uvicorn.run") as started:
        code = main(["serve", "--config", config, "--workers", "2", "--port", PORT])
    assert code == 2 and not started.called
    error = capsys.readouterr().err
    assert "--workers 2" in error and "store.redis_url" in error and "--workers 1" in error


def test_several_workers_with_redis_start_uvicorn_workers(tmp_path: Path) -> None:
    """Their counters go to a folder that exists while they run; afterwards neither it nor the variable naming it
    is left (a later gateway in this process counts in its own registry again)."""
    config = write_config(tmp_path, sessions={"redis_url": "redis://127.0.0.1:6379/0"})
    seen: list[bool] = []

    def run(*args: object, **kwargs: object) -> None:
        seen.append(os.path.isdir(os.environ["PROMETHEUS_MULTIPROC_DIR"]))

    with mock.patch("uvicorn.run", side_effect=run) as started:
        code = main(["serve", "--config", config, "--workers", "3", "--port", PORT])
    assert code == 0 and started.call_args.kwargs["workers"] == 3 and seen == [True]
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


def test_one_worker_needs_no_redis(tmp_path: Path) -> None:
    with mock.patch("uvicorn.run") as started:
        assert main(["serve", "--config", write_config(tmp_path), "--workers", "1", "--port", PORT]) == 0
    assert started.called


def test_zero_workers_is_a_mistake(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with mock.patch("uvicorn.run") as started:
        assert main(["serve", "--config", write_config(tmp_path), "--workers", "0"]) == 2
    assert not started.called and "--workers must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_port_in_use_is_reported_before_any_server_connects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        with mock.patch("uvicorn.run") as started, mock.patch("app.cli.serve.build_gateway") as built:
            code = main([command, "--config", write_config(tmp_path), "--port", port])
    assert code == 2 and not started.called and not built.called
    error = capsys.readouterr().err
    assert f"port {port} on 127.0.0.1 is already in use" in error and "--port" in error


def test_check_says_where_callers_state_lives() -> None:
    from app.cli.inspect import scaling_line
    from app.config import parse_config

    in_memory = scaling_line(parse_config({}, environ={}))
    assert in_memory.startswith("state: in this process's memory") and "store.redis_url" in in_memory
    shared = scaling_line(parse_config({"sessions": {"redis_url": "redis://127.0.0.1:6379/0"}}, environ={}))
    assert shared.startswith("state: shared in Redis") and "--workers N" in shared
