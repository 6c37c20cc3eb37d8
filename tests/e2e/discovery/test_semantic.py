"""Hybrid search: the local model, the vector cache, the embeddings endpoint, fallbacks and weak matches."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
from fastmcp import Client

from app.config import SemanticConfig, parse_config
from app.core.catalog import ToolEntry
from app.discovery import models
from app.discovery.embeddings import EmbeddingError, EndpointEmbedder
from app.discovery.manifest import ManifestGroup
from app.discovery.search import Discovery, run_search, scored_tools
from app.discovery.semantic import SemanticSearch
from app.mcp.client.catalog_build import build_catalog
from tests.support import (
    GatewayFactory,
    Upstream,
    chat_body,
    completion,
    engine_request,
    load_example,
    make_config,
)

TOOLS = {
    "weather": [
        ("get_alerts", "Get active severe-weather alerts for a region or city."),
        ("get_forecast", "Get a daily weather forecast for a city."),
    ],
    "files": [
        ("create_directory", "Create a new folder at the given path, with parents."),
        ("read_file", "Read the contents of a text file."),
    ],
    "calendar": [
        ("delete_event", "Remove an event from a calendar by its id."),
        ("create_event", "Add an event with a title, start and end time."),
    ],
}


def catalog_entries(tools: dict[str, list[tuple[str, str]]] = TOOLS) -> list[ToolEntry]:
    listings = {
        server: [SimpleNamespace(name=n, description=d, input_schema={}, meta=None, title=None) for n, d in items]
        for server, items in tools.items()
    }
    config = parse_config({"mcpServers": {s: {"command": "unused", "defer_loading": True} for s in tools}}, environ={})
    return list(build_catalog(config, listings, version=1).tools.values())


@pytest.fixture(scope="session")
def model_dir() -> Path:
    found = models.find_model(models.DEFAULT_MODEL)
    if found is None:
        pytest.skip("all-MiniLM-L6-v2 is not installed (make install puts it in .venv)")
    return found


def semantic(cache_dir: Path, model: str | Path, **options: Any) -> SemanticSearch:
    return SemanticSearch(SemanticConfig(model=str(model), cache_dir=str(cache_dir), **options))


def groups_of(entries: list[ToolEntry]) -> list[ManifestGroup]:
    by_server: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        by_server.setdefault(entry.server or "", []).append(entry)
    return [ManifestGroup(name, "", tools) for name, tools in by_server.items()]


def discovery_for(entries: list[ToolEntry], search: SemanticSearch) -> Discovery:
    return Discovery.build(groups_of(entries), semantic=search)


def names(discovery: Discovery, query: str, search: SemanticSearch | None = None) -> list[str]:
    if search is not None:
        search.prepare_now(query)
    return [found.entry.name for found in scored_tools(discovery, query, None, 3)]


def test_meaning_finds_tools_whose_words_the_query_does_not_use(model_dir: Path, tmp_path: Path) -> None:
    entries = catalog_entries()
    search = semantic(tmp_path, model_dir)
    search.ensure_now(entries)
    discovery = discovery_for(entries, search)
    assert names(discovery, "storm warnings", search)[0] == "weather__get_alerts"
    assert names(discovery, "mkdir", search)[0] == "files__create_directory"
    assert names(discovery, "cancel appointment", search)[0] == "calendar__delete_event"


async def test_the_first_result_is_the_sibling_that_does_what_was_asked(model_dir: Path, tmp_path: Path) -> None:
    """On the demo, textkit's tools all act on a text: a short query's object word matches them alike, and what
    sets each apart from its siblings decides which comes first."""
    listings: dict[str, Any] = {}
    for server in ("weather", "notes", "calendar_server", "finance", "textkit"):
        async with Client(load_example(server).mcp) as client:
            listings[server] = await client.list_tools()
    config = parse_config({"mcpServers": {s: {"command": "x", "defer_loading": True} for s in listings}}, environ={})
    entries = list(build_catalog(config, listings, version=1).tools.values())
    search = semantic(tmp_path, model_dir)
    search.ensure_now(entries)
    discovery = discovery_for(entries, search)
    assert names(discovery, "sha256 of a string", search)[0] == "textkit__hash_text"
    search.params = replace(search.params, sibling_contrast=0.0)
    assert names(discovery, "sha256 of a string", search)[0] == "textkit__base64_encode", "without the contrast"


def test_a_restart_embeds_nothing_and_a_change_embeds_only_what_changed(model_dir: Path, tmp_path: Path) -> None:
    entries = catalog_entries()
    first = semantic(tmp_path, model_dir)
    first.ensure_now(entries)
    assert first.encoder_calls == len(entries)

    restarted = semantic(tmp_path, model_dir)
    restarted.ensure_now(entries)
    assert restarted.encoder_calls == 0
    assert restarted.matrix(discovery_for(entries, restarted).index.parts[0]) is not None

    changed = {**TOOLS, "files": [("create_directory", "Make a folder."), TOOLS["files"][1]]}
    after_change = semantic(tmp_path, model_dir)
    after_change.ensure_now(catalog_entries(changed))
    assert after_change.encoder_calls == 1


def test_a_search_with_no_keyword_match_offers_weak_matches(model_dir: Path, tmp_path: Path) -> None:
    entries = catalog_entries()
    search = semantic(tmp_path, model_dir)
    search.ensure_now(entries)
    discovery = discovery_for(entries, search)
    search.prepare_now("storm warnings")
    outcome = run_search({"query": "storm warnings"}, discovery, lambda name: False, 3)
    assert outcome.text.startswith("No tool matches the words of 'storm warnings'")
    assert "weak matches" in outcome.text
    assert outcome.found[0].name == "weather__get_alerts"

    lexical_only = run_search({"query": "storm warnings"}, Discovery.build(groups_of(entries)), lambda n: False, 3)
    assert lexical_only.text.startswith("No tools found matching")


class _Embeddings(BaseHTTPRequestHandler):
    """A scripted `/v1/embeddings`: each request pops the next planned answer ("ok", a status, or "bad")."""

    plan: ClassVar[list[str]] = []
    batches: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.batches.append(len(body["input"]))
        step = self.plan.pop(0) if self.plan else "ok"
        if step.isdigit():
            self._send(int(step), {"error": {"message": "try later"}})
        elif step == "bad":
            self._send(200, {"data": [{"index": 0, "embedding": [1.0, 0.0]}]})
        else:
            data = [{"index": i, "embedding": [float(len(text)), 1.0, 0.5]} for i, text in enumerate(body["input"])]
            self._send(200, {"object": "list", "data": data})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    _Embeddings.plan, _Embeddings.batches = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_endpoint_backend_batches_retries_and_refuses_bad_answers(embeddings_server: str) -> None:
    backend = EndpointEmbedder(embeddings_server, "embed-test", batch_size=2, max_retries=2, retry_base_delay=0.01)
    _Embeddings.plan = ["503", "ok", "ok", "ok"]
    vectors = backend.embed(["a", "bb", "ccc", "dddd", "eeeee"])
    assert vectors.shape == (5, 3)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert _Embeddings.batches == [2, 2, 2, 1]  # the first batch again after the 503

    _Embeddings.plan = ["bad"]
    with pytest.raises(EmbeddingError, match="wrong shape"):
        backend.embed(["one", "two"])
    _Embeddings.plan = ["500", "500", "500"]
    with pytest.raises(EmbeddingError, match="after 3 attempts"):
        backend.embed(["x"])
    _Embeddings.plan = ["401"]
    with pytest.raises(EmbeddingError, match="401"):
        backend.embed(["x"])


def test_an_endpoint_that_fails_leaves_keyword_search(embeddings_server: str, tmp_path: Path) -> None:
    entries = catalog_entries()
    config = SemanticConfig(
        endpoint={"base_url": embeddings_server, "model": "embed-test", "max_retries": 0}, cache_dir=str(tmp_path)
    )
    search = SemanticSearch(config)
    assert search.load()
    _Embeddings.plan = ["bad"]
    with pytest.raises(EmbeddingError):
        search.ensure_now(entries)
    discovery = discovery_for(entries, search)
    assert names(discovery, "weather alerts") == names(Discovery.build(groups_of(entries)), "weather alerts")


class _Hub(BaseHTTPRequestHandler):
    files: ClassVar[dict[str, bytes]] = {}

    def do_GET(self) -> None:
        name = self.path.rsplit("/", 1)[-1]
        if not self.path.startswith("/acme/tiny-model/resolve/main/") or name not in self.files:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("content-length", str(len(self.files[name])))
        self.end_headers()
        self.wfile.write(self.files[name])

    def log_message(self, *args: Any) -> None:
        pass


def test_models_pull_fetches_once_from_a_hub_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSIFT_HOME", str(tmp_path))
    _Hub.files = {name: f"contents of {name}".encode() for name in models.MODEL_FILES}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hub = f"http://127.0.0.1:{server.server_address[1]}"
        assert models.find_model("acme/tiny-model") is None
        path = models.pull("acme/tiny-model", hub)
        assert models.find_model("acme/tiny-model") == path
        assert (path / "tokenizer.json").read_bytes() == b"contents of tokenizer.json"
        with pytest.raises(OSError, match="404"):
            models.pull("acme/missing-model", hub)
        assert models.find_model("acme/missing-model") is None
    finally:
        server.shutdown()


async def test_the_gateway_serves_keywords_first_then_finds_by_meaning(
    model_dir: Path, tmp_path: Path, gateway_factory: GatewayFactory, upstream: Upstream
) -> None:
    """Through the chat loop: the model searches "write down a reminder" (keyword search finds nothing); once the
    background embedding is done, the search answers with notes__create_note, as a weak match."""
    semantic_config = {"model": str(model_dir), "cache_dir": str(tmp_path)}
    client, gateway = await gateway_factory(make_config(tool_discovery={"semantic": semantic_config}))
    for _ in range(1200):  # a generous bound: 27 tools embed in about a second on an idle 2-core machine
        search = (await client.get("/healthz")).json()["search"]
        if search["mode"] == "hybrid":
            break
        assert search["mode"] == "embedding"  # keyword search serves while the tools are embedded
        await asyncio.sleep(0.1)
    assert search["mode"] == "hybrid" and search["pending"] == 0, search
    deferred = [entry for entry in gateway.mcp.catalog.tools.values() if entry.deferred]
    assert gateway.semantic.encoder_calls == len(deferred)  # embedded at start-up, before any request
    upstream.script(
        completion(calls=[("search_tools", {"query": "write down a reminder"})]),
        completion("done"),
    )
    response = await client.post("/v1/chat/completions", json=chat_body("remember this idea for me"))
    assert response.status_code == 200
    result = upstream.requests[1]["messages"][-1]["content"]
    assert "weak matches" in result
    assert "notes__create_note" in upstream.tool_names(1)


def test_a_clients_own_tools_are_ranked_by_keywords_and_never_embedded(model_dir: Path, tmp_path: Path) -> None:
    from app.core.catalog import client_entries

    entries = catalog_entries()
    search = semantic(tmp_path, model_dir)
    search.ensure_now(entries)
    calls = search.encoder_calls
    request = engine_request(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [
                {
                    "type": "function",
                    "defer_loading": True,
                    "function": {"name": "send_invoice", "description": "Email an invoice PDF to a customer."},
                }
            ],
        }
    )
    group = ManifestGroup("client", "Tools of the calling application", client_entries(request.tools, {}))
    merged = discovery_for(entries, search).with_group(group)
    assert names(merged, "send the invoice to a customer", search)[0] == "send_invoice"
    assert names(merged, "storm warnings", search)[0] == "weather__get_alerts"  # still hybrid for the catalog
    assert search.encoder_calls == calls  # the client's tool was not embedded
