"""With gateway keys, `cors_origins: ["*"]` lets any page call the API (with a key), but never the console and
its admin API: a foreign origin is refused there before any work, preflights included; a listed origin is not."""

from __future__ import annotations

import pytest

from app.config import ConfigError, parse_config
from tests.support import GatewayFactory, make_config

KEYS = {"api_keys": ["user-key"], "admin_keys": ["admin-key"]}
EVIL = "https://pages.example"


def test_the_config_refuses_a_star_without_keys() -> None:
    with pytest.raises(ConfigError, match=r'cors_origins: "\*" lets every web page .* set auth.api_keys'):
        parse_config({"cors_origins": ["*"]}, environ={})
    assert parse_config({"cors_origins": ["*"], "auth": {"api_keys": ["k"]}}, environ={}).cors_origins == ["*"]


async def test_a_star_never_opens_the_console_or_the_admin_api(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYS, cors_origins=["*"]))
    api = await client.get("/v1/models", headers={"origin": EVIL, "authorization": "Bearer user-key"})
    assert api.status_code == 200 and api.headers["access-control-allow-origin"] == "*"
    for path in ("/admin/tools", "/console", "/console/console.js"):
        refused = await client.get(path, headers={"origin": EVIL, "authorization": "Bearer admin-key"})
        assert refused.status_code == 403 and "origin_not_allowed" in refused.text, path
        preflight = await client.options(path, headers={"origin": EVIL, "access-control-request-method": "GET"})
        assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers, path
    own = await client.get("/admin/tools", headers={"origin": "http://gw", "authorization": "Bearer admin-key"})
    assert own.status_code == 200, own.text


async def test_a_listed_origin_still_reaches_the_admin_api(gateway_factory: GatewayFactory) -> None:
    client, _ = await gateway_factory(make_config(auth=KEYS, cors_origins=["*", EVIL]))
    listed = await client.get("/admin/tools", headers={"origin": EVIL, "authorization": "Bearer admin-key"})
    assert listed.status_code == 200, listed.text
