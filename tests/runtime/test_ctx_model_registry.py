"""``ctx.model_registry``: Pi's ModelRegistry methods over the real registry (models.json, auth.json, the
environment, an extension's provider, a stored login), through a real session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.extensions.api import AuthStatus, ExtensionAPI, ExtensionContext, ModelLookup
from tests.runtime.harness import inline_extension, start_session

CORP = {
    "baseUrl": "https://llm.corp.example/v1",
    "api": "openai-completions",
    "apiKey": "$CORP_KEY",
    "headers": {"x-team": "tools"},
    "models": [{"id": "corp-large"}],
}


async def registry_of(tmp_path: Path) -> tuple[ModelLookup, object]:
    agent_dir().mkdir(parents=True, exist_ok=True)
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"corp": CORP}}))
    login = {"type": "oauth", "access": "sk-ant-oat01-ctx", "refresh": "r", "expires": 9_999_999_999_999}
    (agent_dir() / "auth.json").write_text(
        json.dumps({"anthropic": login, "groq": {"type": "api_key", "key": "gsk-1"}})
    )
    seen: list[ExtensionContext] = []

    def register(api: ExtensionAPI) -> None:
        api.register_provider(
            "gateway", {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "gw-key",
                        "authHeader": True, "models": [{"id": "gw-1"}]},
        )  # fmt: skip
        api.on("session_start", lambda _e, ctx: seen.append(ctx))

    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    return seen[0].model_registry, run


async def test_models_and_providers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORP_KEY", "k-123")
    registry, _run = await registry_of(tmp_path)
    corp = registry.find("corp", "corp-large")
    assert corp is not None and corp in registry.get_all() and corp in registry.get_available()
    assert registry.has_configured_auth(corp)
    openai = registry.find("openai", "gpt-4o")
    assert openai is not None and openai in registry.get_all() and not registry.has_configured_auth(openai)
    provider = registry.get_provider("corp")
    assert provider is not None and provider.models == [corp] and provider.base_url == CORP["baseUrl"]
    assert registry.get_provider_display_name("openai") == "OpenAI"
    assert registry.get_provider_display_name("corp") == "corp"
    assert registry.get_provider("no-such") is None
    assert registry.get_registered_provider_ids() == ["gateway"]
    assert registry.get_error() is None


async def test_auth_status_says_where_the_key_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_KEY", "k-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    registry, _run = await registry_of(tmp_path)
    assert registry.get_provider_auth_status("corp") == AuthStatus(True, "models_json_key")
    assert registry.get_provider_auth_status("openai") == AuthStatus(True, "environment", "OPENAI_API_KEY")
    assert registry.get_provider_auth_status("groq") == AuthStatus(True, "stored")
    assert registry.get_provider_auth_status("anthropic") == AuthStatus(True, "stored", "OAuth")
    assert registry.get_provider_auth_status("mistral") == AuthStatus(False)
    claude = registry.find("anthropic", "claude-sonnet-4-5")
    assert claude is not None and registry.is_using_oauth(claude)


async def test_keys_and_headers_resolved_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORP_KEY", "k-123")
    registry, _run = await registry_of(tmp_path)
    corp = registry.find("corp", "corp-large")
    assert corp is not None
    resolved = await registry.get_api_key_and_headers(corp)
    assert resolved.ok and resolved.api_key == "k-123" and resolved.headers == {"x-team": "tools"}
    gateway = registry.find("gateway", "gw-1")
    assert gateway is not None
    bearer = await registry.get_api_key_and_headers(gateway)
    assert bearer.ok and bearer.headers == {"Authorization": "Bearer gw-key"}  # authHeader
    claude = registry.find("anthropic", "claude-sonnet-4-5")
    assert claude is not None
    assert (await registry.get_api_key_and_headers(claude)).api_key == "sk-ant-oat01-ctx"
    assert await registry.get_api_key_for_provider("groq") == "gsk-1"
    monkeypatch.delenv("CORP_KEY")
    missing = await registry.get_api_key_and_headers(corp)
    assert missing.ok and missing.api_key is None and missing.headers == {"x-team": "tools"}  # as Pi
    assert await registry.get_provider_auth("corp") is None
    assert await registry.get_api_key_for_provider("mistral") is None


async def test_refresh_reads_models_json_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORP_KEY", "k-123")
    registry, _run = await registry_of(tmp_path)
    more = {**CORP, "models": [{"id": "corp-large"}, {"id": "corp-small"}]}
    (agent_dir() / "models.json").write_text(json.dumps({"providers": {"corp": more}}))
    assert registry.find("corp", "corp-small") is None
    registry.refresh()
    assert registry.find("corp", "corp-small") is not None
    (agent_dir() / "models.json").write_text("{ broken")
    registry.refresh()
    assert "models.json" in (registry.get_error() or "")
