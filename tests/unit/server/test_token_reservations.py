"""`tokens_per_day` under parallel requests, in memory: each request reserves its estimate at admission, so a
budget that holds N estimates admits N of 30 requests sent at once, and the day's count ends at what they spent."""

from __future__ import annotations

from typing import Any

from tests.support import Upstream
from tests.support.limits import FITS, PARALLEL, SPENT, budget_config, counted, parallel_requests


async def test_parallel_requests_are_admitted_as_far_as_their_estimates_fit(
    upstream: Upstream, gateway_factory: Any
) -> None:
    client, gateway = await gateway_factory(budget_config())
    statuses = await parallel_requests(client, upstream)
    assert statuses.count(200) == FITS and statuses.count(429) == PARALLEL - FITS
    assert await counted(gateway) == FITS * SPENT  # every reservation settled with what its request spent
