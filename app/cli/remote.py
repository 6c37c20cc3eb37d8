"""`toolsift tools`, `manifest` and `search` answered by a running gateway's admin API.

The gateway already has every MCP server connected, the index built and the search model loaded, so asking it
takes milliseconds where starting the servers takes seconds. When no gateway answers (or it refuses), the
command says so in one line and falls back to starting the servers itself. Only the standard library here
(urllib rather than httpx, whose import with asyncio costs more than the whole answer): this path is what makes
the command fast.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from app.cli import render, running

DEFAULT_URL = "http://127.0.0.1:8000"
ADMIN_KEY_VARIABLE = "TOOLSIFT_ADMIN_KEY"
REMOTE_COMMANDS = ("tools", "manifest", "search")
TIMEOUT = 30.0  # seconds per connect or read: a search may wait for its query's vector on a busy gateway


class NoGateway(Exception):
    """No usable gateway at the URL: the reason, for the one-line note before falling back."""


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default=os.environ.get("TOOLSIFT_URL"),
        help=(
            f"a running gateway to ask (default: $TOOLSIFT_URL, else the running `toolsift serve` or `demo` of this "
            f"config, else {DEFAULT_URL}); without one, the servers start here"
        ),
    )
    parser.add_argument("--admin-key", help=f"the gateway's admin key (default: ${ADMIN_KEY_VARIABLE})")


def run(args: argparse.Namespace) -> int | None:
    """The command's exit status when the gateway answered it; None (after a note) when it must run locally."""
    args.url = args.url or running.serving(args.config) or DEFAULT_URL
    params: dict[str, Any] = {"tool_set": args.tool_set} if args.tool_set else {}
    try:
        if args.command == "tools":
            params.update({"server": args.server} if args.server else {})
            return render.tools(fetch(args, "tools", params)["tools"])
        if args.command == "manifest":
            return render.manifest(fetch(args, "manifest", params))
        params.update(query=args.queries, **{"server": args.server} if args.server else {})
        if args.k:
            params["k"] = args.k
        return render.search(fetch(args, "search", params), args.queries, args.explain)
    except NoGateway as exc:
        print(f"note: {exc}; starting the MCP servers here instead", file=sys.stderr)
        return None
    except _Refused as exc:
        print(f"toolsift: {exc}", file=sys.stderr)
        return 2


class _Refused(Exception):
    """The gateway understood and refused the question (an unknown tool set or server)."""


def fetch(args: argparse.Namespace, name: str, params: dict[str, Any]) -> dict[str, Any]:
    url = args.url.rstrip("/")
    key = args.admin_key or os.environ.get(ADMIN_KEY_VARIABLE)
    headers = {"Accept": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    query = f"?{urllib.parse.urlencode(params, doseq=True)}" if params else ""  # several queries: query=a&query=b
    request = urllib.request.Request(f"{url}/admin/{name}{query}", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
        reason = getattr(exc, "reason", None) or exc
        raise NoGateway(f"no gateway answered at {url} ({reason})") from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise NoGateway(f"{url} answered {status} without JSON: not a toolsift gateway?") from None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if status == 400 and message:
        raise _Refused(message)
    if status in (401, 403):
        raise NoGateway(f"the gateway at {url} refused: {message} (--admin-key or ${ADMIN_KEY_VARIABLE})")
    if status != 200 or not isinstance(body, dict):
        raise NoGateway(f"the gateway at {url} answered {status}: {message or 'no admin API'}")
    print(f"answered by the gateway at {url}", file=sys.stderr)
    return body
