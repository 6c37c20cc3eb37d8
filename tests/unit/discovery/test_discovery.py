"""Names, toolsets, the tokenizer, the manifest and every search_tools outcome, on in-memory catalogs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from app.common import tokens
from app.common.errors import RequestRefused
from app.core.catalog import Catalog, ToolEntry, exposed_name, select_mcp_tools
from app.discovery.cache import mcp_groups
from app.discovery.index import describe_locations, tokenize
from app.discovery.manifest import ManifestGroup, manifest_text
from app.discovery.search import Discovery, run_search
from app.mcp.client.catalog_build import build_catalog
from tests.support import make_config


def _tool(name: str, description: str, **properties: str) -> Any:
    schema = {
        "type": "object",
        "properties": {k: {"type": v} for k, v in properties.items()},
        "required": list(properties)[:1],
    }
    return SimpleNamespace(name=name, description=description, input_schema=schema, meta=None, title=None)


LISTINGS = {
    "weather": [_tool("get_forecast", "Forecast for a city", city="string")],
    "notes": [
        _tool("create_note", "Create a new note with a title and body", title="string", body="string"),
        _tool("delete_note", "Delete a note by id", note_id="string"),
        _tool("search_notes", "Full-text search across notes", text="string"),
    ],
    "finance": [
        _tool("convert_currency", "Convert an amount between currencies", amount="number", to_currency="string"),
        _tool("get_exchange_rates", "Exchange rates against a base currency", base="string"),
        _tool("calculate_loan_payment", "Monthly payment of an amortised loan", principal="number"),
    ],
    "textkit": [_tool(f"tool_{i}", f"Text utility number {i}") for i in range(12)],
}


def _catalog(**overrides: Any) -> Catalog:
    config = make_config(**overrides)
    return build_catalog(config, LISTINGS, version=1)


def _discovery(catalog: Catalog) -> Discovery:
    deferred = [entry for entry in catalog.tools.values() if entry.deferred]
    return Discovery.build(mcp_groups(catalog, deferred))


def _search(arguments: dict[str, Any], loaded: set[str] | None = None, limit: int = 5) -> tuple[str, list[str]]:
    outcome = run_search(arguments, _discovery(_catalog()), lambda n: n in (loaded or set()), limit, ["weather"])
    return outcome.text, [entry.name for entry in outcome.found]


def test_exposed_names_are_valid_unique_and_at_most_64_chars() -> None:
    taken: set[str] = set()
    assert exposed_name("my server", "do.thing/now", taken) == "my_server__do_thing_now"
    long_a = exposed_name("s" * 40, "a" * 40 + "x", taken)
    taken.add(long_a)
    long_b = exposed_name("s" * 40, "a" * 40 + "y", taken)
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    taken.add("a__b")
    assert exposed_name("a", "b", taken) != "a__b"
    assert all(c.isalnum() or c in "_-" for c in long_a + long_b)


def test_catalog_marks_deferral_and_always_load_meta() -> None:
    listings = {
        **LISTINGS,
        "notes": [SimpleNamespace(**{**vars(LISTINGS["notes"][0]), "meta": {"anthropic/alwaysLoad": True}})],
    }
    catalog = build_catalog(make_config(), listings, version=3)
    assert catalog.version == 3
    assert not catalog.tools["weather__get_forecast"].deferred
    assert catalog.tools["finance__convert_currency"].deferred
    assert not catalog.tools["notes__create_note"].deferred, "alwaysLoad keeps a tool of a deferred server loaded"


def test_tool_sets_true_list_exclude_false_and_errors() -> None:
    config = make_config(
        tool_sets={
            "a": {
                "servers": {
                    "weather": True,
                    "notes": {"exclude": ["delete_note"]},
                    "finance": ["convert_currency"],
                    "textkit": False,
                }
            },
            "bad": {"servers": {"notes": ["nope"]}},
        }
    )
    catalog = build_catalog(config, LISTINGS, version=1)
    names = [entry.name for entry in select_mcp_tools(catalog, config, "a")]
    assert names == ["weather__get_forecast", "notes__create_note", "notes__search_notes", "finance__convert_currency"]
    assert len(select_mcp_tools(catalog, config, None)) == 1 + 3 + 3 + 12
    with pytest.raises(RequestRefused, match=r"Unknown tool_set 'zzz'\. Available tool sets: a, bad"):
        select_mcp_tools(catalog, config, "zzz")
    with pytest.raises(RequestRefused, match="unknown tools of server 'notes': nope"):
        select_mcp_tools(catalog, config, "bad")


def test_tokenizer_splits_identifiers_and_stems() -> None:
    assert tokenize("getUserProfile") == tokenize("get_user_profiles") == ["user", "profil"], "get is a stop word"
    assert tokenize("github__list_pull-requests") == ["github", "list", "pull", "request"]
    assert (
        tokenize("Create the calendar events") == tokenize("creating calendar event") == ["creat", "calendar", "event"]
    )
    assert tokenize("HTTPServer parsing") == ["http", "server", "pars"]
    assert tokenize("天气预报") == ["天气", "气预", "预报"], "CJK runs index as character bigrams"


def test_paths_and_urls_in_a_query_become_the_words_tools_use() -> None:
    assert tokenize(describe_locations("save it to /root/markdown/report.md")) == tokenize(
        "save it to file path markdown md markdown report"
    ), "root says nothing about the task; the extension names a format"
    assert tokenize(describe_locations("open https://www.example.com/a?b=1 now")) == tokenize(
        "open url link web page example now"
    )
    assert describe_locations("version v1.2 of example.com") == "version v1.2 of example.com", "not files"
    assert "presentation" in describe_locations("write deck.pptx")


def test_a_query_naming_a_tool_beats_descriptions_that_repeat_its_words() -> None:
    listings = {
        "kit": [
            _tool("summarize_article", "Short version of a text", text="string"),
            _tool(
                "get_article",
                "An article by id with its summary, to summarize it or summarize its sections",
                id="string",
            ),
        ],
        "textkit": LISTINGS["textkit"],
    }
    servers = {name: {"command": "unused", "defer_loading": True} for name in listings}
    discovery = _discovery(build_catalog(make_config(mcpServers=servers, tool_sets={}), listings, version=1))
    outcome = run_search({"query": "summarize article"}, discovery, lambda name: False, 2, [])
    assert [entry.name for entry in outcome.found] == ["kit__summarize_article", "kit__get_article"]


def test_manifest_lists_every_tool_of_a_small_setup() -> None:
    description = _discovery(_catalog()).definition["function"]["description"]
    assert "- notes (3 tools): create_note, delete_note, search_notes" in description
    assert "- textkit (12 tools): tool_0, tool_1, tool_2, tool_3, tool_4, tool_5, " in description
    assert "weather" not in description.split("<manifest>")[1], "loaded servers are not in the manifest"


def _big_groups(servers: int, tools_each: int) -> list[ManifestGroup]:
    groups = []
    for s in range(servers):
        entries = [
            ToolEntry(
                f"srv{s}__op{t}", f"common_op_{t}" if t else f"rare_word_{s}_spectrograph", f"srv{s}", "d", {}, True
            )
            for t in range(tools_each)
        ]
        groups.append(
            ManifestGroup(f"srv{s}", f"Server number {s} that does many useful things for its users", entries)
        )
    return groups


def test_manifest_sheds_detail_to_stay_within_its_token_budget() -> None:
    groups = _big_groups(12, 20)
    discovery = Discovery.build(groups, manifest_max_tokens=1000)
    text = manifest_text(groups, 1000, discovery.index.name_distinctiveness)
    assert tokens.count_text(text) <= 1000
    assert "- srv0 (20 tools): rare_word_0_spectrograph" in text, "the most distinctive name comes first"
    assert "... and 15 more" in text
    tight = manifest_text(_big_groups(400, 3), 300)
    assert tokens.count_text(tight) <= 300
    assert tight.splitlines()[-1].startswith("... and ") and tight.splitlines()[-1].endswith(
        "search by keyword to reach their tools"
    )


def test_query_ranks_the_right_tool_first() -> None:
    text, found = _search({"query": "convert money between currencies"})
    assert found[0] == "finance__convert_currency"
    assert "amount (number, required)" in text and text.endswith("These tools are now loaded and available to call.")


def test_query_with_server_scope_and_limit() -> None:
    _, found = _search({"query": "note", "server_name": "finance"})
    assert found == []
    _, found = _search({"query": "text utility", "server_name": "textkit"}, limit=3)
    assert len(found) == 3 and all(name.startswith("textkit__") for name in found)


def test_server_alone_loads_all_its_tools() -> None:
    _, found = _search({"server_name": "notes"})
    assert found == ["notes__create_note", "notes__delete_note", "notes__search_notes"]


def test_tool_names_beat_query_and_accept_bare_names() -> None:
    _, found = _search({"tool_names": ["delete_note", "finance__get_exchange_rates"], "query": "loan"})
    assert found == ["notes__delete_note", "finance__get_exchange_rates"]


def test_edge_cases_answer_with_actionable_text() -> None:
    text, found = _search({"query": "teleport quantum banana"})
    assert found == [] and text.startswith("No tools found matching 'teleport quantum banana'") and "notes" in text
    text, _ = _search({"server_name": "github"})
    assert text == "Error: Unknown server 'github'. Servers you can search: notes, finance, textkit."
    text, _ = _search({"server_name": "weather"})
    assert "already loaded" in text
    text, found = _search({"tool_names": ["create_notes", "delete_note"]})
    assert found == ["notes__delete_note"]
    assert "No tool named 'create_notes'. Closest matches:" in text and "create_note" in text
    text, found = _search({"tool_names": ["notes__create_note"]}, loaded={"notes__create_note"})
    assert found == [] and "already loaded" in text
    # A tool the model has had from the start (its server defers nothing) is no "unknown tool" either.
    text, found = _search({"tool_names": ["weather__get_alerts"]}, loaded={"weather__get_alerts"})
    assert found == [] and text == "'weather__get_alerts' is already loaded: call it directly."
    text, _ = _search({"tool_names": ["create_notes"]})
    suggested = text.split("Closest matches: ")[1].rstrip(".").split(", ")
    assert len(suggested) == len(set(suggested)) and "notes__create_note" in suggested, "one name per tool"
    text, _ = _search({})
    assert text.startswith("Error: search_tools needs at least one of")
    text, _ = _search({"query": 5})
    assert text == "Error: 'query' must be a string."
    text, _ = _search({"tool_names": "create_note"})
    assert text == "Error: 'tool_names' must be an array of strings."


def test_query_skips_loaded_tools_so_they_do_not_waste_slots() -> None:
    text, found = _search({"query": "currency exchange"}, loaded={"finance__convert_currency"})
    assert "finance__convert_currency" not in found and "finance__get_exchange_rates" in found
    assert "Already loaded (call directly): finance__convert_currency" in text


def test_select_form_loads_exact_names_and_suggests_for_unknown() -> None:
    text, found = _search({"query": "select:create_note, finance__get_exchange_rates,nope_tool"})
    assert found == ["notes__create_note", "finance__get_exchange_rates"]
    assert "No tool named 'nope_tool'" in text


def test_a_query_that_is_one_tool_name_loads_that_tool() -> None:
    assert _search({"query": "calculate_loan_payment"})[1] == ["finance__calculate_loan_payment"]
    assert _search({"query": "notes__search_notes"})[1] == ["notes__search_notes"]


def test_plus_term_is_required() -> None:
    _, found = _search({"query": "note currency +delete"})
    assert found == ["notes__delete_note"]
    _, found = _search({"query": "+teleport note"})
    assert found == []


def test_hints_from_config_and_meta_are_searchable() -> None:
    listings = {
        **LISTINGS,
        "finance": [
            SimpleNamespace(
                **{**vars(LISTINGS["finance"][2]), "meta": {"anthropic/searchHint": "mortgage amortization"}}
            ),
            *LISTINGS["finance"][:2],
        ],
    }
    config = make_config(tool_hints={"notes": {"search_notes": "grep memo lookup"}})
    catalog = build_catalog(config, listings, version=1)
    discovery = _discovery(catalog)
    found = run_search({"query": "mortgage"}, discovery, lambda n: False, 5).found
    assert [entry.name for entry in found] == ["finance__calculate_loan_payment"]
    found = run_search({"query": "memo lookup"}, discovery, lambda n: False, 5).found
    assert found[0].name == "notes__search_notes"


def test_a_phone_number_is_not_a_required_word() -> None:
    assert _search({"query": "convert currency for +15551234"})[1][0] == "finance__convert_currency"


def test_hostile_queries_cost_time_linear_in_their_size() -> None:
    """A run of dashes made the path regex quadratic (20,000 characters took seconds, 40,000 half a minute): what
    it reads is still right; bench/abuse.py's "index:" rows time it."""
    for hostile in ("-" * 40_000 + " x", "a-" * 20_000 + "/" + "-" * 20_000):
        assert describe_locations(hostile) == hostile


def test_queries_and_name_lists_are_bounded_and_say_so() -> None:
    text, found = _search({"query": "convert currency " + "-" * 1_000_000})
    assert "the query was cut to its first 2,000 characters" in text
    assert found and len(text) < 5_000

    text, _ = _search({"tool_names": [f"no_such_tool_{i}" for i in range(10_000)]})
    assert "only the first 64 of 10,000 names were looked at" in text
    assert text.count("Closest matches") + text.count("Try a 'query'") <= 5
    text, _ = _search({"query": "select:" + ",".join(f"n{i}" for i in range(300_000))})
    assert text.count("No tool named") == 64
    _, found = _search({"tool_names": ["x" * 100_000, "convert_currency"]})
    assert found == ["finance__convert_currency"]
