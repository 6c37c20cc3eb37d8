"""The admin API behind the console: admin keys only, OpenAI's error shape, and reports that tell the truth about
what the model gets (the manifest as sent upstream, its own search explained, the requests it made)."""

from __future__ import annotations

from typing import Any

import httpx

from app.engine.events import SearchDone
from app.engine.recent import summarize
from app.engine.record import RequestRecord
from tests.support import GatewayFactory, Upstream, chat_body, completion, make_config

USER, ADMIN = "key-user", "key-admin"
KEYED = {"api_keys": [USER], "admin_keys": [ADMIN]}


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def admin(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    response = await client.get(f"/admin/{path}", params=params, headers=bearer(ADMIN))
    assert response.status_code == 200, response.text
    return response.json()


async def test_admin_api_takes_admin_keys_only(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    for path in ("servers", "tools", "manifest", "search?query=note", "requests", "metrics"):
        anonymous = await client.get(f"/admin/{path}")
        assert anonymous.status_code == 401, path
        assert anonymous.headers["www-authenticate"] == "Bearer"
        assert anonymous.json()["error"]["code"] == "invalid_api_key"
        ordinary = await client.get(f"/admin/{path}", headers=bearer(USER))
        assert ordinary.status_code == 403, path
        error = ordinary.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert error["code"] == "admin_key_required" and "auth.admin_keys" in error["message"]
        assert (await client.get(f"/admin/{path}", headers=bearer(ADMIN))).status_code == 200, path
    # An admin key is no gateway key: the chat API still wants one of auth.api_keys.
    chat = await client.post("/v1/chat/completions", json=chat_body("hi"), headers=bearer(ADMIN))
    assert chat.status_code == 401


async def test_the_console_shell_holds_no_data_and_needs_no_key(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    page = await client.get("/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "convert_currency" not in page.text and "finance" not in page.text
    script = await client.get("/console/console.js")
    assert script.status_code == 200 and "sessionStorage" in script.text and "Bearer" in script.text
    assert (await client.get("/console/console.css")).status_code == 200


async def test_console_off_and_console_without_keys_off_loopback(gateway_factory: GatewayFactory) -> None:
    off, _ = await gateway_factory(make_config(auth=KEYED, console={"enabled": False}))
    for path in ("/console", "/admin/servers"):
        response = await off.get(path, headers=bearer(ADMIN))
        assert response.status_code == 404 and response.json()["error"]["code"] == "console_disabled"
    # The in-memory transport is no loopback connection: without keys, nothing is shown to it.
    open_client, _ = await gateway_factory(make_config())
    for path in ("/console", "/admin/tools"):
        response = await open_client.get(path)
        assert response.status_code == 404 and response.json()["error"]["code"] == "console_not_served"


async def test_servers_and_tools_with_their_status(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    servers = {server["name"]: server for server in (await admin(client, "servers"))["servers"]}
    assert servers["weather"]["state"] == "up" and servers["weather"]["deferred"] is False
    assert servers["finance"]["deferred"] is True and servers["finance"]["tools"] == 7
    assert set(servers["finance"]) >= {"transport", "error"}
    everything = await admin(client, "tools")
    status = {tool["name"]: tool["status"] for tool in everything["tools"]}
    assert status["weather__get_forecast"] == "loaded" and status["finance__convert_currency"] == "deferred"
    assert everything["tool_sets"] == ["money", "notes_only"]
    money = await admin(client, "tools", tool_set="money")
    assert [tool["name"] for tool in money["tools"]] == ["finance__convert_currency", "finance__get_exchange_rates"]
    unknown = await client.get("/admin/tools", params={"tool_set": "nope"}, headers=bearer(ADMIN))
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_tool_set"
    weather = await admin(client, "tools", server="weather")
    assert {tool["server"] for tool in weather["tools"]} == {"weather"}
    nope = await client.get("/admin/tools", params={"server": "nope"}, headers=bearer(ADMIN))
    assert nope.status_code == 400 and nope.json()["error"]["param"] == "server"
    assert "unknown server 'nope'; servers: weather, notes" in nope.json()["error"]["message"]


async def test_manifest_is_exactly_what_the_model_gets(gateway_factory: GatewayFactory, upstream: Upstream) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    manifest = await admin(client, "manifest")
    upstream.script(completion("hello"))
    await client.post("/v1/chat/completions", json=chat_body("hi"), headers=bearer(USER))
    sent = next(tool for tool in upstream.requests[0]["tools"] if tool["function"]["name"] == "search_tools")
    assert manifest["definition"] == sent
    assert manifest["description"] == sent["function"]["description"]
    assert manifest["deferred"] is True and 100 < manifest["tokens"] < 2000 and manifest["exact_tokens"] is True
    money = await admin(client, "manifest", tool_set="money")
    assert "get_exchange_rates" in money["description"] and "create_note" not in money["description"]


async def test_search_explains_each_score(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    found = await admin(client, "search", query="convert currency", k="3")
    assert found["mode"].startswith("keywords only")
    best = found["results"][0]
    assert best["name"] == "finance__convert_currency" and best["rank"] == 1 and len(found["results"]) <= 3
    assert best["score"] == best["lexical"] > 0 and best["semantic"] is None and 0 < best["match"] <= 1
    assert best["matched"]["name"] == ["convert", "currency"]
    assert "currency" in best["matched"]["description"] and best["weak"] is False
    assert "finance__convert_currency" in found["text"], "what search_tools answers the model"
    # The model's search covers deferred tools: weather's are loaded, which it says, ranking them as loaded.
    loaded = await admin(client, "search", query="weather forecast", server="weather")
    assert loaded["results"] == [] and loaded["text"].startswith("weather's tools are loaded, not deferred")
    assert loaded["loaded"] and {found["name"].split("__")[0] for found in loaded["loaded"]} == {"weather"}
    refused = await client.get("/admin/search", params={"query": "rain", "server": "nope"}, headers=bearer(ADMIN))
    assert refused.status_code == 400 and "servers you can search: notes, finance, textkit" in refused.text
    for params in ({"query": "x", "k": "0"}, {"query": "x", "k": "many"}, {}):
        bad = await client.get("/admin/search", params=params, headers=bearer(ADMIN))
        assert bad.status_code == 400 and bad.json()["error"]["param"] in ("k", "query")
    nothing = await admin(client, "search", query="xylophone")
    assert nothing["results"] == [] and nothing["text"].startswith("No tools found matching 'xylophone'")
    assert nothing["loaded"] == []


async def test_search_of_several_queries_is_one_call_explained_per_query(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED, max_queries_per_search=2))
    response = await client.get(
        "/admin/search", params=[("query", "convert currency"), ("query", "create note"), ("query", "slugify"),
                                 ("k", "2")], headers=bearer(ADMIN),
    )  # fmt: skip
    found = response.json()
    assert response.status_code == 200 and found["queries"] == ["convert currency", "create note"]
    assert [(hit["query"], hit["rank"]) for hit in found["results"]] == [
        ("convert currency", 1), ("convert currency", 2), ("create note", 1), ("create note", 2)
    ]  # fmt: skip
    assert found["results"][0]["name"] == "finance__convert_currency"
    assert found["results"][2]["name"] == "notes__create_note"
    assert found["text"].startswith("Found 4 tools for 2 queries:")
    assert "Not searched: 'slugify': one search_tools call runs at most 2 queries" in found["text"]


async def test_search_names_the_loaded_tools_that_answer_the_query(gateway_factory: GatewayFactory) -> None:
    # The model's search covers deferred tools only; weather's are loaded, so it finds nothing for "forecast"
    # and the operator is told which loaded tool the model already has for it.
    client, _ = await gateway_factory(make_config(auth=KEYED))
    found = await admin(client, "search", query="weather forecast")
    assert [hit["name"] for hit in found["loaded"]][:1] == ["weather__get_forecast"]
    assert found["loaded"][0]["rank"] == 1 and found["loaded"][0]["weak"] is False
    assert all(hit["server"] == "weather" for hit in found["loaded"])
    deferred = await admin(client, "search", query="convert currency")
    assert deferred["results"][0]["name"] == "finance__convert_currency" and deferred["loaded"] == []


async def test_recent_requests_mark_the_likely_misses(gateway_factory: GatewayFactory, upstream: Upstream) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    upstream.script(
        completion(calls=[("search_tools", {"query": "xylophone"})]),
        completion(calls=[("search_tools", {"query": "convert currency"})]),
        completion(calls=[("finance__convert_currency", {"amount": 10, "from_currency": "USD", "to_currency": "EUR"})]),
        completion("10 USD is about 9 EUR."),
        completion(calls=[("search_tools", {"query": "exchange rates"})]),
        completion("Rates found."),
    )
    first = await client.post("/v1/chat/completions", json=chat_body("convert 10 USD"), headers=bearer(USER))
    second = await client.post("/v1/chat/completions", json=chat_body("rates?"), headers=bearer(USER))
    assert first.status_code == second.status_code == 200
    recent = (await admin(client, "requests"))["requests"]
    assert [item["id"] for item in recent] == [second.headers["x-request-id"], first.headers["x-request-id"]]
    clean, missed = recent
    assert clean["likely_miss"] is False and clean["searches"][0]["miss"] == []
    assert clean["searches"][0]["found"][0] == "finance__get_exchange_rates"
    assert missed["likely_miss"] is True and missed["rounds"] == 4 and missed["status"] == 200
    assert missed["searches"][0] == {
        "query": "xylophone", "found": [], "weak": False, "miss": ["found nothing", "followed by another search"]
    }  # fmt: skip
    assert missed["searches"][1]["miss"] == [] and "finance__convert_currency" in missed["searches"][1]["found"]
    assert missed["tools_called"] == ["finance__convert_currency"] and missed["tokens_saved"] > 0
    assert (await admin(client, "requests", limit="1"))["requests"] == [clean]
    metrics = await admin(client, "metrics")
    assert metrics["requests"] == 2 and metrics["search_calls"] == 3 and metrics["rounds"] == 6
    assert metrics["mcp_calls"] == 1 and metrics["recent_likely_misses"] == 1 and metrics["tool_tokens_saved"] > 0


async def test_the_ring_keeps_the_last_requests(gateway_factory: GatewayFactory, upstream: Upstream) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED, console={"recent_requests": 2}))
    ids = []
    for _ in range(3):
        upstream.script(completion("ok"))
        ids.append((await client.post("/v1/chat/completions", json=chat_body("hi"), headers=bearer(USER))).headers)
    recent = (await admin(client, "requests"))["requests"]
    assert [item["id"] for item in recent] == [ids[2]["x-request-id"], ids[1]["x-request-id"]]


def test_a_search_of_weak_matches_only_is_a_likely_miss() -> None:

    record = RequestRecord()
    record.add(SearchDone("storm", ("weather__get_alerts",), weak=True))
    summary = summarize("req_1", 200, {"model": "fast"}, record, 12.5)
    assert summary["likely_miss"] is True and summary["searches"][0]["miss"] == ["weak matches only"]


async def test_recent_requests_are_bounded_and_redacted(gateway_factory: GatewayFactory, upstream: Upstream) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYED))
    upstream.script(
        completion(calls=[("search_tools", {"query": "key sk-test-secret " + "x" * 5000})]), completion("done")
    )
    body = {**chat_body("hi"), "model": "m" * 5000}
    assert (await client.post("/v1/chat/completions", json=body, headers=bearer(USER))).status_code == 200
    [recent] = (await admin(client, "requests"))["requests"]
    assert len(recent["model"]) < 200
    query = recent["searches"][0]["query"]
    assert len(query) <= 2000 and "sk-test-secret" not in query and "[redacted]" in query
