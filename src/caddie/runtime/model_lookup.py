"""``ctx.model_registry`` over the session's ``ModelRegistry``: Pi's ModelRegistry methods under Python names.

``--api-key`` counts as the ``runtime`` key of the chosen model's provider, as in Pi. Keys found here are
registered as secrets (they are redacted from every error text), as every key caddie reads is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from caddie.ai.catalogue import LLAMA_ROUTER
from caddie.ai.model import Model
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER
from caddie.extensions.api import AuthStatus, ProviderSummary, ResolvedAuth
from caddie.extensions.runner import Extension
from caddie.models.registry import ModelRegistry


@dataclass
class RegistryLookup:
    registry: ModelRegistry
    api_key_for: Callable[[Model], str | None]
    has_auth: Callable[[Model], bool]
    available: Callable[[], list[Model]]
    extensions: Callable[[], list[Extension]]
    runtime_key_provider: str | None = None
    """The provider ``--api-key`` gives the key of (None: no ``--api-key``)."""

    def find(self, provider: str, model_id: str) -> Model | None:
        return self.registry.find(provider, model_id)

    def get_available(self) -> list[Model]:
        return self.available()

    def get_all(self) -> list[Model]:
        return self.registry.all()

    def get_error(self) -> str | None:
        return "\n".join(self.registry.warnings) or None

    def refresh(self) -> None:
        self.registry.refresh()

    def has_configured_auth(self, model: Model) -> bool:
        return self.has_auth(model)

    def is_using_oauth(self, model: Model) -> bool:
        return model.provider != self.runtime_key_provider and self.registry.oauth.has_login(model.provider)

    def get_provider_auth_status(self, provider: str) -> AuthStatus:
        if provider == self.runtime_key_provider:
            return AuthStatus(True, "runtime")
        found = self.registry.key_source(provider)
        return AuthStatus(True, found.kind, found.label) if found is not None else AuthStatus(False)

    def get_provider(self, provider: str) -> ProviderSummary | None:
        models = [m for m in self.registry.all() if m.provider == provider]
        info = self.registry.provider_info(provider)
        if not models and info is None:
            return None
        first = models[0] if models else None
        return ProviderSummary(
            provider,
            self.get_provider_display_name(provider),
            first.base_url if first else info.base_url if info else None,
            first.api if first else info.api if info else None,
            models,
        )

    def get_provider_display_name(self, provider: str) -> str:
        info = self.registry.provider_info(provider)
        return info.title if info is not None else provider

    async def get_api_key_and_headers(self, model: Model) -> ResolvedAuth:
        try:
            auth = (
                None
                if model.provider == self.runtime_key_provider
                else await self.registry.request_auth(model)
            )
        except Exception as e:  # a login that cannot be renewed: said, as Pi says it
            return ResolvedAuth(False, error=str(e) or type(e).__name__)
        key = auth.api_key if auth is not None and auth.api_key else self.api_key_for(model)
        headers = {**(model.headers or {}), **(auth.headers if auth is not None else {})}
        # as Pi: no key is not an error here (the request fails saying so); the headers alone are the answer
        credential = self.registry.auth.get(model.provider)
        return ResolvedAuth(
            True,
            api_key=None if key == NO_KEY_PLACEHOLDER else key,
            headers=headers or None,
            base_url=auth.base_url if auth is not None else None,
            env=dict(credential.env) if credential is not None and credential.env else None,
        )

    async def get_provider_auth(self, provider: str) -> ResolvedAuth | None:
        model = next((m for m in self.registry.all() if m.provider == provider), None)
        if model is None or not (self.has_auth(model) or provider == LLAMA_ROUTER):
            return None
        resolved = await self.get_api_key_and_headers(model)
        return resolved if resolved.ok else None

    async def get_api_key_for_provider(self, provider: str) -> str | None:
        resolved = await self.get_provider_auth(provider)
        return resolved.api_key if resolved is not None else None

    def get_registered_provider_ids(self) -> list[str]:
        return list(dict.fromkeys(name for ext in self.extensions() for name in ext.providers))
