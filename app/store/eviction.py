"""Whether a Redis may evict what must not go: the limits' counters. Under an eviction policy, Redis at its
`maxmemory` drops keys (`volatile-*` those with a time to live, which every counter has; `allkeys-*` any), so a
flood of other state could reset an identity's day budget. Only `noeviction` keeps them: a full Redis then refuses
writes instead, which the stores answer as unavailable.

Asked once, with `CONFIG GET`; a managed Redis may refuse that command, and then the answer says it could not be
checked rather than guessing.
"""

from __future__ import annotations

from typing import Any

SAFE_POLICY = "noeviction"


async def eviction_problem(client: Any) -> str | None:
    """Why counters in the Redis `client` speaks to might be evicted, or None when its policy is `noeviction`."""
    try:
        found = await client.config_get("maxmemory-policy")
    except Exception as exc:
        return (
            f"could not check the limits' Redis eviction policy ({type(exc).__name__}): it must be "
            f"'maxmemory-policy {SAFE_POLICY}', or Redis may evict limit counters and reset budgets"
        )
    policy = _text(found.get("maxmemory-policy") or found.get(b"maxmemory-policy"))
    if policy == SAFE_POLICY:
        return None
    return (
        f"the limits' Redis has 'maxmemory-policy {policy or 'unknown'}': at its maxmemory it may evict limit "
        f"counters and reset identities' budgets; set 'maxmemory-policy {SAFE_POLICY}' there, or give the "
        "counters a Redis of their own (store.counters_redis_url)"
    )


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")
