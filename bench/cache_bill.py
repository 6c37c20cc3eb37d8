"""The bill of a conversation's upstream requests, as the provider's prompt cache sees them (bench/cache.py).

A request is read in the order providers render it, tools, then system, then messages, as a list of blocks: one
tool, one system text, one message content part. A tool sent with `defer_loading: true` is not rendered (the
provider keeps it out of the prompt); a `tool_reference` block is rendered as the definition it names, where it
stands. A block is cached whole or not at all, so every figure here is a slight underestimate of what a
provider caches token by token.

- prefix-cacheable: the longest run of leading blocks shared with any earlier request of the conversation;
- OpenAI: that prefix is read at 0.1x once it reaches 1,024 tokens, in 128-token steps;
- Anthropic: only at the breakpoints a request carries (`cache_control` on a tool, a system or a content block,
  or on the request itself, which marks its last block): a breakpoint reads the longest prefix written earlier
  that ends on it or up to 20 blocks before it, and writes (at 1.25x) up to its last breakpoint; prefixes under
  1,024 tokens are not cached.

Token counts are o200k_base (app/common/tokens.py), per block.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from app.common import tokens

OPENAI_MIN_PREFIX = 1024
OPENAI_STEP = 128
CACHED_READ = 0.1
ANTHROPIC_WRITE = 1.25
ANTHROPIC_MIN_PREFIX = 1024
ANTHROPIC_LOOKBACK = 20


@dataclass(frozen=True)
class Block:
    key: str  # what identifies it in a prefix (its position's role and its text)
    tokens: int
    breakpoint: bool = False


@dataclass
class Bill:
    """One request's figures."""

    tokens: int
    cacheable: int  # prefix shared with an earlier request
    openai_cached: int
    anthropic_read: int
    anthropic_write: int

    def effective(self, provider: str) -> float:
        """Input tokens at the provider's published multipliers."""
        if provider == "anthropic":
            rest = self.tokens - self.anthropic_read - self.anthropic_write
            return rest + CACHED_READ * self.anthropic_read + ANTHROPIC_WRITE * self.anthropic_write
        return self.tokens - self.openai_cached + CACHED_READ * self.openai_cached


_counts: dict[str, int] = {}


def count(text: str) -> int:
    """o200k tokens of `text`, remembered (a conversation resends the same blocks on every request)."""
    digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    if digest not in _counts:
        _counts[digest] = tokens.count_text(text)
    return _counts[digest]


def _block(key: str, text: str, breakpoint: bool = False) -> Block:
    return Block(hashlib.blake2b(f"{key}\x00{text}".encode(), digest_size=16).hexdigest(), count(text), breakpoint)


def _dump(value: Any) -> str:
    """A block's text as cached: its breakpoint mark is not part of it (moving a breakpoint keeps the prefix)."""
    if isinstance(value, dict) and "cache_control" in value:
        value = {key: item for key, item in value.items() if key != "cache_control"}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _name(tool: dict[str, Any]) -> str:
    return str((tool.get("function") or {}).get("name") or tool.get("name") or "")


def _is_deferred(tool: dict[str, Any]) -> bool:
    return bool(tool.get("defer_loading") or (tool.get("function") or {}).get("defer_loading"))


def render(provider: str, body: dict[str, Any]) -> list[Block]:
    """The blocks of an upstream request body of `provider` ("openai", "anthropic" or "openai_responses")."""
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict)]
    deferred = {_name(tool): tool for tool in tools if _is_deferred(tool)}
    blocks = [_block("tool", _dump(tool), "cache_control" in tool) for tool in tools if not _is_deferred(tool)]
    if provider == "anthropic":
        system = body.get("system")
        parts = [{"type": "text", "text": system}] if isinstance(system, str) else list(system or [])
        blocks += [_block("system", _dump(part.get("text", part)), "cache_control" in part) for part in parts]
        blocks += _messages(body.get("messages") or [], deferred)
    elif provider == "openai_responses":
        if body.get("instructions"):
            blocks.append(_block("system", str(body["instructions"])))
        items = body.get("input") or []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        blocks += [_block(f"item{index}", _dump(item)) for index, item in enumerate(items)]
    else:
        messages = body.get("messages") or []
        lead = 0
        while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
            blocks.append(_block("system", _dump(messages[lead].get("content"))))
            lead += 1
        blocks += _messages(messages[lead:], deferred)
    if body.get("cache_control") and blocks:  # a request-level breakpoint marks its last block
        blocks[-1] = Block(blocks[-1].key, blocks[-1].tokens, True)
    return blocks


def _messages(messages: list[dict[str, Any]], deferred: dict[str, dict[str, Any]]) -> list[Block]:
    blocks = []
    for index, message in enumerate(messages):
        key = f"m{index}:{message.get('role')}"
        content = message.get("content")
        header = {name: value for name, value in message.items() if name != "content"}
        if not isinstance(content, list):
            blocks.append(_block(key, _dump({**header, "content": content})))
            continue
        if len(header) > 1:  # a chat message's tool calls or call id
            blocks.append(_block(key, _dump(header)))
        for part in content:
            blocks += _part(key, part, deferred)
    return blocks


def _part(key: str, part: Any, deferred: dict[str, dict[str, Any]]) -> list[Block]:
    if not isinstance(part, dict):
        return [_block(key, _dump(part))]
    mark = "cache_control" in part
    if part.get("type") == "tool_reference":  # expanded where it stands
        return [_block(key, _dump(deferred.get(str(part.get("tool_name")), part)), mark)]
    inner = part.get("content")
    if part.get("type") == "tool_result" and isinstance(inner, list):
        head = _block(key, _dump({name: value for name, value in part.items() if name != "content"}), mark)
        return [head, *(block for item in inner for block in _part(key, item, deferred))]
    return [_block(key, _dump(part), mark)]


@dataclass
class Ledger:
    """What one conversation's earlier requests left in the provider's cache."""

    seen: set[str] = field(default_factory=set)  # every prefix of every earlier request
    written: set[str] = field(default_factory=set)  # Anthropic: prefixes written at a breakpoint

    def bill(self, blocks: list[Block]) -> Bill:
        prefixes, sums = _prefixes(blocks)
        shared = 0
        while shared < len(blocks) and prefixes[shared + 1] in self.seen:
            shared += 1
        cacheable = sums[shared]
        read, write = self._anthropic(blocks, prefixes, sums)
        self.seen.update(prefixes)
        return Bill(sums[-1], cacheable, openai_cached(cacheable), read, write)

    def _anthropic(self, blocks: list[Block], prefixes: list[str], sums: list[int]) -> tuple[int, int]:
        breakpoints = [index + 1 for index, block in enumerate(blocks) if block.breakpoint]
        if not breakpoints:
            return 0, 0
        read = 0
        for point in breakpoints:
            for end in range(point, max(0, point - ANTHROPIC_LOOKBACK) - 1, -1):
                if prefixes[end] in self.written:
                    read = max(read, sums[end])
                    break
        write = max(0, sums[breakpoints[-1]] - read) if sums[breakpoints[-1]] >= ANTHROPIC_MIN_PREFIX else 0
        self.written.update(prefixes[point] for point in breakpoints if sums[point] >= ANTHROPIC_MIN_PREFIX)
        return read, write


def _prefixes(blocks: list[Block]) -> tuple[list[str], list[int]]:
    """The hash and the tokens of every leading run of blocks (index i: the first i blocks)."""
    prefixes, sums = [""], [0]
    for block in blocks:
        prefixes.append(hashlib.blake2b(f"{prefixes[-1]}{block.key}".encode(), digest_size=16).hexdigest())
        sums.append(sums[-1] + block.tokens)
    return prefixes, sums


def openai_cached(prefix: int) -> int:
    """Tokens OpenAI bills as cached for a shared prefix: none under 1,024, then in 128-token steps."""
    if prefix < OPENAI_MIN_PREFIX:
        return 0
    return OPENAI_MIN_PREFIX + (prefix - OPENAI_MIN_PREFIX) // OPENAI_STEP * OPENAI_STEP


@dataclass
class Totals:
    """A conversation's bills, summed."""

    requests: int = 0
    tokens: int = 0
    cacheable: int = 0
    effective: float = 0.0

    def add(self, bill: Bill, provider: str) -> None:
        self.requests += 1
        self.tokens += bill.tokens
        self.cacheable += bill.cacheable
        self.effective += bill.effective(provider)

    @property
    def uncached(self) -> int:
        return self.tokens - self.cacheable

    @property
    def share(self) -> float:
        return self.cacheable / self.tokens if self.tokens else 0.0
