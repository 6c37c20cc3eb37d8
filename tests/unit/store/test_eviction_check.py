"""A Redis whose eviction policy cannot be read (down, or a managed Redis that refuses CONFIG) is reported as not
checked, with what the policy must be, rather than taken for a safe one."""

from __future__ import annotations

from app.store import Stores
from app.store.eviction import eviction_problem
from tests.support import free_port


async def test_a_redis_that_cannot_be_asked_is_reported_as_unchecked() -> None:
    stores = Stores(timeout=0.5)
    problem = await eviction_problem(stores.client(f"redis://127.0.0.1:{free_port()}/0"))
    await stores.aclose()
    assert problem is not None and problem.startswith("could not check") and "noeviction" in problem
