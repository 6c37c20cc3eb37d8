"""Hybrid search without its model: a model that is missing or broken leaves keyword search, said once in the log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.discovery import models
from app.discovery.search import Discovery
from tests.e2e.discovery.test_semantic import catalog_entries, discovery_for, groups_of, names, semantic


def test_missing_or_broken_model_leaves_keyword_search(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    entries = catalog_entries()
    lexical = Discovery.build(groups_of(entries))
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in models.MODEL_FILES:
        (broken / name).write_text("not a model")
    for model in (tmp_path / "nowhere", broken):
        search = semantic(tmp_path / "cache", model, enabled=True)
        with caplog.at_level(logging.WARNING, logger="toolsift.semantic"):
            assert search.load() is False
        assert search.state == "unavailable"
        discovery = discovery_for(entries, search)
        assert names(discovery, "weather alerts", search) == names(lexical, "weather alerts")
    assert "keyword search only" in caplog.text
    assert "not found" in caplog.text and "cannot read the model" in caplog.text
