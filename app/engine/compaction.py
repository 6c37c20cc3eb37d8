"""Compaction: a conversation summarised so that the summary can stand in for it (Codex's auto-compaction).

An upstream that compacts itself (the Responses API, with a last `compaction_trigger` item) gets the request as
it is. Any other gets the conversation with a last user turn asking for the summary, its tools kept (so the
prompt's prefix still hits the cache) but not callable; the front seals what it writes as the client's item.
"""

from __future__ import annotations

from dataclasses import replace

from app.config import Config
from app.core.model import ChatRequest, Message, ToolChoice
from app.providers.base import Provider

PROMPT = (
    "The conversation so far is about to be replaced by a summary, to free the context window. Write that summary "
    "now, for yourself to continue from: the user's goal and requests, what has been done and found (files, "
    "commands, tool results, decisions), what remains to do, and anything the user asked you to keep in mind. "
    "Be specific and complete but concise. Answer with the summary only; do not call tools."
)


def compacts_itself(provider: Provider, config: Config) -> bool:
    """Whether every upstream a route may reach is a Responses API upstream, which compacts by itself."""
    names = [candidate.name for candidate, _ in getattr(provider, "candidates", ())] or [provider.name]
    types = {config.providers[name].type if name in config.providers else None for name in names}
    return types == {"openai_responses"}


def summary_request(request: ChatRequest) -> ChatRequest:
    """The request that has the routed model write the summary."""
    options = replace(request.options, tool_choice=ToolChoice("none"))
    return replace(request, messages=[*request.messages, Message("user", PROMPT)], options=options, compact=False)
