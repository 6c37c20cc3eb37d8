"""bench/load.py counts the CPU of the process tree it measures: a real child process is in it (in process, the
setups and the report are checked by tests/unit/bench/test_load_setups.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench import load


def test_the_cpu_of_a_process_and_its_children_is_counted() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; sum(range(10**7)); time.sleep(30)"])
    try:
        assert child.pid in load.process_tree(os.getpid())
        used = load.cpu_seconds([os.getpid()])
        assert os.getpid() in used and child.pid in used and all(value >= 0 for value in used.values())
    finally:
        child.kill()
        child.wait()
