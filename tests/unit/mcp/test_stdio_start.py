"""What a stdio server gets (its environment, where it starts) and the cause named when it cannot start."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.config import McpServerConfig
from app.mcp.client.stdio import STANDARD_ENV, server_cwd, server_environment, start_problem

GATEWAY_ENV = {
    "PATH": "/usr/bin",
    "SSL_CERT_FILE": "/etc/corp-ca.pem",
    "REQUESTS_CA_BUNDLE": "/etc/corp-ca.pem",
    "NODE_EXTRA_CA_CERTS": "/etc/corp-ca.pem",
    "HTTPS_PROXY": "http://proxy:3128",
    "https_proxy": "http://proxy:3128",
    "NO_PROXY": "localhost",
    "OPENAI_API_KEY": "sk-gateway-secret",
    "AWS_PROFILE": "dev",
    "AWS_REGION": "eu-west-1",
    "GITHUB_TOKEN": "ghp-secret",
}


def server(**fields: object) -> McpServerConfig:
    return McpServerConfig.model_validate({"command": "python", **fields})


def test_tls_and_proxy_variables_reach_a_server_and_the_gateways_secrets_do_not() -> None:
    env = server_environment(server(env={"OWN": "1"}), [], GATEWAY_ENV)
    assert env["PATH"] == os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin"])
    assert {
        name: env[name] for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
    } == dict.fromkeys(("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"), "/etc/corp-ca.pem")
    assert env["HTTPS_PROXY"] == env["https_proxy"] == "http://proxy:3128" and env["NO_PROXY"] == "localhost"
    assert env["OWN"] == "1"
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_PROFILE"} & set(env)
    assert {"SSL_CERT_DIR", "CURL_CA_BUNDLE", "HTTP_PROXY", "ALL_PROXY", "no_proxy", "all_proxy"} <= set(STANDARD_ENV)


def test_inherit_env_adds_names_and_patterns_and_env_wins() -> None:
    config = server(inherit_env=["GITHUB_TOKEN"], env={"AWS_REGION": "us-east-1", "HTTPS_PROXY": ""})
    env = server_environment(config, ["AWS_*"], GATEWAY_ENV)
    assert env["GITHUB_TOKEN"] == "ghp-secret" and env["AWS_PROFILE"] == "dev"
    assert env["AWS_REGION"] == "us-east-1", "the server's own env wins"
    assert env["HTTPS_PROXY"] == "", "an empty value in env takes a standard variable away"
    assert "OPENAI_API_KEY" not in env


def test_a_server_starts_in_the_configs_folder_or_its_cwd_relative_to_it(tmp_path: Path) -> None:
    assert server_cwd(server(), tmp_path) == tmp_path
    assert server_cwd(server(cwd="sub"), tmp_path) == tmp_path / "sub"
    assert server_cwd(server(cwd="/srv"), tmp_path) == Path("/srv")


def test_the_cause_of_a_start_that_cannot_work(tmp_path: Path) -> None:
    (tmp_path / "servers").mkdir()
    (tmp_path / "servers" / "weather.py").write_text("")
    assert start_problem(server(args=["servers/weather.py"]), tmp_path) is None
    assert start_problem(server(args=["servers/wether.py"]), tmp_path) == (
        f"file not found: 'servers/wether.py' is {tmp_path / 'servers' / 'wether.py'} (a relative path starts in "
        f"the server's cwd, {tmp_path})"
    )
    assert start_problem(server(command="toolsift-no-such-command"), tmp_path) == (
        "command 'toolsift-no-such-command' not found on the server's PATH"
    )
    missing_uvx = McpServerConfig.model_validate({"command": "uvx", "args": ["x"], "env": {"PATH": str(tmp_path)}})
    assert (
        start_problem(missing_uvx, tmp_path)
        == "command 'uvx' not found on the server's PATH (install uv (it provides uvx))"
    )
    assert start_problem(server(command="./bin/server"), tmp_path) == (
        f"command './bin/server' not found: {tmp_path / 'bin' / 'server'} does not exist"
    )
    assert start_problem(server(args=["x.py"], cwd="nowhere"), tmp_path) == f"cwd {tmp_path / 'nowhere'} does not exist"


def test_a_command_not_found_gets_the_closest_name_on_its_path(tmp_path: Path) -> None:
    """The gateway's own environment (`.venv/bin`) comes first on a server's PATH, so a server `make install` put
    there is suggested for a typo, with where it is."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    for name in ("mcp-server-time", "mcp-server-git"):
        (bin_folder / name).write_text("#!/bin/sh\n")
        (bin_folder / name).chmod(0o755)
    typo = McpServerConfig.model_validate({"command": "mcp-server-tme", "env": {"PATH": str(bin_folder)}})
    assert start_problem(typo, tmp_path) == (
        f"command 'mcp-server-tme' not found on the server's PATH; did you mean 'mcp-server-time' "
        f"({bin_folder / 'mcp-server-time'})?"
    )
    unlike = McpServerConfig.model_validate({"command": "weather-server", "env": {"PATH": str(bin_folder)}})
    assert start_problem(unlike, tmp_path) == "command 'weather-server' not found on the server's PATH"


def test_arguments_that_are_not_script_files_are_not_taken_for_one(tmp_path: Path) -> None:
    for args in (["-m", "mcp_server_time"], ["-X", "utf8", "-c", "print(1)"], ["--port", "8080"]):
        assert start_problem(server(args=args), tmp_path) is None, args
    npx = McpServerConfig.model_validate({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]})
    problem = start_problem(npx, tmp_path)
    assert problem is None or problem.startswith("command 'npx' not found"), "a package name is no file"
