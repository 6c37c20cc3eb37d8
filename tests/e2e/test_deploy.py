"""The deployment files checked by the programs that read them: haproxy parses the scale profile's balancer config,
and `make` plans what compose's demo profile runs. They run processes, so they are end-to-end tests; the files'
contents are checked in process by tests/unit/test_compose_scale.py and tests/unit/test_packaging.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib

import pytest
import yaml

from tests.support import ROOT
from tests.unit.test_packaging import _extras

HAPROXY = ROOT / "deploy" / "haproxy.cfg"


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="needs haproxy to check its config file")
def test_haproxy_accepts_the_config() -> None:
    checked = subprocess.run(["haproxy", "-c", "-f", str(HAPROXY)], capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_compose_demo_profile_runs_what_make_demo_runs() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    service = compose["services"]["demo"]
    assert service["profiles"] == ["demo"]
    variables = ["CONFIG=config.json", "HOST=0.0.0.0", "PORT=8000"]
    planned = subprocess.run(["make", "-n", "demo", *variables], cwd=ROOT, capture_output=True, text=True, check=True)
    (line,) = [line for line in planned.stdout.splitlines() if "toolsift demo" in line]
    assert ["toolsift", *line.split()[1:]] == service["command"]
    assert service["ports"] == compose["services"]["toolsift"]["ports"]
    real = compose["services"]["toolsift"]  # `docker compose up` stays the real gateway
    assert "profiles" not in real and "command" not in real
    run = subprocess.run(["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "toolsift serve" in run and "toolsift demo" not in run


def test_make_install_is_what_running_needs_and_make_dev_adds_the_dev_extra() -> None:
    makefile = (ROOT / "Makefile").read_text()
    planned = subprocess.run(["make", "-n", "-B", "install"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "'.[tokens,otel]'" in planned.stdout and "dev]" not in planned.stdout
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    dev = re.search(r"^\$\(DEV_STAMP\): \$\(STAMP\)\n((?:\t.*\n)+)", makefile, re.M)
    assert dev and _extras(dev.group(1)) == set(extras), "make dev: the runtime extras and dev, on top of install"
    for target in ("test", "test-unit", "lint", "typecheck", "check-clients", "clients", "bench"):
        prerequisites = re.search(rf"^{target}:(.*)$", makefile, re.M)
        assert prerequisites and "dev" in prerequisites.group(1).split(), f"make {target} needs the dev tools"
    for target in ("run", "demo"):
        assert re.search(rf"^{target}: install$", makefile, re.M), f"make {target} needs no dev tools"
