"""The benches' run records (bench/common.py `record`) and their refusal of a missing data file: a figure in the docs
must point at one recorded run of the data it names."""

from __future__ import annotations

import datetime
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from bench import common

OVERHEAD = str(common.ROOT / "bench" / "overhead.py")


@pytest.fixture
def known_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed commit, so that no test runs git."""
    monkeypatch.setattr(common, "git_state", lambda: ("abc1234", True))


@pytest.mark.usefixtures("known_commit")
def test_record_writes_the_machine_the_commit_the_command_and_the_results(tmp_path: Path) -> None:
    results = {"targets": {"toolsift": {"p50_ms": 1.23456789, "errors": 0}}, "ratio": float("nan"), "rows": (1, 2)}
    path = common.record(
        "overhead", results, load_generator="wrk 4.1.0", argv=[OVERHEAD, "--requests", "300"], results_dir=tmp_path
    )

    assert path == tmp_path / "overhead.json"
    text = path.read_text()
    document = json.loads(text)
    assert text == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    assert list(document) == [
        "bench", "recorded_at", "git_commit", "dirty", "command", "machine", "load_generator", "results"
    ]  # fmt: skip
    assert document["bench"] == "overhead"
    assert datetime.datetime.fromisoformat(document["recorded_at"].replace("Z", "+00:00")).utcoffset() == (
        datetime.timedelta(0)
    )
    assert (document["git_commit"], document["dirty"]) == ("abc1234", True)
    assert document["command"] == "python bench/overhead.py --requests 300"
    assert document["load_generator"] == "wrk 4.1.0"
    machine = document["machine"]
    assert list(machine) == ["cpu", "logical_cores", "memory_gib", "os", "python"]
    assert machine["logical_cores"] == os.cpu_count()
    assert machine["cpu"] and machine["os"] and machine["python"].count(".") == 2
    if Path("/proc/meminfo").exists():
        assert machine["memory_gib"] > 0
    assert document["results"] == {
        "targets": {"toolsift": {"p50_ms": 1.23457, "errors": 0}},
        "ratio": None,
        "rows": [1, 2],
    }


def test_record_goes_where_the_environment_says_and_tolerates_no_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(common.RESULTS_ENV, str(tmp_path / "elsewhere"))

    def no_git(*args: str) -> str:
        raise FileNotFoundError("git")

    monkeypatch.setattr(common, "_git", no_git)
    path = common.record("tokens", {"unit": "o200k_base tokens"}, argv=["bench/tokens.py"])

    document = json.loads(path.read_text())
    assert path == tmp_path / "elsewhere" / "tokens.json"
    assert (document["git_commit"], document["dirty"], document["load_generator"]) == (None, None, None)
    assert document["command"] == "python bench/tokens.py"


@pytest.mark.usefixtures("known_commit")
def test_record_refuses_what_is_not_plain_json(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="Path"):
        common.record("x", {"file": tmp_path}, argv=["x.py"], results_dir=tmp_path)


@pytest.mark.parametrize("bench", ["tokens", "retrieval", "prefetch", "related", "search_scale"])
def test_a_missing_data_file_is_an_error_naming_it(
    bench: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 before any work, never a generated or other catalog in its place, and nothing recorded."""
    missing = tmp_path / "tool_retrieval_missing.json"
    monkeypatch.setattr(sys, "path", list(sys.path))  # the benches put bench/ first on it
    monkeypatch.setenv(common.RESULTS_ENV, str(tmp_path / "results"))
    module = importlib.import_module(f"bench.{bench}")
    monkeypatch.setattr(sys, "argv", [f"bench/{bench}.py", "--data", str(missing)])

    with pytest.raises(SystemExit) as exited:
        module.main()

    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert str(missing) in error and "bench/data" in error
    assert not (tmp_path / "results").exists()


def test_a_run_without_record_leaves_the_tracked_records_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Running a bench the README invites a reader to run must not rewrite the record behind the docs' figures:
    without `--record` a run's record goes to bench/results/local/ (untracked)."""
    import argparse

    monkeypatch.setattr(common, "git_state", lambda: ("abc1234", False))
    monkeypatch.delenv(common.RESULTS_ENV, raising=False)
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    monkeypatch.setattr(common, "TRACKED", False)
    parser = argparse.ArgumentParser()
    common.add_record_options(parser, "tokens")
    parser.parse_args([])
    assert common.record("tokens", {"x": 1}) == tmp_path / "local" / "tokens.json"
    assert not (tmp_path / "tokens.json").exists()
    assert parser.parse_args(["--record"]).record is True
    assert common.record("tokens", {"x": 1}) == tmp_path / "tokens.json"
