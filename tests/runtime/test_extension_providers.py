"""``api.register_provider`` / ``api.unregister_provider`` with the real host and model registry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caddie.config.paths import agent_dir
from caddie.extensions.api import ExtensionAPI, ProviderConfig
from caddie.runtime.factory import SessionBuild, SessionRequest, open_session
from tests.runtime.harness import RecordingUI, inline_extension

LOCAL: ProviderConfig = {
    "baseUrl": "http://127.0.0.1:9/v1",
    "apiKey": "$CORP_KEY",
    "api": "openai-completions",
    "models": [
        {"id": "corp-1", "name": "Corp One", "contextWindow": 64_000, "maxTokens": 4096, "reasoning": True},
        {"id": "corp-2", "input": ["text", "image"]},
    ],
}


async def _build(cwd: Path, register: Any, model: str | None = None, **request: Any) -> SessionBuild:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))
    return await open_session(
        SessionRequest(
            cwd=str(cwd),
            mode="print",
            model=model,
            session="memory",
            require_model=False,
            ui=RecordingUI(),
            inline_extensions=[inline_extension(register, "corp")],
            no_extensions=True,
            **request,
        )
    )


async def test_a_provider_registered_in_register_can_be_chosen_with_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORP_KEY", "s3cret")
    build = await _build(tmp_path, lambda api: api.register_provider("corp", LOCAL), model="corp/corp-1")
    model = build.session.model
    assert model is not None
    assert (model.provider, model.id, model.name) == ("corp", "corp-1", "Corp One")
    assert (model.base_url, model.api, model.context_window, model.max_tokens, model.reasoning) == (
        "http://127.0.0.1:9/v1",
        "openai-completions",
        64_000,
        4096,
        True,
    )
    assert build.registry.api_key_for(model) == "s3cret"
    two = build.registry.find("corp", "corp-2")
    assert two is not None and two.input == ["text", "image"] and two.context_window == 128_000
    assert "corp/corp-2" in [f"{m.provider}/{m.id}" for m in build.session.available_models()]
    assert build.warnings == []


async def test_a_config_without_models_changes_a_provider_caddie_knows(tmp_path: Path) -> None:
    build = await _build(
        tmp_path, lambda api: api.register_provider("anthropic", {"baseUrl": "https://proxy.example/a"})
    )
    anthropic = [m for m in build.registry.all() if m.provider == "anthropic"]
    assert anthropic, "the built-in Anthropic models are gone"
    assert {m.base_url for m in anthropic} == {"https://proxy.example/a"}


async def test_registration_after_start_applies_at_once_and_unregister_restores(tmp_path: Path) -> None:
    apis: list[ExtensionAPI] = []
    build = await _build(tmp_path, apis.append)
    api = apis[0]
    before = {m.base_url for m in build.registry.all() if m.provider == "openai"}
    assert build.registry.find("corp", "corp-1") is None

    api.register_provider("corp", LOCAL)
    api.register_provider("openai", {"baseUrl": "http://127.0.0.1:9/openai"})
    assert build.registry.find("corp", "corp-1") is not None
    assert {m.base_url for m in build.registry.all() if m.provider == "openai"} == {
        "http://127.0.0.1:9/openai"
    }

    api.unregister_provider("corp")
    api.unregister_provider("openai")
    assert build.registry.find("corp", "corp-1") is None
    assert {m.base_url for m in build.registry.all() if m.provider == "openai"} == before


async def test_a_config_caddie_cannot_use_is_refused_with_one_clear_sentence(tmp_path: Path) -> None:
    apis: list[ExtensionAPI] = []
    build = await _build(tmp_path, apis.append)
    api = apis[0]
    api.register_provider("corp", LOCAL)

    with pytest.raises(
        ValueError,
        match=r"unknown key\(s\) flavor; caddie understands api, apiKey, authHeader, baseUrl, compat",
    ):
        api.register_provider("corp", {"baseUrl": "http://x", "flavor": {}})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(ValueError, match='"oauth" needs a "login" function'):
        api.register_provider("corp", {"baseUrl": "http://x", "oauth": {}})
    with pytest.raises(ValueError, match=r"'responses' is not an API caddie supports"):
        api.register_provider("corp", {**LOCAL, "api": "responses"})
    with pytest.raises(ValueError, match="not a provider name"):
        api.register_provider("a/b", LOCAL)
    corp = build.registry.find("corp", "corp-1")
    assert corp is not None and corp.name == "Corp One", "a refused config replaced the working one"


async def test_problems_found_at_start_up_become_warnings_naming_the_extension(tmp_path: Path) -> None:
    bad: ProviderConfig = {"api": "openai-completions", "models": [{"id": "m", "contextWindow": -1}]}
    build = await _build(tmp_path, lambda api: api.register_provider("corp", {**bad, "baseUrl": "http://x"}))
    assert build.warnings == [
        "<corp>: provider corp.models[0].contextWindow: must be a positive integer; skipping this model."
    ]
    assert build.registry.find("corp", "m") is None


async def test_unknown_keys_inside_register_are_a_load_error(tmp_path: Path) -> None:
    ext = tmp_path / "corp.py"
    ext.write_text("def register(api):\n    api.register_provider('corp', {'flavor': None})\n")
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))
    build = await open_session(
        SessionRequest(
            cwd=str(tmp_path),
            mode="print",
            model=None,
            session="memory",
            require_model=False,
            extension_paths=[str(ext)],
        )
    )
    assert any(
        w.startswith(f"extension {ext} failed to load: ValueError: register_provider('corp'): unknown key(s)")
        for w in build.warnings
    ), build.warnings


async def test_reload_swaps_the_providers_of_the_old_extensions_for_the_new_ones(tmp_path: Path) -> None:
    ext = tmp_path / "corp.py"
    template = (
        "def register(api):\n"
        "    api.register_provider({name!r}, {{'baseUrl': 'http://127.0.0.1:9/v1', "
        "'api': 'openai-completions', 'apiKey': 'k', 'models': [{{'id': 'm'}}]}})\n"
    )
    ext.write_text(template.format(name="old"))
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))
    build = await open_session(
        SessionRequest(
            cwd=str(tmp_path),
            mode="print",
            model="old/m",
            session="memory",
            require_model=False,
            extension_paths=[str(ext)],
        )
    )
    assert build.session.model is not None and build.session.model.provider == "old"
    await build.session.start()
    ext.write_text(template.format(name="new"))
    await build.session.reload()
    assert build.registry.find("old", "m") is None
    assert build.registry.find("new", "m") is not None
