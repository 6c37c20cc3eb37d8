"""A config that catches mistakes: pasted blocks from other MCP clients work as is, a misspelt key is an error
that says what was meant, flags are JSON booleans, every problem comes in one pass, unset variables are warnings,
and a JSON syntax error points at the spot with its usual cause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.config import ConfigError, config_warnings, load_config, parse_config
from tests.support import ROOT


def problems_of(raw: dict[str, object]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, environ={})
    return caught.value.problems


def test_blocks_pasted_from_other_clients_work_and_their_own_keys_are_noted_once() -> None:
    raw = {
        "mcpServers": {
            # Cline
            "fs": {"command": "npx", "args": ["-y", "x"], "disabled": False, "autoApprove": [], "timeout": 60,
                   "transportType": "stdio"},
            # Roo Code / Kilo Code
            "git": {"command": "uvx", "args": ["mcp-server-git"], "alwaysAllow": ["git_status"], "watchPaths": []},
            # VS Code / Cursor / Claude Code
            "gh": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"A": "b"}, "envFile": ".env"},
            # Windsurf
            "sse": {"serverUrl": "https://example.invalid/sse", "transportType": "sse"},
            # Cline's spelling of streamable HTTP
            "web": {"url": "https://example.invalid/mcp", "type": "streamableHttp"},
        }
    }  # fmt: skip
    config = parse_config(raw, environ={})
    servers = config.mcp_servers
    assert [servers[name].transport_name for name in servers] == ["stdio", "stdio", "streamable-http", "sse",
                                                                   "streamable-http"]  # fmt: skip
    assert servers["sse"].url == "https://example.invalid/sse"
    assert config.notes == [
        "ignored what other MCP clients write, not used by toolsift: mcpServers.fs.autoApprove, mcpServers.fs.timeout, "
        "mcpServers.git.alwaysAllow, mcpServers.git.watchPaths, mcpServers.gh.envFile"
    ]
    assert parse_config({"mcpServers": {"a": {"command": "x"}}}, environ={}).notes == []


def test_an_unknown_key_in_a_server_entry_is_an_error_that_says_what_was_meant() -> None:
    raw = {
        "mcpServers": {
            "weather": {"command": "python", "arg": ["weather.py"]},
            "notes": {"command": "python", "args": ["notes.py"], "defer_load": True},
            "github": {"url": "https://example.invalid/mcp", "envs": {"A": "1"}, "colour": "blue"},
        }
    }
    assert problems_of(raw) == [
        "mcpServers.weather.arg: unknown key; did you mean 'args'?",
        "mcpServers.notes.defer_load: unknown key; did you mean 'defer_loading'?",
        "mcpServers.github.envs: unknown key; did you mean 'env'?",
        "mcpServers.github.colour: unknown key",
    ]


def test_did_you_mean_works_in_every_section() -> None:
    raw = {"tool_discovery": {"max_search_result": 3, "semantic": {"weak_floor": 0.1}}, "mcp_startup_timout": 5}
    assert problems_of(raw) == [
        "tool_discovery.semantic.weak_floor: unknown key; did you mean 'weak_match_floor'?",
        "tool_discovery.max_search_result: unknown key; did you mean 'max_search_results'?",
        "mcp_startup_timout: unknown key; did you mean 'mcp_startup_timeout'?",
    ]


def test_flags_take_json_booleans_only() -> None:
    raw = {
        "mcpServers": {"a": {"command": "x", "defer_loading": "yes", "disabled": 1}},
        "tool_discovery": {"enabled": "true"},
        "api_docs": "no",
    }
    assert problems_of(raw) == [
        "mcpServers.a.defer_loading: expected true or false (a JSON boolean), not 'yes'",
        "mcpServers.a.disabled: expected true or false (a JSON boolean), not 1",
        "tool_discovery.enabled: expected true or false (a JSON boolean), not 'true'",
        "api_docs: expected true or false (a JSON boolean), not 'no'",
    ]
    config = parse_config({"mcpServers": {"a": {"command": "x", "defer_loading": True}}}, environ={})
    assert config.mcp_servers["a"].defer_loading is True


def test_schema_and_references_are_checked_in_one_pass() -> None:
    raw = {
        "providers": {"openai": {"api_key": "k", "read_timout": 5}},
        "models": {"fast": {"provider": "opena", "model": "m"}},
        "mcpServers": {"notes": {"command": "x", "arg": []}},
        "tool_sets": {"t": {"servers": {"note": True}}},
        "tool_hints": {"nots": {"x": "y"}},
    }
    assert problems_of(raw) == [
        "providers.openai.read_timout: unknown key; did you mean 'read_timeout'?",
        "mcpServers.notes.arg: unknown key; did you mean 'args'?",
        "models.fast.provider: 'opena' is not one of providers openai",
        "tool_sets.t.servers: unknown server 'note'; servers are notes",
        "tool_hints: unknown server 'nots'; servers are notes",
    ]


def test_unset_variables_anywhere_are_warnings_that_say_what_they_leave_empty() -> None:
    raw = {
        "providers": {"openai": {"api_key": "${OPENAI_API_KEY}"}},
        "mcpServers": {
            "gh": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}},
            "db": {"command": "x", "env": {"DB_PASSWORD": "${DB_PASSWORD}"}},
        },
        "tool_discovery": {"semantic": {"model": "${SEARCH_MODEL}"}},
    }
    config = parse_config(raw, environ={})
    assert config_warnings(config) == [
        "providers.openai.api_key: environment variable OPENAI_API_KEY is not set; calls to provider 'openai' fail "
        "until it is set",
        "mcpServers.gh.headers.Authorization: environment variable GH_TOKEN is not set; server 'gh' gets its "
        "Authorization header without it",
        "mcpServers.db.env.DB_PASSWORD: environment variable DB_PASSWORD is not set; server 'db' gets DB_PASSWORD "
        "empty",
        "tool_discovery.semantic.model: environment variable SEARCH_MODEL is not set; the value is empty",
    ]
    # A config that fails still names its unset variables, so one run shows everything to fix.
    with pytest.raises(ConfigError) as caught:
        parse_config({**raw, "max_rounds": 0}, environ={})
    assert len(caught.value.warnings) == 4 and caught.value.problems[0].startswith("max_rounds: ")


def test_inherit_env_per_server_and_for_all() -> None:
    raw = {"mcp_inherit_env": ["AWS_*"], "mcpServers": {"a": {"command": "x", "inherit_env": ["GITHUB_TOKEN"]}}}
    config = parse_config(raw, environ={})
    assert config.mcp_inherit_env == ["AWS_*"] and config.mcp_servers["a"].inherit_env == ["GITHUB_TOKEN"]


@pytest.mark.parametrize(
    ("text", "where", "hint"),
    [
        ('{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}', "line 4 column 3",
         "a comma after the last item (line 3): JSON allows none; remove it"),
        ('{\n  // my servers\n  "mcpServers": {}\n}', "line 2 column 3", "a comment: JSON has none"),
        ("{'mcpServers': {}}", "line 1 column 2", "single quotes: JSON strings and keys take double quotes"),
        ('{\n  "a": 1\n  "b": 2\n}', "line 3 column 3", "a comma missing at the end of line 2, between two items"),
        ('{"api_docs": True}', "line 1 column 14", "JSON's literals are true, false and null, in lower case"),
        ("{mcpServers: {}}", "line 1 column 2", "a key without quotes: JSON keys take double quotes"),
        ("", "line 1 column 1", "the file is empty"),
        ('{"cwd": "C:\\data"}', "line 1 column 12", "a backslash in a string: write it twice"),
    ],
)  # fmt: skip
def test_a_json_syntax_error_points_at_the_spot_with_its_usual_cause(
    tmp_path: Path, text: str, where: str, hint: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = caught.value.problems
    assert problems[0].startswith(f"{path}: invalid JSON at {where}: ")
    assert problems[-1].startswith(f"hint: {hint}"), problems
    if text.strip():
        line, caret = problems[1], problems[2]
        column = int(where.split()[-1])
        assert caret.index("^") - caret.index("|") - 2 == column - 1, "the caret is under the column"
        assert line.split("|", 1)[1][1:] == text.splitlines()[int(where.split()[1]) - 1].rstrip()


@pytest.mark.parametrize("ending", ["\n", "\n\n", "  \n", ""])
def test_a_file_missing_its_closing_brace_after_editing_says_so_with_a_caret(tmp_path: Path, ending: str) -> None:
    """The usual state after editing: the last brace gone, a line break left. It is a syntax error like the others
    (exit 2 with a caret under the end of the last line), never a traceback."""
    path = tmp_path / "config.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": "x"}\n  }' + ending)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    problems = caught.value.problems
    assert problems[0].startswith(f"{path}: invalid JSON at the end of the file: ")
    assert problems[1] == '    4 |   }' and problems[2].index("^") - problems[2].index("|") - 2 == 3
    assert problems[-1] == "hint: the file ends too early: a closing } or ] is missing"


def test_a_byte_order_mark_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"mcpServers": {}}).encode())
    assert load_config(path).mcp_servers == {}


def test_the_bundled_config_uses_the_current_spelling() -> None:
    raw = json.loads((ROOT / "config.json").read_text())
    assert "defer_all" not in raw["tool_discovery"] and raw["tool_discovery"]["defer"] == "auto"
