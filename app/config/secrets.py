"""What in a config counts as a secret, so redaction can keep it out of every answer and log line.

Only values that carry credentials count: keys, header values, credentials inside URLs and the MCP `env` values
that came from `${VAR}`. Literal values (paths, flags, commands) are not secrets, or redaction would mangle text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote_plus, urlsplit

if TYPE_CHECKING:
    from app.config.root import Config

# A URL query parameter whose name contains one of these carries a credential (`?key=`, `?access_token=`, `?sig=`).
_CREDENTIAL_PARAMS = ("key", "token", "secret", "sig", "pass", "auth", "cred", "session", "code")
_AUTH_SCHEMES = frozenset({"bearer", "basic", "token", "bot", "digest"})


def config_secrets(config: Config) -> set[str]:
    """Every configured secret: upstream and embeddings-endpoint keys, extra header values, MCP header values and
    the `env` values that came from `${VAR}`, gateway keys and identities' secrets, and credentials inside
    configured URLs."""
    found: set[str] = {*config.auth.gateway_keys(), *config.auth.admin_keys}
    for identity in config.auth.identities():
        found.update(identity.secrets.values())
    for provider in config.providers.values():
        found.update(header_secrets(provider.extra_headers))
        if provider.api_key:
            found.add(provider.api_key)
        found.update(url_secrets(provider.base_url))
    for name, server in config.mcp_servers.items():
        found.update(header_secrets(server.headers))
        found.update(url_secrets(server.url or ""))
        prefix = f"mcpServers.{name}.env."
        for path, values in config.from_env.items():
            if path.startswith(prefix):
                found.update(values)
                found.add(server.env.get(path.removeprefix(prefix), ""))
    found.update(url_secrets(config.store.redis_url or ""))
    found.update(url_secrets(config.store.counters_redis_url or ""))
    endpoint = config.tool_discovery.semantic.endpoint
    if endpoint is not None:
        found.update({endpoint.api_key or "", *url_secrets(endpoint.base_url)})
    found.discard("")
    return found


def header_secrets(headers: dict[str, str]) -> set[str]:
    """Header values, and the credential alone when a value is `<scheme> <credential>` (an upstream that echoes
    the token without its `Bearer` still gets it redacted). A bare scheme (`Bearer ` from an unset variable) is
    not a secret."""
    found: set[str] = set()
    for value in headers.values():
        scheme, _, credential = value.strip().partition(" ")
        if credential.strip() and scheme.isalpha():
            found.update({value.strip(), credential.strip()})
        elif scheme.lower() not in _AUTH_SCHEMES:
            found.add(value.strip())
    return found


def url_secrets(url: str) -> set[str]:
    """The password (or a lone user name, as token URLs use it) and credential-named query values of a URL, as
    written and percent-decoded (a text may quote either)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return set()
    userinfo, at, _ = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    raw = [password if colon else user] if at else []
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if any(marker in unquote_plus(name).lower() for marker in _CREDENTIAL_PARAMS):
            raw.append(value)
    return {form for value in raw for form in (value, unquote_plus(value)) if form}
