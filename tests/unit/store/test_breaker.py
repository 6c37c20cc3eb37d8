"""The store's circuit breaker: one failure of the backend opens it, the operations after it fail at once, and after
its cooldown one probe (only one) decides whether it closes."""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.store import StoreUnavailable, unavailable_level
from app.store.breaker import Circuit


class Backend:
    def __init__(self) -> None:
        self.down = False
        self.calls = 0
        self.gate: asyncio.Event | None = None  # a call waits for it when set: a probe in flight

    async def call(self) -> str:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise ConnectionError("down")
        return "ok"


async def test_one_failure_opens_it_and_a_single_probe_closes_it() -> None:
    now = [0.0]
    circuit, backend = Circuit((ConnectionError,), cooldown=1.0, clock=lambda: now[0]), Backend()
    assert await circuit.run(backend.call) == "ok" and circuit.available()
    backend.down = True
    with pytest.raises(ConnectionError):
        await circuit.run(backend.call)
    for _ in range(5):
        with pytest.raises(StoreUnavailable, match="circuit open"):
            await circuit.run(backend.call)
    assert (backend.calls, circuit.failures, circuit.refused) == (2, 1, 5), "the open circuit never reached it"
    assert not circuit.available()
    now[0] = 1.5  # past the cooldown: the next operation probes, the others wait for its answer
    backend.down, backend.gate = False, asyncio.Event()
    probe = asyncio.create_task(circuit.run(backend.call))
    await asyncio.sleep(0)
    assert not circuit.available()
    with pytest.raises(StoreUnavailable):
        await circuit.run(backend.call)
    backend.gate.set()
    assert await probe == "ok" and circuit.available() and not circuit.open
    assert backend.calls == 3


async def test_a_failed_probe_keeps_it_open_and_a_refusal_is_an_answer() -> None:
    now = [0.0]
    circuit, backend = Circuit((ConnectionError,), cooldown=1.0, clock=lambda: now[0]), Backend()
    backend.down = True
    with pytest.raises(ConnectionError):
        await circuit.run(backend.call)
    now[0] = 1.0
    with pytest.raises(ConnectionError):
        await circuit.run(backend.call)  # the probe fails: open another cooldown
    with pytest.raises(StoreUnavailable):
        await circuit.run(backend.call)

    async def refused() -> None:
        raise ValueError("OOM command not allowed")  # the backend answered, if with a refusal

    now[0] = 2.5
    with pytest.raises(ValueError):
        await circuit.run(refused)
    assert circuit.available() and not circuit.open


async def test_an_outage_is_logged_once_when_it_begins_and_once_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    """Many requests during one outage: the log says the store went away and came back, not once per operation
    (the callers log a refusal of the open circuit at debug only)."""
    now = [0.0]
    circuit, backend = Circuit((ConnectionError,), cooldown=1.0, clock=lambda: now[0]), Backend()
    backend.down = True
    caplog.set_level(logging.DEBUG)
    failures: list[StoreUnavailable | ConnectionError] = []
    for step in range(40):  # 4 cooldowns' worth of operations, a failed probe in each
        now[0] = step * 0.1
        try:
            await circuit.run(backend.call)
        except (StoreUnavailable, ConnectionError) as exc:
            failures.append(exc)
    backend.down, now[0] = False, 10.0
    assert await circuit.run(backend.call) == "ok"
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(failures) == 40 and len(warnings) == 2, warnings
    assert warnings[0].startswith("store unavailable (ConnectionError)") and warnings[1] == "store answers again"
    refusals = [exc for exc in failures if isinstance(exc, StoreUnavailable)]
    assert refusals and {unavailable_level(exc) for exc in refusals} == {logging.DEBUG}
    assert unavailable_level(StoreUnavailable("store unavailable: TimeoutError")) == logging.WARNING
