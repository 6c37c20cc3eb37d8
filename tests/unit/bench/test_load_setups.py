"""bench/load.py's setups: one process for each `--instances` count side by side, then the replicas x workers on
Redis, all in one run; and the process tree whose CPU it counts."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from bench import load


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


def test_the_cpu_of_a_process_and_its_children_is_counted() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; sum(range(10**7)); time.sleep(30)"])
    try:
        assert child.pid in load.process_tree(os.getpid())
        used = load.cpu_seconds([os.getpid()])
        assert os.getpid() in used and child.pid in used and all(value >= 0 for value in used.values())
    finally:
        child.kill()
        child.wait()
