"""The response store's byte bound holds in the served process's memory, with non-ASCII text as with ASCII: what
the store keeps is counted in bytes, and what each request allocated on the way is given back to the system."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import ScriptedUpstream, completion, free_port, gateway_config

BOUND = 64 << 20  # responses_store.max_bytes
CYRILLIC = "съешь же ещё этих мягких французских булок, да выпей чаю. "


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]) * 1024


@pytest.fixture
def served(scripted: ScriptedUpstream, tmp_path: Path) -> Iterator[tuple[str, int]]:
    """`toolsift serve` with a response store of BOUND bytes: its base URL and its process id."""
    scripted.fallback = completion("Noted.")
    scripted.script()
    path = tmp_path / "config.json"
    path.write_text(json.dumps(gateway_config(scripted, responses_store={"max_bytes": BOUND})))
    port = free_port()
    toolsift = str(Path(sys.executable).parent / "toolsift")
    process = subprocess.Popen(
        [toolsift, "serve", "--config", str(path), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and process.poll() is None, "gateway did not start"
            time.sleep(0.1)
        yield base, process.pid
    finally:
        process.terminate()
        process.wait(15)
        scripted.fallback = None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process's memory from /proc")
def test_a_store_of_non_ascii_responses_stays_within_its_byte_bound(
    served: tuple[str, int], scripted: ScriptedUpstream
) -> None:
    """Twice the bound in responses of about 2 MB of Cyrillic each (two bytes a character in UTF-8): the
    process grows by at most 1.5 times the bound."""
    base, pid = served
    text = CYRILLIC * (1_000_000 // len(CYRILLIC))
    with httpx.Client(base_url=base, timeout=120) as client:
        assert client.post("/v1/responses", json={"model": "fast", "input": "warm up"}).status_code == 200
        before = rss_bytes(pid)
        made = []
        for number in range(2 * BOUND // (2 * len(text))):
            answer = client.post("/v1/responses", json={"model": "fast", "input": f"{number} {text}"})
            assert answer.status_code == 200 and answer.json()["store"] is True
            made.append(answer.json()["id"])
            scripted.requests.clear()  # the test's upstream keeps nothing either
        grown = rss_bytes(pid) - before
        assert client.get(f"/v1/responses/{made[-1]}").status_code == 200, "the latest is kept"
        assert client.get(f"/v1/responses/{made[0]}").status_code == 404, "the oldest went for it"
    assert grown <= 1.5 * BOUND, f"grew {grown / 2**20:.0f} MiB for a store of {BOUND / 2**20:.0f} MiB"
