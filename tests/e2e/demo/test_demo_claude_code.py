"""`make demo` answering Claude Code itself, set up as the docs' "Claude Code" part says (its `export` lines are
read from docs/fronts-and-clients.md): a prompt that needs a deferred demo tool is searched, run and answered, and
a command to run goes to Claude Code's own Bash tool, which runs it."""

from __future__ import annotations

import re
from pathlib import Path

from app.demo.model import LABEL
from tests.support import ROOT
from tests.support.claude_code import run_claude


def readme_settings(base_url: str) -> dict[str, str]:
    """The docs' environment for Claude Code, pointed at `base_url` instead of the default port."""
    readme = (ROOT / "docs" / "fronts-and-clients.md").read_text()
    part = readme[readme.index("**Claude Code.**") :]
    block = re.search(r"```sh\n(.*?)```", part, re.DOTALL)
    assert block is not None
    settings = dict(re.findall(r"^export (\w+)=(\S+)", block[1], re.MULTILINE))
    assert settings["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:8000"
    return {**settings, "ANTHROPIC_BASE_URL": base_url}


def test_claude_code_gets_a_deferred_demo_tools_result(demo: str, tmp_path: Path) -> None:
    result, _ = run_claude(demo, "Convert 250 USD to EUR.", tmp_path, env=readme_settings(demo))
    answer = result["result"]
    assert answer.startswith(LABEL) and "finance__convert_currency" in answer and "219.25" in answer


def test_claude_code_runs_the_command_the_demo_gives_its_bash_tool(demo: str, tmp_path: Path) -> None:
    prompt = "Run `echo hello from the demo > hello.txt && cat hello.txt` in the shell."
    result, work = run_claude(demo, prompt, tmp_path, env=readme_settings(demo))
    assert (work / "hello.txt").read_text() == "hello from the demo\n"
    assert "`Bash`" in result["result"] and "It returned: hello from the demo" in result["result"]


def test_claude_code_gets_one_run_of_a_demo_tool_around_its_own_bash_call(
    demo: str, demo_calls: Path, tmp_path: Path
) -> None:
    """The gateway converts, then hands Claude Code the shell command; Claude Code's next request carries only its
    own call and result, and the conversion is not run again (the server's own log counts it)."""
    before = _runs(demo_calls, "finance convert_currency")
    prompt = "Convert 250 USD to EUR and run `echo hi` in the shell."
    result, _ = run_claude(demo, prompt, tmp_path, env=readme_settings(demo))
    assert _runs(demo_calls, "finance convert_currency") == before + 1
    assert "219.25" in result["result"] and "It returned: hi" in result["result"]


def _runs(log: Path, line: str) -> int:
    return log.read_text().splitlines().count(line) if log.exists() else 0
