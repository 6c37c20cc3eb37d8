"""`tokens_per_day` under parallel requests on a real Redis: the reservation is one atomic increment there, so a
budget that holds N estimates admits N of 30 requests sent at once, as in memory."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.support import Upstream
from tests.support.limits import FITS, PARALLEL, SPENT, budget_config, counted, parallel_requests

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server (.ci/run installs it)")


async def test_parallel_requests_on_redis_are_admitted_as_far_as_their_estimates_fit(
    upstream: Upstream, gateway_factory: Any, redis_url: str
) -> None:
    client, gateway = await gateway_factory(budget_config(sessions={"redis_url": redis_url}))
    statuses = await parallel_requests(client, upstream)
    assert statuses.count(200) == FITS and statuses.count(429) == PARALLEL - FITS
    assert await counted(gateway) == FITS * SPENT
