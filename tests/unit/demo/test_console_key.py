"""`toolsift demo` beyond loopback (the compose demo behind a published port): its console answers the admin key it
made for the run, and nothing else; on loopback, or with admin keys configured, it makes none."""

from __future__ import annotations

from urllib.parse import urlsplit

from app.demo.launch import console_link, with_console_key
from tests.support import GatewayFactory, make_config


async def test_beyond_loopback_the_console_answers_the_runs_own_key_only(gateway_factory: GatewayFactory) -> None:
    config, key = with_console_key(make_config(), beyond_loopback=True)
    assert key and config.auth.admin_keys == [key] and not config.auth.api_keys
    # The in-memory transport is no loopback connection, as a request through a container's published port.
    client, _ = await gateway_factory(config)
    assert (await client.get("/console")).status_code == 200
    answered = await client.get("/admin/servers", headers={"Authorization": f"Bearer {key}"})
    assert answered.status_code == 200 and {server["name"] for server in answered.json()["servers"]} >= {"finance"}
    for headers in ({}, {"Authorization": "Bearer demo-guessed"}):
        refused = await client.get("/admin/servers", headers=headers)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    # Without the run's key the rule stands: no console for a non-loopback connection to a gateway without keys.
    plain, _ = await gateway_factory(make_config())
    refused = await plain.get("/admin/servers")
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "console_not_served"


def test_each_run_makes_its_own_key_and_the_link_carries_it_in_the_fragment() -> None:
    first = with_console_key(make_config(), beyond_loopback=True)[1]
    second = with_console_key(make_config(), beyond_loopback=True)[1]
    assert first and second and first != second and len(first) > 30
    link = urlsplit(console_link(8000, first))
    assert (link.netloc, link.path, link.query, link.fragment) == ("127.0.0.1:8000", "/console", "", f"key={first}")


def test_no_key_is_made_on_loopback_with_admin_keys_or_with_the_console_off() -> None:
    plain = make_config()
    assert with_console_key(plain, beyond_loopback=False) == (plain, None)
    keyed = make_config(auth={"admin_keys": ["operator-key"]})
    assert with_console_key(keyed, beyond_loopback=True) == (keyed, None)
    off = make_config(console={"enabled": False})
    assert with_console_key(off, beyond_loopback=True) == (off, None)
