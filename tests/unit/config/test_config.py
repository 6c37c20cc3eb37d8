"""Config loading: env expansion, aliases, and one clear line per problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import ConfigError, load_config, parse_config
from tests.support import ROOT


def test_env_expansion_with_defaults_and_unset_variables() -> None:
    raw = {
        "providers": {"p": {"base_url": "${BASE:-https://fallback/v1}", "api_key": "${KEY}"}},
        "mcpServers": {"gh": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}},
    }
    config = parse_config(raw, environ={"GH_TOKEN": "t0k"})
    assert config.providers["p"].base_url == "https://fallback/v1"
    assert config.providers["p"].api_key == ""
    assert config.mcp_servers["gh"].headers == {"Authorization": "Bearer t0k"}
    assert config.unset_env == {"providers.p.api_key": "KEY"}
    assert config.default_provider == "p", "a single provider is the default"
    assert parse_config(raw, environ={"BASE": "http://x"}).providers["p"].base_url == "http://x"


def test_servers_alias_type_key_and_transports() -> None:
    config = parse_config(
        {
            "servers": {
                "a": {"command": "python", "args": ["a.py"], "alwaysAllow": ["x"]},
                "b": {"url": "http://b/sse", "type": "sse"},
                "c": {"url": "http://c/mcp"},
            }
        },
        environ={},
    )
    assert [config.mcp_servers[n].transport_name for n in "abc"] == ["stdio", "sse", "streamable-http"]


def test_every_problem_is_one_line_naming_the_key() -> None:
    raw = {
        "providers": {"openai": {"apikey": "x"}},
        "mcpServers": {"w": {"args": []}, "r": {"url": "http://x", "transport": "carrier-pigeon"}},
        "tool_sets": {"t": {"servers": {"w": 5}}},
        "max_rounds": 0,
        "tool_discovery": {"max_search_results": 99},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, environ={})
    problems = caught.value.problems
    assert "providers.openai.apikey: unknown key; did you mean 'api_key'?" in problems
    assert "mcpServers.w: set exactly one of 'command' (stdio) or 'url' (remote)" in problems
    assert any(p.startswith("mcpServers.r.transport: Input should be") for p in problems)
    assert any(p.startswith("tool_sets.t.servers.w: expected true, false, a list of tool names") for p in problems)
    assert any(p.startswith("max_rounds: ") for p in problems)
    assert any(p.startswith("tool_discovery.max_search_results: ") for p in problems)
    assert len(problems) == 6


def test_references_between_sections_are_checked() -> None:
    raw = {
        "providers": {"a": {}, "b": {}},
        "default_provider": "c",
        "models": {"m": {"provider": "z", "model": "x"}},
        "mcpServers": {"s": {"command": "x"}},
        "tool_sets": {"t": {"servers": {"ghost": True}}},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, environ={})
    assert caught.value.problems == [
        "default_provider: 'c' is not one of providers a, b",
        "models.m.provider: 'z' is not one of providers a, b",
        "tool_sets.t.servers: unknown server 'ghost'; servers are s",
    ]


def test_unreadable_and_invalid_json_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"providers": {,}}')
    with pytest.raises(ConfigError, match="invalid JSON at line 1 column 16"):
        load_config(bad)


def test_bundled_config_is_valid_without_any_environment() -> None:
    config = load_config(ROOT / "config.json", environ={})
    assert config.unset_env == {"providers.openai.api_key": "OPENAI_API_KEY"}
    assert config.providers["openai"].base_url == "https://api.openai.com/v1"
    deferred = [name for name, server in config.mcp_servers.items() if server.defer_loading]
    assert len(config.mcp_servers) >= 3 and len(deferred) >= len(config.mcp_servers) - 1


def test_the_enriching_model_must_be_one_the_gateway_routes() -> None:
    raw = {
        "providers": {"a": {}},
        "models": {"m": {"provider": "a", "model": "x"}},
        "tool_discovery": {"enrich": {"model": "writer", "batch_size": 0}},
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, environ={})
    assert "tool_discovery.enrich.model: 'writer' is not one of models m" in caught.value.problems
    assert any(p.startswith("tool_discovery.enrich.batch_size: ") for p in caught.value.problems)
    routed = parse_config({**raw, "default_provider": "a", "tool_discovery": {"enrich": {"model": "w"}}}, environ={})
    enrich = routed.tool_discovery.enrich
    assert enrich is not None and (enrich.batch_size, enrich.max_tokens, enrich.background) == (15, None, True)
