"""Subscription logins (OAuth) for the providers Pi 0.84.4 signs in to, and the pieces they share.

``builtin_flow(provider)`` is the login of a built-in provider (its module is imported on first use):
``anthropic`` (Claude Pro/Max), ``openai-codex`` (ChatGPT Plus/Pro), ``github-copilot``, ``xai``,
``kimi-coding``, ``openrouter`` and ``radius``. Extensions add their own (``api.register_provider`` with
``oauth``). Storing, locking and refreshing credentials is the model layer's job (``caddie.models.oauth``).
"""

from __future__ import annotations

import importlib

from caddie.ai.oauth.types import OAuthFlow

BUILTIN_FLOWS: dict[str, str] = {
    "anthropic": "caddie.ai.oauth.anthropic",
    "openai-codex": "caddie.ai.oauth.openai_codex",
    "github-copilot": "caddie.ai.oauth.github_copilot",
    "xai": "caddie.ai.oauth.xai",
    "kimi-coding": "caddie.ai.oauth.kimi",
    "openrouter": "caddie.ai.oauth.openrouter",
    "radius": "caddie.ai.oauth.radius",
}
"""Provider id → the module whose ``FLOW`` logs in to it."""

FLOW_NAMES: dict[str, tuple[str, str | None]] = {
    "anthropic": ("Anthropic (Claude Pro/Max)", None),
    "openai-codex": ("OpenAI (ChatGPT Plus/Pro)", None),
    "github-copilot": ("GitHub Copilot", None),
    "xai": ("xAI (Grok/X subscription)", "Sign in with SuperGrok or X Premium"),
    "kimi-coding": ("Kimi Code (subscription)", "Sign in with Kimi Code"),
    "openrouter": ("OpenRouter OAuth", "Sign in with OpenRouter"),
    "radius": ("Radius", None),
}
"""(name, login label) of each built-in login, without importing its module (for menus)."""


def builtin_flow(provider: str) -> OAuthFlow | None:
    module = BUILTIN_FLOWS.get(provider)
    if module is None:
        return None
    flow: OAuthFlow = importlib.import_module(module).FLOW
    return flow
