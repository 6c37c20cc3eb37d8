"""compose.yaml's `scale` profile, checked without a Docker engine: N gateway replicas sharing one Redis, behind a
load balancer whose backend is those replicas, with health checks wired end to end."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from app.cli.serve import serve
from app.config import parse_config
from tests.support import ROOT

COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
HAPROXY = ROOT / "deploy" / "haproxy.cfg"


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Container path -> host path (relative to the repository) of each bind mount."""
    mounts = {}
    for volume in service.get("volumes", []):
        host, container, *_ = volume.split(":")
        mounts[container] = host.removeprefix("./")
    return mounts


def _scale_config() -> Any:
    mounted = _mounts(SERVICES["gateway"])["/srv/toolsift/config.json"]
    raw = json.loads((ROOT / mounted).read_text())
    environ = {name: str(value) for name, value in SERVICES["gateway"]["environment"].items()}
    environ["TOOLSIFT_API_KEY"] = "a-gateway-key"  # compose passes the operator's through
    return raw, parse_config(raw, environ=environ, base_dir=ROOT)


def test_the_scale_profile_is_redis_replicas_and_a_balancer_and_changes_nothing_else() -> None:
    scale = {name for name, service in SERVICES.items() if "scale" in service.get("profiles", [])}
    assert scale == {"redis", "gateway", "lb"}
    assert "profiles" not in SERVICES["toolsift"], "`docker compose up` stays the one gateway"
    gateway = SERVICES["gateway"]
    assert gateway["build"] == "." and gateway["image"] == SERVICES["toolsift"]["image"]
    assert re.fullmatch(r"\$\{TOOLSIFT_REPLICAS:-([2-9]|\d\d+)\}", str(gateway["deploy"]["replicas"]))
    command = gateway["command"]
    assert command[:2] == ["toolsift", "serve"] and command[command.index("--host") + 1] == "0.0.0.0"
    assert "--workers" in command and "ports" not in gateway, "replicas are reached through the balancer only"


def test_every_replica_shares_state_in_the_profiles_redis() -> None:
    raw, config = _scale_config()
    assert config.store.redis_url == "redis://redis:6379/0"
    assert config.auth.api_keys == ["a-gateway-key"], "a gateway on 0.0.0.0 behind a published port needs keys"
    demo = json.loads((ROOT / "config.json").read_text())
    assert {key: raw[key] for key in demo} == demo, "the bundled config, plus Redis and keys"
    assert SERVICES["gateway"]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert SERVICES["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    port = re.search(r"redis://redis:(\d+)/", config.store.redis_url)
    assert port and port.group(1) == "6379" and "ports" not in SERVICES["redis"]


def test_the_profiles_redis_never_evicts_the_limits_counters() -> None:
    """Under an eviction policy a full Redis drops keys with a time to live (every limit counter) or any key, and an
    identity's day budget starts over; the counters live in this Redis, so it refuses writes instead."""
    command = SERVICES["redis"]["command"]
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    config = _scale_config()[1]
    assert config.limits_redis_url() == "redis://redis:6379/0"
    # A full noeviction Redis refuses writes, counters' too: the key's shares (its sessions, its MCP clients' state,
    # its responses) keep it from filling the Redis, so the limits are never left unenforced by a flood.
    maxmemory = command[command.index("--maxmemory") + 1]
    assert maxmemory.endswith("mb") and len(config.auth.api_keys) == 1
    shares = 2 * (config.sessions.max_bytes_per_identity or 0) + (config.responses_store.max_bytes_per_identity or 0)
    assert 0 < shares <= int(maxmemory.removesuffix("mb")) * 2**20 // 2


def test_several_workers_a_replica_are_allowed_by_this_config(capsys: pytest.CaptureFixture[str]) -> None:
    """`serve --workers N` refuses without Redis; the profile's config has it (checked here without starting)."""
    import argparse
    from unittest import mock

    _, config = _scale_config()
    command = SERVICES["gateway"]["command"]
    workers = int(re.sub(r"\$\{TOOLSIFT_WORKERS:-(\d+)\}", r"\1", command[command.index("--workers") + 1]))
    assert workers >= 2
    args = argparse.Namespace(
        workers=workers, host="0.0.0.0", port=8000, log_level="warning", log_format="text", config="config.json"
    )
    with mock.patch("uvicorn.run") as started:
        assert serve(config, args) == 0
    assert started.call_args.kwargs["workers"] == workers


def test_health_checks_are_wired_from_redis_to_the_balancer() -> None:
    gateway, lb = SERVICES["gateway"], SERVICES["lb"]
    assert "/healthz" in " ".join(gateway["healthcheck"]["test"]), "a replica is alive"
    assert lb["depends_on"]["gateway"] == {"condition": "service_healthy"}
    grace = re.fullmatch(r"(\d+)s", gateway["stop_grace_period"])
    assert grace and int(grace.group(1)) > parse_config({}, environ={}).shutdown_grace_seconds, (
        "SIGTERM lets in-flight requests finish before Docker kills the replica"
    )
    cfg = HAPROXY.read_text()
    assert re.search(r"^\s+option httpchk GET /readyz$", cfg, re.M), "only ready replicas get traffic"
    assert re.search(r"^\s+http-check expect status 200$", cfg, re.M)
    monitor = re.search(r"^\s+monitor-uri (\S+)", cfg, re.M)
    assert monitor and monitor.group(1) in " ".join(lb["healthcheck"]["test"])


def test_the_balancer_sends_to_the_gateway_service_on_its_port() -> None:
    lb = SERVICES["lb"]
    assert lb["image"].startswith("haproxy:")
    assert _mounts(lb)["/usr/local/etc/haproxy/haproxy.cfg"] == "deploy/haproxy.cfg"
    cfg = HAPROXY.read_text()
    servers = re.search(r"^\s+server-template \S+ (\d+) (\S+):(\d+)", cfg, re.M)
    assert servers, "replicas found by the service's name"
    count, host, port = int(servers.group(1)), servers.group(2), servers.group(3)
    command = SERVICES["gateway"]["command"]
    assert host == "gateway" and port == command[command.index("--port") + 1]
    replicas = int(re.sub(r"\$\{TOOLSIFT_REPLICAS:-(\d+)\}", r"\1", str(SERVICES["gateway"]["deploy"]["replicas"])))
    assert count >= replicas
    bind = re.search(r"^\s+bind :(\d+)$", cfg, re.M)
    published = re.fullmatch(r"\$\{TOOLSIFT_SCALE_PORT:-(\d+)\}:(\d+)", lb["ports"][0])
    assert bind and published and published.group(2) == bind.group(1)
    assert published.group(1) != "8000", "beside `docker compose up`'s gateway on 8000"
    assert "resolvers docker" in cfg and "127.0.0.11:53" in cfg, "Docker's DNS, which lists every replica"


def test_handshake_era_mcp_sessions_stick_to_the_replica_that_holds_them() -> None:
    cfg = HAPROXY.read_text()
    assert re.search(r"^\s+stick store-response res\.hdr\(mcp-session-id\)$", cfg, re.M)
    assert re.search(r"^\s+stick match req\.hdr\(mcp-session-id\)$", cfg, re.M)
    assert re.search(r"^\s+balance leastconn$", cfg, re.M)
