"""`toolsift enrich`'s own parts: the model it needs named before anything starts, and its progress, a bar redrawn
in place on a terminal and a plain line per batch otherwise."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.cli import main
from app.cli.enrich import progress_printer, summary
from app.engine.enrichment import Outcome, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_model_must_be_named_and_routable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.json"
    providers = {"up": {}, "other": {}}  # two: no default provider takes unknown names
    path.write_text(json.dumps({"providers": providers, "models": {"fast": {"provider": "up", "model": "m"}}}))
    assert main(["enrich", "--config", str(path)]) == 2
    assert "--model ALIAS, or tool_discovery.enrich.model" in capsys.readouterr().err
    assert main(["enrich", "--config", str(path), "--model", "slow"]) == 2
    assert "'slow' is not a model alias of this config (models: fast)" in capsys.readouterr().err
    assert main(["enrich", "--config", str(path), "--model", "fast", "--batch-size", "51"]) == 2
    with pytest.raises(SystemExit):
        main(["enrich", "--config", str(path), "--max-tokens", "0"])


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    show = progress_printer(2)
    show(Progress(10, 15, 1234, 10))
    show(Progress(15, 15, 2000, 14))
    assert terminal.getvalue().startswith("\renriching [####################----------] 10/15 tools, 10 enriched")
    assert (
        "\renriching [##############################] 15/15 tools, 14 enriched, 2,000 tokens\033[K"
        in terminal.getvalue()
    )
    assert summary(Outcome(enriched=14, calls=3, tokens=2000, skipped={"a": "why"})) == 1

    plain = io.StringIO()
    monkeypatch.setattr("sys.stderr", plain)
    progress_printer(2)(Progress(10, 15, 1234, 10))
    assert plain.getvalue() == "enriched batch 1/2: 10/15 tools, 10 enriched, 1,234 tokens\n"
    assert summary(Outcome(enriched=15, calls=2, tokens=2000)) == 0
