"""Enrichment kept for search: what a tool is shown to the model as, and the cache on disk of what it answered.

Authors describe a tool for a reader who has already found it; users and models search by need ("turn this into
a PDF", "what is AAPL at"). `toolsift enrich` (or `tool_discovery.enrich` in the background) asks the configured
model, per deferred tool, for a one-line purpose and a few search phrasings; the index reads them as a field of
their own, and meaning search as a second vector. The cache is keyed by the tool's text as the model was shown it
and by the model, like the vector cache: a restart asks nothing again, a catalog change asks only about the tools
whose text changed, and it is written after each batch, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Protocol

from app.common.redaction import redact
from app.core.catalog import ToolEntry
from app.discovery.enrichment_answer import Enrichment, check

log = logging.getLogger("toolsift.enrich")
BRIEF_DESCRIPTION_CHARS = 1000  # of a tool's description the model is shown: what it does is said early
BRIEF_PARAMETERS = 24  # parameter names shown
MAX_CACHE_BYTES = 64 * 1024 * 1024  # a cache file past this is not read (about 100,000 tools)


class Enrichments(Protocol):
    """What an index reads: a tool's enrichment, if it has one."""

    def find(self, entry: ToolEntry) -> Enrichment | None: ...


def tool_brief(entry: ToolEntry) -> dict[str, Any]:
    """A tool as the model is shown it: its exposed name, its description (bounded) and its parameters' names,
    redacted. Nothing else of it (parameter descriptions, schemas, the server's settings) leaves the gateway."""
    properties = entry.parameters.get("properties")
    names = [str(name)[:64] for name in properties][:BRIEF_PARAMETERS] if isinstance(properties, dict) else []
    brief: dict[str, Any] = {
        "name": entry.name,
        "description": redact(" ".join(entry.description.split())[:BRIEF_DESCRIPTION_CHARS]),
        "parameters": [redact(name) for name in names],
    }
    return brief


def brief_text(entry: ToolEntry) -> str:
    """The tool's brief as one line of JSON: what is sent, and what the cache is keyed by."""
    return json.dumps(tool_brief(entry), ensure_ascii=False, separators=(",", ":"))


def cache_key(model_key: str, text: str) -> str:
    return hashlib.sha256(f"{model_key}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


class EnrichmentCache:
    """Enrichments by (model, tool text) hash, in one file per model: a header line naming the model, then one
    JSON line per tool. A batch's answers are appended (a catalog of 10,000 tools is not rewritten 700 times), a
    torn last line is skipped on reading, and a file holding more superseded lines than live ones is rewritten.
    Index builds in the worker pool read it while a run adds to it, so every access holds a lock."""

    def __init__(self, directory: Path | None, model_key: str) -> None:
        self.model_key = model_key
        name = hashlib.sha256(model_key.encode()).hexdigest()[:16]
        self.path = directory / f"{name}.jsonl" if directory is not None else None
        self.generation = 0  # counts additions: an index built at an older generation may lack some
        self._lock = threading.Lock()
        self._found: dict[str, Enrichment] = {}
        self._unsaved: dict[str, Enrichment] = {}
        self._rewrite = True  # the file is missing, foreign or stale: the next save writes it whole

    def __len__(self) -> int:
        return len(self._found)

    def key(self, entry: ToolEntry) -> str:
        return cache_key(self.model_key, brief_text(entry))

    def find(self, entry: ToolEntry) -> Enrichment | None:
        with self._lock:
            return self._found.get(self.key(entry)) if self._found else None

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self._found

    def put(self, found: dict[str, Enrichment]) -> None:
        """Add enrichments by cache key (written at the next `save`)."""
        with self._lock:
            self._found.update(found)
            self._unsaved.update(found)
            self.generation += 1

    def load(self) -> None:
        """Read the file (blocking); a damaged or foreign one costs asking again, never a failed start."""
        if self.path is None or not self.path.is_file():
            return
        try:
            if self.path.stat().st_size > MAX_CACHE_BYTES:
                raise ValueError(f"larger than {MAX_CACHE_BYTES >> 20} MB")
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
            header = json.loads(lines[0]) if lines else None
            if not isinstance(header, dict) or header.get("model") != self.model_key:
                raise ValueError("not written for this model")
        except (OSError, ValueError) as exc:
            log.warning("enrichment: ignoring unreadable cache %s: %s", self.path, exc)
            return
        found = dict(filter(None, map(_line, lines[1:])))
        with self._lock:
            self._found.update(found)
            self.generation += 1
            self._rewrite = len(lines) - 1 > 2 * len(found)

    def save(self) -> None:
        """Write what was added since the last save (blocking): a run interrupted between batches resumes after
        the last one it saved."""
        with self._lock:
            rewrite, self._rewrite = self._rewrite, False
            lines = [_entry_line(key, found) for key, found in (self._found if rewrite else self._unsaved).items()]
            self._unsaved = {}
        if self.path is None or not (lines or rewrite):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not rewrite:
                with self.path.open("a", encoding="utf-8") as tail:
                    tail.write("".join(lines))
                return
            header = json.dumps({"model": self.model_key}) + "\n"
            with tempfile.NamedTemporaryFile("w", dir=self.path.parent, suffix=".jsonl", delete=False) as out:
                out.write(header + "".join(lines))
            os.replace(out.name, self.path)
        except OSError as exc:
            log.warning("enrichment: cannot write the cache %s: %s", self.path, exc)


def _entry_line(key: str, found: Enrichment) -> str:
    return json.dumps({"key": key, **found.as_json()}, ensure_ascii=False) + "\n"


def _line(line: str) -> tuple[str, Enrichment] | None:
    """One cached tool, checked as the model's answer was (the file is anyone's to edit), or None."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    key = value.get("key") if isinstance(value, dict) else None
    checked = check(value)
    return (key, checked) if isinstance(key, str) and isinstance(checked, Enrichment) else None
