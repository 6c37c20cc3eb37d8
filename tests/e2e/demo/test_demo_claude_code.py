"""`make demo` answering Claude Code itself, set up as the README says: a prompt that needs a deferred demo tool is
searched, run and answered, and a command to run goes to Claude Code's own Bash tool, which runs it."""

from __future__ import annotations

from pathlib import Path

from app.demo.model import LABEL
from tests.support.claude_code import run_claude


def test_claude_code_gets_a_deferred_demo_tools_result(demo: str, tmp_path: Path) -> None:
    result, _ = run_claude(demo, "Convert 250 USD to EUR.", tmp_path)
    answer = result["result"]
    assert answer.startswith(LABEL) and "finance__convert_currency" in answer and "219.25" in answer


def test_claude_code_runs_the_command_the_demo_gives_its_bash_tool(demo: str, tmp_path: Path) -> None:
    result, work = run_claude(
        demo, "Run `echo hello from the demo > hello.txt && cat hello.txt` in the shell.", tmp_path
    )
    assert (work / "hello.txt").read_text() == "hello from the demo\n"
    assert "`Bash`" in result["result"] and "It returned: hello from the demo" in result["result"]
