"""`make demo` answering Codex CLI itself, set up as docs/fronts-and-clients.md says: a prompt that needs a deferred
demo tool is searched, run and answered, and a command to run goes to Codex's own shell tool (`exec_command`), which
runs it."""

from __future__ import annotations

from pathlib import Path

from app.demo.model import LABEL
from tests.support.codex import builtin_config, run_codex

COMPACTING_MODEL = "gpt-5.1-codex"  # a model Codex compacts remotely for (a Responses API feature)


def run(demo: str, prompt: str, tmp_path: Path, model: str = "fast") -> tuple[str, Path]:
    workdir = tmp_path / "work"
    workdir.mkdir()
    finished = run_codex(prompt, f"{demo}/v1", model, workdir, tmp_path / "codex-home")
    assert finished.returncode == 0, finished.stderr[-3000:]
    return finished.stdout, workdir


def test_codex_gets_a_deferred_demo_tools_result(demo: str, tmp_path: Path) -> None:
    answer, _ = run(demo, "Convert 250 USD to EUR.", tmp_path)
    assert answer.startswith(LABEL) and "I searched the tools" in answer
    assert "finance__convert_currency" in answer and "219.25" in answer


def test_codex_runs_the_command_the_demo_gives_its_shell_tool(demo: str, tmp_path: Path) -> None:
    prompt = "Run `echo hello from the demo > hello.txt && cat hello.txt` in the shell."
    answer, workdir = run(demo, prompt, tmp_path, model="gpt-5.5")
    assert (workdir / "hello.txt").read_text() == "hello from the demo\n"
    assert "`exec_command`" in answer and "hello from the demo" in answer


def test_codex_on_its_builtin_provider_compacts_and_finishes(demo: str, tmp_path: Path) -> None:
    """Codex's own `openai` provider pointed at the gateway: its WebSocket attempt is answered 426 and it falls back
    to HTTP at once (no reconnects); a compaction limit the long command output crosses makes it compact mid-task
    (`compaction_trigger`), and it finishes from the demo model's summary, with both results."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    settings = "model_auto_compact_token_limit = 12000\n"  # crossed by the long output, not by the summary
    config = builtin_config(f"{demo}/v1", COMPACTING_MODEL, settings)
    prompt = "Run `seq 1 4000` in the shell and run `echo hi` in the shell."
    finished = run_codex(prompt, f"{demo}/v1", COMPACTING_MODEL, workdir, tmp_path / "codex-home", config=config)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "context compacted" in finished.stderr, finished.stderr[-3000:]
    assert "Reconnecting" not in finished.stderr, "a 426 makes Codex fall back to HTTP at once"
    answer = finished.stdout
    assert '`exec_command` with {"cmd": "seq 1 4000"}' in answer and "Output: hi" in answer, answer
