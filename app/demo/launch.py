"""`toolsift demo`: the gateway on the given config with every provider replaced by the demo model, and an admin
key of its own when it listens beyond loopback (the console is shown there to admin keys only)."""

from __future__ import annotations

import secrets

from app.config import Config, ModelConfig, ProviderConfig

PROVIDER = "demo"


def with_demo_model(config: Config, base_url: str) -> Config:
    """The config with one provider, the demo model at `base_url`, that every model alias and name routes to.
    The MCP servers, tool sets and discovery settings stay as configured: they are what the demo shows."""
    demo = config.model_copy(deep=True)
    demo.providers = {PROVIDER: ProviderConfig(type="openai", base_url=base_url, max_retries=0)}
    demo.default_provider = PROVIDER
    demo.models = {
        alias: ModelConfig(provider=PROVIDER, model=model.model, params=model.params)
        for alias, model in config.models.items()
    }
    demo.unset_env = {path: name for path, name in config.unset_env.items() if not path.startswith("providers.")}
    demo.from_env = config.from_env
    demo.base_dir = config.base_dir
    return demo


def with_console_key(config: Config, beyond_loopback: bool) -> tuple[Config, str | None]:
    """A demo listening beyond loopback (in a container behind a published port, say) reaches its console from
    other addresses, where a gateway without keys serves none: it gets an admin key of its own, made for this
    run, that `toolsift demo` prints in the console's link. None on loopback or when auth.admin_keys are set."""
    if not beyond_loopback or any(config.auth.admin_keys) or not config.console.enabled:
        return config, None
    key = f"demo-{secrets.token_urlsafe(24)}"
    keyed = config.model_copy(deep=True)
    keyed.auth.admin_keys = [key]
    return keyed, key


def console_link(port: int, key: str) -> str:
    """The console with the key in its fragment, which the browser keeps to itself (console.js reads it)."""
    return f"http://127.0.0.1:{port}/console#key={key}"
