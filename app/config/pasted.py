"""Keys other MCP clients write in an `mcpServers` entry, so a block pasted from one works as is.

Each client adds its own settings beside `command`, `args`, `env` and `url`: approval lists, timeouts in its own
unit, watch paths. toolsift has no use for them, so they are accepted and ignored, and said so once at start-up.
A few name something toolsift does read under another key (Windsurf's `serverUrl` is the URL, Cline's
`transportType` the transport): those are read as that key. Any other key toolsift does not know is an error,
so a misspelt `arg` or `defer_load` fails loudly instead of being ignored.
"""

from __future__ import annotations

from typing import Any

# key -> the clients that write it (for the info line); all ignored by toolsift.
IGNORED: dict[str, str] = {
    "alwaysAllow": "Roo Code, Kilo Code",  # tools run without asking: the gateway never asks
    "autoApprove": "Cline",
    "timeout": "Cline, Roo Code, Claude Code",  # in each client's own unit; toolsift's is tool_timeout
    "networkTimeout": "Cline",
    "envFile": "VS Code, Cursor",  # not read: put the variables in env (or in the gateway's environment)
    "disabledTools": "Roo Code, Windsurf",
    "watchPaths": "Roo Code",
    "dev": "VS Code",
    "gallery": "VS Code",
    "version": "VS Code",
    "trust": "Gemini CLI",
    "includeTools": "Gemini CLI",
    "excludeTools": "Gemini CLI",
    "oauth": "Gemini CLI, Claude Code",
    "auth": "Cursor",
    "headersHelper": "Claude Code",
    "icon": "MCP hubs",
    "name": "MCP hubs",
}
# key -> toolsift's own key it means, read as that key when toolsift's is not given.
READ_AS: dict[str, str] = {
    "type": "transport",  # Claude Code, Cursor, VS Code
    "transportType": "transport",  # Cline
    "serverUrl": "url",  # Windsurf
    "httpUrl": "url",  # Gemini CLI: a streamable HTTP server
}
# Transport spellings other clients use, as toolsift's.
TRANSPORTS = dict.fromkeys(("streamableHttp", "streamable_http", "httpStream"), "streamable-http")


def normalize(entry: Any) -> Any:
    """A server entry with other clients' keys read as toolsift's or dropped; anything else unchanged."""
    if not isinstance(entry, dict):
        return entry
    found = {key: value for key, value in entry.items() if key not in IGNORED}
    for key, own in READ_AS.items():
        if key in found:
            value = found.pop(key)
            found.setdefault(own, value)
    if isinstance(found.get("transport"), str):
        found["transport"] = TRANSPORTS.get(found["transport"], found["transport"])
    return found


def ignored_keys(servers: Any) -> list[str]:
    """`mcpServers.NAME.KEY` of every ignored key in a raw `mcpServers` section, for the one info line."""
    if not isinstance(servers, dict):
        return []
    return [
        f"mcpServers.{name}.{key}"
        for name, entry in servers.items()
        if isinstance(entry, dict)
        for key in entry
        if key in IGNORED
    ]
