"""`auth.api_keys` entries as identities: plain strings keep their id, names can never spell another id, and
every mistake is reported at start-up."""

from __future__ import annotations

import pytest

from app.common.identity import ANONYMOUS, Identities, Identity
from app.config import ConfigError, config_warnings, parse_config

TOOL_SETS = {"research": {"servers": {}}}


def _auth(*entries: object) -> dict[str, object]:
    return {"tool_sets": TOOL_SETS, "auth": {"api_keys": list(entries)}}


def test_plain_keys_keep_their_id_and_named_ones_are_their_name() -> None:
    alice = {"name": "alice", "key": "k-alice", "tool_set": "research", "models": ["fast"],
             "limits": {"requests_per_minute": 60, "stored_bytes": 65536}, "secrets": {"GH": "tok"}}  # fmt: skip
    config = parse_config(_auth("k-plain", alice), environ={})
    identities = Identities(config.auth)
    plain = identities.identify(b"k-plain")
    assert plain == Identity.for_key("k-plain") and plain is not None and plain.id.startswith("key-")
    found = identities.identify(b"k-alice")
    assert found is not None and found.id == "alice" and found.tool_set == "research"
    assert found.allows_model("fast") and not found.allows_model("smart") and plain.allows_model("smart")
    assert found.secrets == {"GH": "tok"} and identities.get("alice") is found
    assert identities.identify(b"k-nope") is None and identities.get("anonymous") is ANONYMOUS
    assert identities.stored_bytes() == {"alice": 65536}
    assert config.auth.gateway_keys() == ["k-plain", "k-alice"]
    assert {"k-alice", "tok"} <= config.secrets(), "keys and identity secrets are redacted"


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"name": "key-0123456789abcdef", "key": "a"}, "is reserved"),
        ({"name": "KEY-x", "key": "a"}, "is reserved"),
        ({"name": "anonymous", "key": "a"}, "is reserved"),
        ({"name": "has space", "key": "a"}, "should match pattern"),
        ({"name": "ok", "key": "a", "tool_set": "nope"}, "unknown tool set 'nope'"),
        ({"name": "ok", "key": "a", "limits": {"requests_per_minutes": 1}}, "requests_per_minutes"),
        ({"name": "ok", "key": "k-plain"}, "the same key is listed twice"),
    ],
)
def test_a_wrong_identity_is_refused_at_start_up(entry: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_auth("k-plain", entry), environ={})
    assert any(problem in line for line in caught.value.problems), caught.value.problems


def test_two_identities_with_one_name_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(_auth({"name": "a", "key": "1"}, {"name": "a", "key": "2"}), environ={})
    assert any("'a' is used twice" in line for line in caught.value.problems)


def test_an_unset_secret_is_a_warning_and_an_unset_key_an_error() -> None:
    entry = {"name": "alice", "key": "${ALICE_KEY}", "secrets": {"GH": "${ALICE_GH}"}}
    config = parse_config(_auth(entry), environ={"ALICE_KEY": "k"})
    assert config_warnings(config) == [
        "auth.api_keys[0].secrets.GH: environment variable ALICE_GH is not set; servers that reference "
        "${identity.GH} get it empty for this identity"
    ]
    with pytest.raises(ConfigError) as caught:
        parse_config(_auth(entry), environ={"ALICE_GH": "g"})
    assert caught.value.problems == ["auth.api_keys[0].key: environment variable ALICE_KEY is not set"]
