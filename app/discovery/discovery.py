"""Discovery: everything about one set of deferred tools that does not change between requests (its index, the
manifest and the `search_tools` definition, the tools by name and by server), built once per catalog version."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.catalog import ToolEntry
from app.discovery.enrichment import Enrichments
from app.discovery.index import ToolIndex
from app.discovery.manifest import DEFAULT_MAX_TOKENS, ManifestGroup, manifest_text, search_tool_definition
from app.discovery.merged import MergedIndex, Ranker
from app.discovery.params import DEFAULT_PARAMS, SearchParams
from app.discovery.semantic import SemanticSearch


@dataclass(frozen=True)
class Discovery:
    """Everything about one set of deferred tools that does not change between requests."""

    groups: tuple[ManifestGroup, ...]
    index: Ranker
    manifest: str
    definition: dict[str, Any]
    # With a request's own group beside a shared discovery, these are its own tables over the shared one's (a
    # ChainMap): copying the shared tables cost each cached list of client tools about 1.2 MB beside 10,000 tools.
    # (Mutable only because ChainMap's layers must be; nothing writes to them once built.)
    by_name: MutableMapping[str, ToolEntry]
    by_original_name: MutableMapping[str, list[ToolEntry]]
    by_group: MutableMapping[str, list[ToolEntry]]
    tokens: int  # estimated tokens of all these tools' definitions
    semantic: SemanticSearch | None = None
    # The groups' tools that stay loaded, by exposed and by bare name: a search naming one says so.
    always_loaded: dict[str, ToolEntry] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        groups: Sequence[ManifestGroup],
        manifest_max_tokens: int = DEFAULT_MAX_TOKENS,
        reference: ToolIndex | None = None,
        semantic: SemanticSearch | None = None,
        params: SearchParams = DEFAULT_PARAMS,
        max_chars: int | None = None,
        enrichments: Enrichments | None = None,
    ) -> Discovery:
        """`max_chars` bounds the description text indexed in all (a caller's tools: see ToolIndex);
        `enrichments` are what the configured model wrote of the tools (`toolsift enrich`)."""
        entries = [entry for group in groups for entry in group.tools]
        summaries = {group.label: group.summary for group in groups}
        index = ToolIndex(entries, summaries, reference, params, max_chars, enrichments)
        if semantic is not None:
            # The gateway embeds the tools it serves. A client's own tools, chosen by the caller and different
            # in every request, are not: embedding them would let any caller spend the gateway's CPU.
            semantic.track(
                (entry for entry in entries if entry.server is not None),
                (found.text for found in index.enriched if found is not None),
            )
        by_original: dict[str, list[ToolEntry]] = {}
        for entry in entries:
            by_original.setdefault(entry.original_name, []).append(entry)
        manifest = manifest_text(groups, manifest_max_tokens, index.name_distinctiveness)
        return cls(
            groups=tuple(groups),
            index=index,
            manifest=manifest,
            definition=search_tool_definition(groups, manifest),
            by_name={entry.name: entry for entry in entries},
            by_original_name=by_original,
            by_group={group.label: list(group.tools) for group in groups},
            tokens=sum(entry.tokens for entry in entries),
            semantic=semantic,
            always_loaded=_always_loaded(groups),
        )

    def with_group(self, group: ManifestGroup, max_chars: int | None = None) -> Discovery:
        """This discovery plus one more (small) group, indexed on its own and searched together with this one."""
        reference = self.index if isinstance(self.index, ToolIndex) else None
        params = reference.params if reference is not None else DEFAULT_PARAMS
        extra = Discovery.build(
            [group], reference=reference, semantic=self.semantic, params=params, max_chars=max_chars
        )
        groups = (*self.groups, group)
        manifest = f"{self.manifest}\n{extra.manifest}"
        shared = self.by_original_name
        overlay = {name: [*shared.get(name, ()), *found] for name, found in extra.by_original_name.items()}
        return Discovery(
            groups=groups,
            index=MergedIndex(self.index, extra.index),
            manifest=manifest,
            definition=search_tool_definition(groups, manifest),
            by_name=ChainMap(dict(extra.by_name), self.by_name),
            by_original_name=ChainMap(overlay, self.by_original_name),
            by_group=ChainMap(dict(extra.by_group), self.by_group),
            tokens=self.tokens + extra.tokens,
            semantic=self.semantic,
            always_loaded={**extra.always_loaded, **self.always_loaded},
        )


def _always_loaded(groups: Sequence[ManifestGroup]) -> dict[str, ToolEntry]:
    found: dict[str, ToolEntry] = {}
    for group in groups:
        for entry in group.loaded:
            found.setdefault(entry.original_name, entry)
            found[entry.name] = entry
    return found
