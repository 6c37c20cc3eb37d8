"""The `store` section: where callers' state lives. Its keys' old names (in `sessions` and `limits`) still work, each
named in a note; where both names are set, the new one wins and the old one is named as ignored."""

from __future__ import annotations

from app.config import parse_config


def test_the_old_names_are_read_and_named() -> None:
    config = parse_config(
        {
            "sessions": {"redis_url": "redis://a:6379/0", "store_timeout_ms": 400},
            "limits": {"redis_url": "redis://b/1"},
        },
        environ={},
    )
    assert (config.store.redis_url, config.store.timeout_ms) == ("redis://a:6379/0", 400)
    assert config.store.counters_redis_url == "redis://b/1" and config.limits_redis_url() == "redis://b/1"
    assert config.notes == [
        "sessions.redis_url is now store.redis_url: read as before; rename it",
        "sessions.store_timeout_ms is now store.timeout_ms: read as before; rename it",
        "limits.redis_url is now store.counters_redis_url: read as before; rename it",
    ]


def test_the_new_name_wins() -> None:
    config = parse_config(
        {"store": {"redis_url": "redis://new/0"}, "sessions": {"redis_url": "redis://old/0"}}, environ={}
    )
    assert config.store.redis_url == "redis://new/0" and config.limits_redis_url() == "redis://new/0"
    assert config.notes == ["sessions.redis_url is ignored: store.redis_url is set (its new name)"]


def test_without_a_store_everything_is_in_memory() -> None:
    config = parse_config({}, environ={})
    assert config.store.redis_url is None and config.limits_redis_url() is None and config.notes == []
