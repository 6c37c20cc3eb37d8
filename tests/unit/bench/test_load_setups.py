"""bench/load.py's setups: one process for each `--instances` count side by side, then the replicas x workers on
Redis, all in one run; the called server slowed by `--call-ms`, and a report that states it (the process tree whose
CPU it counts, with a real child process, is tests/e2e/bench/test_load_setups.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from bench import common, load


def _args(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**{"instances": "1", "replicas": 1, "workers": 1, **given})


def test_one_setup_by_default_as_before() -> None:
    assert load.setups(_args()) == [load.Setup()]
    assert load.Setup().label == "1 process, finance x1"


def test_instances_side_by_side_then_the_replicas_on_redis() -> None:
    planned = load.setups(_args(instances="1,4", replicas=2, workers=2))
    assert planned == [load.Setup(instances=1), load.Setup(instances=4), load.Setup(2, 2, 1)]
    assert [setup.shared for setup in planned] == [False, False, True]
    assert planned[2].label == "2 x 2 workers, finance x1"


def test_instance_counts_are_bounded() -> None:
    with pytest.raises(SystemExit):
        load.setups(_args(instances="0,4"))


def test_the_called_server_is_the_example_unless_calls_are_to_take_time() -> None:
    plain = load.setup_config(load.Setup(instances=4), 0)["mcpServers"]["finance"]
    assert plain["args"] == [str(load.ROOT / "examples" / "servers" / "finance.py")]
    assert plain["instances"] == 4

    slow = load.setup_config(load.Setup(instances=4), 50)["mcpServers"]["finance"]
    assert slow["args"] == [str(load.ROOT / "bench" / "serial_server.py"), "--call-ms", "50"]
    assert (slow["command"], slow["instances"]) == (plain["command"], 4)


def _result(conversations: int) -> dict[str, object]:
    return {
        "conversations": conversations,
        "errors": 0,
        "per_s": conversations / 8,
        "p50": 100.0,
        "p99": 200.0,
        "cpu_ms_per_conversation": 10.0,
        "rss_peak": 700.0,
        "rss_first_third": 690.0,
        "rss_last_third": 700.0,
        "reasons": {},
    }


@pytest.mark.parametrize(
    ("call_ms", "said", "called"),
    [
        (
            50.0,
            "call time: 50 ms per finance call, one call at a time per process",
            "bench/serial_server.py --call-ms 50",
        ),
        (0.0, "call time: finance as in the examples", "examples/servers/finance.py"),
    ],
)
def test_the_report_states_the_call_time_and_what_finance_xn_means(
    call_ms: float,
    said: str,
    called: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(common.RESULTS_ENV, str(tmp_path))
    monkeypatch.setattr(common, "git_state", lambda: ("abc1234", False))
    args = _args(clients=40, seconds=8.0, stream=False, call_ms=call_ms, no_record=False, out="smoke")
    load.report(args, [(load.Setup(instances=1), _result(160)), (load.Setup(instances=4), _result(400))], "log")

    printed = capsys.readouterr().out
    assert said in printed
    assert "`finance xN`: N processes of the called stdio server (its `instances`)" in printed
    assert "1 process, finance x1" in printed and "1 process, finance x4" in printed
    results = json.loads((tmp_path / "smoke.json").read_text())["results"]
    assert (results["call_ms"], results["called_server"]) == (call_ms, called)
    assert [row["instances"] for row in results["setups"]] == [1, 4]
