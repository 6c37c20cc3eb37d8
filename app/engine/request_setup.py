"""How a request's tools are built: the tool set's MCP tools and the client's, split into loaded and deferred,
the client's deferred tools as manifest groups beside the tool set's discovery, then what the conversation, a
session and prefetch load from the start (app/engine/request_tools.py holds them for the request's rounds).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from app.codecs.responses.tools import TOOL_SEARCH
from app.common.errors import RequestRefused
from app.common.offload import off_loop
from app.config import Config
from app.core.catalog import Catalog, ToolEntry, ToolScope, auto_deferred, client_entries, select_mcp_tools
from app.core.model import ChatRequest, Message
from app.discovery.cache import DiscoveryCache
from app.discovery.manifest import ManifestGroup
from app.engine.call_tool import CALL_TOOL_NAME
from app.engine.request_tools import CLIENT_GROUP, CLIENT_SUMMARY, RequestTools


def prepare_request_tools(
    catalog: Catalog,
    config: Config,
    request: ChatRequest,
    cache: DiscoveryCache,
    scope: ToolScope | None = None,
    deferral: str = "tools",
    search_output: bool = False,
) -> RequestTools:
    """Toolset filter first, then the loaded/deferred split (a tool outside the toolset is never seen). `scope`:
    the tools the caller may see (app.core.catalog.narrowed), by default the request's tool set; `deferral`: the
    upstream provider's (`search_output`: a Responses upstream's `native`)."""
    scope = request.tool_set if scope is None else scope
    mcp = select_mcp_tools(catalog, config, scope)
    client = client_entries(request.tools, {entry.name: entry for entry in mcp})
    enabled = config.tool_discovery.enabled
    if enabled:
        client = auto_deferred(client, config.tool_discovery.auto_defer_client_tools, request.options.tool_choice)
    deferred_client = [entry for entry in client if entry.deferred] if enabled else []
    discovery = cache.get(catalog, scope, mcp)
    for group in client_groups(deferred_client, catalog):
        discovery = cache.with_client_tools(catalog, scope, discovery, group)
    if not enabled:
        discovery = None
    search_output = deferral == "native" and search_output
    if search_output and any(tool.spec.name == TOOL_SEARCH for tool in request.tools):
        search_output = False  # a client's own tool search takes the upstream's one `tool_search` tool
        deferral = "tools"
    if deferral == "call_tool" and discovery is not None:
        for index, tool in enumerate(request.tools):
            if tool.spec.name == CALL_TOOL_NAME:
                raise RequestRefused(
                    f"Client tool {CALL_TOOL_NAME!r} collides with a tool this gateway offers this request; rename it.",
                    param=f"tools[{index}].function.name",
                    code="tool_name_collision",
                )
    settings = config.tool_discovery
    return RequestTools(
        [*client, *mcp],
        discovery,
        settings.max_search_results,
        settings.load_related,
        config.max_queries_per_search,
        settings.semantic.query_tokens_per_request,
        deferral,
        search_output,
    )


def client_groups(deferred: list[ToolEntry], catalog: Catalog) -> list[ManifestGroup]:
    """The client's deferred tools as manifest groups: those of a namespace under its name and description (the
    model sees the group, as OpenAI shows a deferred namespace), the others together as the calling application's."""
    grouped: dict[str, list[ToolEntry]] = {}
    summaries: dict[str, str] = {}
    for entry in deferred:
        namespace = entry.spec.namespace
        label = namespace.name if namespace is not None else CLIENT_GROUP
        label = label if label not in catalog.servers else f"{label}_tools"
        grouped.setdefault(label, []).append(entry)
        summaries.setdefault(label, namespace.description if namespace is not None else CLIENT_SUMMARY)
    return [ManifestGroup(label, summaries[label], entries) for label, entries in grouped.items()]


async def tools_for(
    catalog: Catalog,
    config: Config,
    request: ChatRequest,
    cache: DiscoveryCache,
    remembered: Iterable[str] | Mapping[str, int] = (),
    scope: ToolScope | None = None,
    deferral: str = "tools",
    search_output: bool = False,
) -> RequestTools:
    """A request's tools as its first round sends them: the tool set's, the client's, what the conversation
    already called and a session `remembered`, then what prefetch finds for the latest user message. Indexing
    the client's tools (or a toolset's first discovery) is sized by input: it runs in the worker pool, never on the
    event loop."""
    scope = request.tool_set if scope is None else scope
    if request.tools or not cache.ready(catalog, scope):
        tools = await off_loop(prepare_request_tools, catalog, config, request, cache, scope, deferral, search_output)
    else:
        tools = prepare_request_tools(catalog, config, request, cache, scope, deferral, search_output)
    tools.turn = sum(message.role == "user" for message in request.messages)
    tools.load(history_tool_names(request.messages))
    if tools.call_tool:  # a client's own tool search loaded them: they join the list it fixes from the start
        tools.pin(request.loaded_tools)
    else:
        tools.client_loaded = tools.load(request.loaded_tools)
    if tools.native and isinstance(remembered, Mapping):  # one only found is not loaded upstream: a search is
        tools.load(name for name, turn in remembered.items() if turn > 0)
    else:
        tools.load(remembered)
    if isinstance(remembered, Mapping):
        tools.turns.update(remembered)
    discovery = config.tool_discovery
    if discovery.prefetch:
        text = latest_user_text(request.messages)
        await tools.prepare(text)
        await off_loop(tools.prefetch, text, discovery.prefetch, discovery.prefetch_min_match)
    return tools


def latest_user_text(messages: list[Message]) -> str:
    """The text of the last user message (string content or its text parts)."""
    for message in reversed(messages):
        if message.role == "user":
            return message.text()
    return ""


def history_tool_names(messages: list[Message]) -> list[str]:
    """Names the conversation already called, oldest first: they stay loaded on the next turn."""
    names: list[str] = []
    for message in messages:
        for call in message.tool_calls:
            if call.name not in names:
                names.append(call.name)
    return names
