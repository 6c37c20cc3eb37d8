"""`toolsift models`: the routed models, or `models pull` to fetch an embedding model for search."""

from __future__ import annotations

import argparse
import sys

import httpx

from app.cli import render
from app.config import Config
from app.discovery import models as model_store


def models(config: Config, args: argparse.Namespace) -> int:
    if args.action == "pull":
        return _pull(args.model or config.tool_discovery.semantic.model, args.endpoint)
    rows = [
        (alias, model.provider, config.providers[model.provider].type, model.model, ", ".join(model.fallbacks) or "-")
        for alias, model in config.models.items()
    ]
    for line in render.table(rows, ["model", "provider", "type", "upstream model", "fallbacks"]):
        print(line)
    if config.default_provider:
        print(f"\nany other model name goes to provider '{config.default_provider}' unchanged")
    return 0


def _pull(model_id: str, endpoint: str | None) -> int:
    """Fetch an embedding model once, where the network allows; the gateway then finds it offline."""
    found = model_store.find_model(model_id)
    if found is not None:
        print(f"{model_id}: already here ({found})")
        return 0
    try:
        path = model_store.pull(model_id, endpoint)
    except (OSError, ValueError, httpx.HTTPError) as exc:
        print(f"toolsift: cannot pull {model_id}: {exc}", file=sys.stderr)
        return 1
    print(f"{model_id}: pulled to {path}")
    return 0
