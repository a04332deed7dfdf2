"""GitLab Duo's models (Claude and GPT) through GitLab's AI gateway (Pi's custom-provider-gitlab-duo example).

``gitlab-duo`` has an API of its own (``gitlab-duo-api``) whose stream trades the GitLab token for a
short-lived direct-access token, then hands the request to caddie's built-in Anthropic Messages or OpenAI
Responses code (``stream_simple``) pointed at the gateway's proxy for that model.

    caddie -e examples/extensions/custom_provider_gitlab_duo --model gitlab-duo/claude-sonnet-4-6
    # then /login gitlab-duo (a browser page, then paste the callback URL), or set GITLAB_TOKEN=glpat-...

``GITLAB_URL`` and ``GITLAB_AI_GATEWAY_URL`` point it at a self-managed GitLab and its gateway (or a test
server).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

from caddie.extensions.api import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ErrorEvent,
    ExtensionAPI,
    Model,
    ProviderModelConfig,
    StreamOptions,
    stream_simple,
)

API = "gitlab-duo-api"
CLIENT_ID = "da4edff2e6ebd2bc3208611e2768bc1c1dd7be791dc5ff26ca34ca9ee44f7d4b"
REDIRECT_URI = "http://127.0.0.1:8080/callback"
DIRECT_ACCESS_TTL_S = 25 * 60

MODELS: list[tuple[str, str, str, tuple[float, float, float, float], int, int]] = [
    # id, name, backend, (input, output, cache read, cache write) $/M tokens, context window, max output
    ("claude-opus-4-8", "Claude Opus 4.8", "anthropic", (5, 25, 0.5, 6.25), 1_000_000, 128_000),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", "anthropic", (3, 15, 0.3, 3.75), 1_000_000, 64_000),
    ("claude-opus-4-5-20251101", "Claude Opus 4.5", "anthropic", (15, 75, 1.5, 18.75), 200_000, 32_000),
    ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "anthropic", (3, 15, 0.3, 3.75), 200_000, 16_384),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "anthropic", (1, 5, 0.1, 1.25), 200_000, 8_192),
    ("gpt-5.5-2026-04-23", "GPT-5.5", "openai", (5, 30, 0.5, 0), 272_000, 128_000),
    ("gpt-5.1-2025-11-13", "GPT-5.1", "openai", (2.5, 10, 0, 0), 128_000, 16_384),
    ("gpt-5-mini-2025-08-07", "GPT-5 Mini", "openai", (0.15, 0.6, 0, 0), 128_000, 16_384),
    ("gpt-5-codex", "GPT-5 Codex", "openai", (2.5, 10, 0, 0), 128_000, 16_384),
]
BACKENDS = {model_id: backend for model_id, _name, backend, *_rest in MODELS}


def gitlab_url() -> str:
    return os.environ.get("GITLAB_URL", "https://gitlab.com").rstrip("/")


def gateway_url() -> str:
    return os.environ.get("GITLAB_AI_GATEWAY_URL", "https://cloud.gitlab.com").rstrip("/")


# -- the direct-access token -------------------------------------------------------------------------
class DirectAccess:
    """GitLab's short-lived gateway token for a GitLab token, kept for 25 minutes (a login or renewal
    forgets it)."""

    def __init__(self) -> None:
        self._cached: tuple[str, str, dict[str, str], float] | None = (
            None  # gitlab token, token, headers, until
        )

    def forget(self) -> None:
        self._cached = None

    async def get(self, gitlab_token: str) -> tuple[str, dict[str, str]]:
        cached = self._cached
        if cached is not None and cached[0] == gitlab_token and cached[3] > time.time():
            return cached[1], cached[2]
        async with httpx2.AsyncClient(timeout=30) as client:
            response = await client.post(
                f"{gitlab_url()}/api/v4/ai/third_party_agents/direct_access",
                headers={"Authorization": f"Bearer {gitlab_token}"},
                json={"feature_flags": {"DuoAgentPlatformNext": True}},
            )
        if response.status_code == 403:
            raise RuntimeError(
                f"GitLab Duo access denied. Ensure GitLab Duo is enabled for your account. Error: {response.text}"
            )
        if response.status_code >= 400:
            raise RuntimeError(f"Failed to get direct access token: {response.status_code} {response.text}")
        data = response.json()
        headers = {str(k): str(v) for k, v in (data.get("headers") or {}).items()}
        self._cached = (gitlab_token, data["token"], headers, time.time() + DIRECT_ACCESS_TTL_S)
        return data["token"], headers


direct_access = DirectAccess()


# -- login ------------------------------------------------------------------------------------------------
async def _token(form: dict[str, str]) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=30) as client:
        response = await client.post(f"{gitlab_url()}/oauth/token", data={"client_id": CLIENT_ID, **form})
    if response.status_code >= 400:
        raise RuntimeError(f"Token request failed: {response.text}")
    data = response.json()
    direct_access.forget()
    created = int(data.get("created_at") or time.time())
    expires = (created + int(data["expires_in"])) * 1000 - 5 * 60 * 1000
    return {"access": data["access_token"], "refresh": data["refresh_token"], "expires": expires}


async def login(callbacks: Any) -> dict[str, Any]:
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode(
        {
            "client_id": CLIENT_ID,
            "redirect_uri": REDIRECT_URI,
            "response_type": "code",
            "scope": "api",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": secrets.token_hex(16),
        }
    )
    callbacks.on_auth(f"{gitlab_url()}/oauth/authorize?{query}")
    pasted = await callbacks.on_prompt("Paste the callback URL:")
    code = parse_qs(urlsplit(pasted.strip()).query).get("code", [""])[0]
    if not code:
        raise RuntimeError("No authorization code found in callback URL")
    return await _token(
        {
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": REDIRECT_URI,
        }
    )


async def refresh_token(credential: dict[str, Any]) -> dict[str, Any]:
    return await _token({"grant_type": "refresh_token", "refresh_token": credential["refresh"]})


# -- the request ------------------------------------------------------------------------------------------
async def stream_gitlab_duo(
    model: Model, context: Context, options: StreamOptions
) -> AsyncIterator[AssistantMessageEvent]:
    try:
        if not options.api_key:
            raise RuntimeError("No GitLab access token. Run /login gitlab-duo or set GITLAB_TOKEN")
        backend = BACKENDS.get(model.id)
        if backend is None:
            raise RuntimeError(f"Unknown model: {model.id}")
        token, headers = await direct_access.get(options.api_key)
    except Exception as e:  # said in the conversation, as a failed reply
        yield ErrorEvent("error", _failed(model, str(e) or type(e).__name__))
        return
    if backend == "anthropic":
        target = dataclasses.replace(
            model, api="anthropic-messages", base_url=f"{gateway_url()}/ai/v1/proxy/anthropic/"
        )
    else:
        target = dataclasses.replace(
            model, api="openai-responses", base_url=f"{gateway_url()}/ai/v1/proxy/openai/v1"
        )
    sent = dataclasses.replace(
        options,
        api_key="gitlab-duo",
        headers={**(options.headers or {}), **headers, "Authorization": f"Bearer {token}"},
    )
    async for event in stream_simple(target, context, sent):
        yield event


def _failed(model: Model, text: str) -> AssistantMessage:
    return AssistantMessage([], model.api, model.provider, model.id, stop_reason="error", error_message=text)


def register(api: ExtensionAPI) -> None:
    def model(row: tuple[str, str, str, tuple[float, float, float, float], int, int]) -> ProviderModelConfig:
        model_id, name, backend, (rate_in, rate_out, read, write), window, max_tokens = row
        config: ProviderModelConfig = {
            "id": model_id,
            "name": name,
            "reasoning": True,
            "input": ["text", "image"],
            "cost": {"input": rate_in, "output": rate_out, "cacheRead": read, "cacheWrite": write},
            "contextWindow": window,
            "maxTokens": max_tokens,
        }
        if backend == "anthropic":
            config["thinkingLevelMap"] = {"xhigh": "max"}
        return config

    api.register_provider(
        "gitlab-duo",
        {
            "baseUrl": "https://cloud.gitlab.com",
            "apiKey": "$GITLAB_TOKEN",
            "api": API,
            "models": [model(row) for row in MODELS],
            "oauth": {
                "name": "GitLab Duo",
                "login": login,
                "refreshToken": refresh_token,
                "getApiKey": lambda c: c["access"],
            },
            "streamSimple": stream_gitlab_duo,
        },
    )
