"""Upstream providers and model routing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.codecs.openai_chat.options import options_of
from app.common.errors import GatewayError
from app.config import Config, ProviderConfig
from app.core.model import Options, with_defaults
from app.providers.anthropic import AnthropicProvider
from app.providers.base import HttpProvider, Provider
from app.providers.fallback import FallbackProvider
from app.providers.openai import OpenAIProvider
from app.providers.responses import ResponsesProvider

KINDS: dict[str, Callable[[str, ProviderConfig, str | None], HttpProvider]] = {
    "openai": OpenAIProvider,
    "anthropic": AnthropicProvider,
    "openai_responses": ResponsesProvider,
}


@dataclass(frozen=True)
class Route:
    """Where a request goes; `defaults` are its model alias's configured parameters, typed (None: it has none)."""

    provider: Provider
    model: str
    defaults: Options | None = None

    def options(self, requested: Options) -> Options:
        """The request's options, with what they leave unset taken from the alias's."""
        return with_defaults(requested, self.defaults)


class Router:
    """`model` names an entry of `models` (alias -> provider, model, params) or goes to the default provider."""

    def __init__(self, config: Config, providers: dict[str, Provider] | None = None) -> None:
        """`providers` stand in for configured ones of the same name (an in-memory upstream, as httpx's
        MockTransport stands in for a network): the engine then runs without HTTP."""
        self.config = config
        self.providers: dict[str, Provider] = dict(providers or {})
        for name, provider in config.providers.items():
            if name not in self.providers:
                kind = KINDS[provider.type]
                self.providers[name] = kind(name, provider, config.unset_env.get(f"providers.{name}.api_key"))
        # Written in chat-completions names in the config, read once into typed options (those another format
        # takes under its own names) and OpenAI pass-through.
        self.defaults = {name: options_of(alias.params) for name, alias in config.models.items() if alias.params}

    def route(self, model: str, client_key: str | None = None, allows: Callable[[str], bool] | None = None) -> Route:
        """Where `model` goes. `client_key` (the caller's bearer token) is used only by providers configured
        with `forward_client_auth`, and then instead of the configured key, never beside it. `allows` says which
        aliases the caller may use: a fallback it may not is skipped, so a failing model never hands the request
        to one the caller's key does not open."""
        alias = self.config.models.get(model)
        if alias is not None:
            provider = self._provider(alias.provider, client_key)
            usable = [name for name in alias.fallbacks if allows is None or allows(name)]
            if usable:
                chain = [(provider, alias.model)]
                for name in usable:
                    fallback = self.config.models[name]
                    chain.append((self._provider(fallback.provider, client_key), fallback.model))
                provider = FallbackProvider(chain)
            return Route(provider, alias.model, self.defaults.get(model))
        default = self.config.default_provider
        if default is None:
            known = ", ".join(sorted(self.config.models)) or "none"
            raise GatewayError(
                404 if self.config.providers else 503,
                f"The model '{model}' does not exist here and no default_provider is configured. Models: {known}.",
                param="model",
                code="model_not_found",
            )
        return Route(self._provider(default, client_key), model)

    def _provider(self, name: str, client_key: str | None) -> Provider:
        provider = self.providers[name]
        if isinstance(provider, HttpProvider) and provider.forward_client_auth:
            return provider.with_client_key(client_key)
        return provider

    async def aclose(self) -> None:
        for provider in self.providers.values():
            await provider.aclose()
