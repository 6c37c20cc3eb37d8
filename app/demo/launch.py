"""`toolsift demo`: the gateway on the given config with every provider replaced by the demo model."""

from __future__ import annotations

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
