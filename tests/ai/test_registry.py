"""The model registry: catalogue, models.json (Pi's format), keys, and default-model resolution."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.model import Model
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER
from caddie.ai.providers.thinking import clamp_thinking_level
from caddie.config.settings import Settings
from caddie.models import ModelNotFound, ModelRegistry, NoModelConfigured, probe_ollama, resolve_config_value
from tests.support.fake_llm import FakeLLM


def registry(tmp_path: Path, models_json: Any = None, **env: str) -> ModelRegistry:
    path = tmp_path / "models.json"
    if models_json is not None:
        path.write_text(
            models_json if isinstance(models_json, str) else json.dumps(models_json), encoding="utf-8"
        )
    return ModelRegistry(path, env=env)


def settings(**data: Any) -> Settings:
    return Settings(data=data)


@pytest.fixture
def ollama() -> Iterator[FakeLLM]:
    with FakeLLM(ollama_models=["qwen2.5-coder:7b", "llama3.1:8b"]) as server:
        yield server


# -- catalogue and lookup ------------------------------------------------------------------------------


def test_builtin_catalogue_has_current_models_with_prices(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    sonnet = reg.find("anthropic", "claude-sonnet-5")
    assert sonnet is not None
    assert (sonnet.api, sonnet.base_url, sonnet.reasoning, sonnet.supports_images) == (
        "anthropic-messages",
        "https://api.anthropic.com",
        True,
        True,
    )
    assert sonnet.cost.input == 2 and sonnet.context_window == 1_000_000
    providers = {m.provider for m in reg.all()}
    assert {"anthropic", "openai", "openrouter", "groq", "deepseek", "xai"} <= providers
    for ref in ("openai/gpt-5.5", "openai/gpt-4.1", "openai/o3", "openai/o4-mini", "openai/gpt-4o"):
        assert reg.resolve(ref).api == "openai-responses"  # as in Pi 0.84.4


def test_resolve_accepts_provider_slash_id_including_ids_with_slashes(tmp_path: Path) -> None:
    reg = registry(tmp_path, OPENROUTER_API_KEY="k")
    assert reg.resolve("openrouter/anthropic/claude-sonnet-5").provider == "openrouter"
    assert reg.resolve("groq/openai/gpt-oss-120b").provider == "groq"
    assert reg.resolve("claude-haiku-4-5").provider == "anthropic"


def test_bare_ids_prefer_a_provider_with_a_key(tmp_path: Path) -> None:
    reg = registry(tmp_path, GROQ_API_KEY="g")
    assert reg.resolve("openai/gpt-oss-120b").provider == "groq"


def test_local_providers_accept_any_model_id_without_a_key(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    model = reg.resolve("ollama/qwen2.5-coder:32b")
    assert (model.provider, model.id, model.api) == ("ollama", "qwen2.5-coder:32b", "openai-completions")
    assert reg.api_key_for(model) == NO_KEY_PLACEHOLDER
    assert reg.resolve("lmstudio/any").base_url == "http://127.0.0.1:1234/v1"
    assert reg.resolve("faux/echo").api == "faux"


def test_unknown_models_say_how_to_name_or_add_one(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    with pytest.raises(ModelNotFound, match="provider/model-id") as bare:
        reg.resolve("no-such-model")
    assert "models.json" in str(bare.value)
    with pytest.raises(ModelNotFound, match=r"caddie --list-models anthropic") as named:
        reg.resolve("anthropic/claude-sonet-5")
    assert named.value.suggestions[0] == "anthropic/claude-sonnet-5"
    assert "Did you mean anthropic/claude-sonnet-5" in str(named.value)


# -- keys -----------------------------------------------------------------------------------------------


def test_keys_come_from_the_usual_environment_variables(tmp_path: Path) -> None:
    reg = registry(tmp_path, ANTHROPIC_API_KEY="sk-ant-x", DEEPSEEK_API_KEY="ds")
    assert reg.api_key_for(reg.resolve("anthropic/claude-opus-5")) == "sk-ant-x"
    assert reg.api_key_for(reg.resolve("deepseek/deepseek-v4-pro")) == "ds"
    assert reg.api_key_for(reg.resolve("openai/gpt-5.5")) is None
    available = {m.provider for m in reg.available()}
    assert available >= {"anthropic", "deepseek"} and "openai" not in available and "faux" not in available


def test_config_values_resolve_like_pi(tmp_path: Path) -> None:
    env = {"MY_KEY": "from-env", "A": "x", "B": "y"}
    assert resolve_config_value("$MY_KEY", env) == "from-env"
    assert resolve_config_value("${A}_${B}", env) == "x_y"
    assert resolve_config_value("MY_KEY", env) == "from-env"  # a bare variable name (older Pi configs)
    assert resolve_config_value("sk-literal", env) == "sk-literal"
    assert resolve_config_value("$$literal", env) == "$literal"
    assert resolve_config_value("$MISSING", env) is None
    assert resolve_config_value("!echo from-command", env) == "from-command"


# -- models.json ------------------------------------------------------------------------------------------


def test_models_json_adds_a_local_provider_in_pis_format(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "lm": {
                    "baseUrl": "http://localhost:1234/v1",
                    "api": "openai-completions",
                    "compat": {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"},
                    "models": [
                        {"id": "qwen3-coder"},
                        {
                            "id": "gpt-oss:20b",
                            "name": "GPT OSS",
                            "reasoning": True,
                            "input": ["text", "image"],
                            "contextWindow": 65536,
                            "maxTokens": 8192,
                            "cost": {"input": 0.1, "output": 0.2},
                            "compat": {"supportsReasoningEffort": False},
                            "thinkingLevelMap": {"off": None},
                        },
                    ],
                }
            }
        },
    )
    assert reg.warnings == []
    plain = reg.resolve("lm/qwen3-coder")
    assert (plain.context_window, plain.max_tokens, plain.input, plain.reasoning) == (
        128_000,
        16_384,
        ["text"],
        False,
    )
    rich = reg.resolve("lm/gpt-oss:20b")
    assert (rich.name, rich.context_window, rich.max_tokens, rich.supports_images) == (
        "GPT OSS",
        65536,
        8192,
        True,
    )
    assert rich.cost.output == 0.2
    assert rich.compat is not None and rich.compat.to_json() == {
        "supportsDeveloperRole": False,
        "maxTokensField": "max_tokens",
        "supportsReasoningEffort": False,
    }
    assert rich.thinking_level_map == {"off": None}
    assert reg.api_key_for(rich) == NO_KEY_PLACEHOLDER  # a local server needs no key
    assert rich in reg.available()


def test_models_json_api_key_forms(tmp_path: Path) -> None:
    spec = {
        "providers": {
            name: {
                "baseUrl": "https://example.com/v1",
                "api": "openai-completions",
                "apiKey": key,
                "models": [{"id": "m"}],
            }
            for name, key in (
                ("env", "$PROXY_KEY"),
                ("bare", "PROXY_KEY"),
                ("lit", "sk-lit"),
                ("cmd", "!echo c0mmand"),
                ("gone", "$NOPE"),
            )
        }
    }
    reg = registry(tmp_path, spec, PROXY_KEY="p-key")
    keys = {name: reg.api_key_for(reg.resolve(f"{name}/m")) for name in ("env", "bare", "lit", "cmd", "gone")}
    assert keys == {"env": "p-key", "bare": "p-key", "lit": "sk-lit", "cmd": "c0mmand", "gone": None}
    assert not reg.has_auth(reg.resolve("gone/m"))


def test_models_json_overrides_a_builtin_providers_base_url_and_merges_models(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "anthropic": {
                    "baseUrl": "https://proxy.example.com",
                    "headers": {"x-team": "$TEAM"},
                    "modelOverrides": {"claude-haiku-4-5": {"name": "Haiku (proxy)", "maxTokens": 1000}},
                    "models": [{"id": "claude-sonnet-5", "contextWindow": 200000}, {"id": "claude-private"}],
                }
            }
        },
        TEAM="blue",
        ANTHROPIC_API_KEY="k",
    )
    sonnet = reg.resolve("anthropic/claude-sonnet-5")
    assert (sonnet.base_url, sonnet.context_window) == ("https://proxy.example.com", 200000)
    haiku = reg.resolve("anthropic/claude-haiku-4-5")
    assert (haiku.base_url, haiku.name, haiku.max_tokens, haiku.headers) == (
        "https://proxy.example.com",
        "Haiku (proxy)",
        1000,
        {"x-team": "blue"},
    )
    private = reg.resolve("anthropic/claude-private")
    assert private.api == "anthropic-messages" and reg.api_key_for(private) == "k"
    assert len([m for m in reg.all() if m.id == "claude-sonnet-5" and m.provider == "anthropic"]) == 1


def test_invalid_json_is_one_line_naming_the_file_and_builtins_still_load(tmp_path: Path) -> None:
    reg = registry(tmp_path, '{"providers": {"x": ')
    assert len(reg.warnings) == 1
    line = reg.warnings[0]
    assert "\n" not in line and str(tmp_path / "models.json") in line and "not valid JSON" in line
    assert reg.find("anthropic", "claude-sonnet-5") is not None


def test_bad_entries_are_reported_and_skipped_one_by_one(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "ok": {
                    "baseUrl": "http://127.0.0.1:1/v1",
                    "api": "openai-completions",
                    "models": [{"id": "fine"}],
                },
                "resp": {"baseUrl": "http://x/v1", "api": "no-such-api", "models": [{"id": "m"}]},
                "nourl": {"api": "openai-completions", "models": [{"id": "m"}]},
                "badmodels": {
                    "baseUrl": "http://127.0.0.1:2/v1",
                    "api": "openai-completions",
                    "models": [{"name": "no id"}, {"id": "neg", "contextWindow": -5}, {"id": "good"}],
                },
                "notobj": 5,
            }
        },
    )
    text = "\n".join(reg.warnings)
    assert "providers.resp.api: 'no-such-api' is not an API caddie supports" in text
    assert "providers.nourl: has models but no baseUrl" in text
    assert 'providers.badmodels.models[0]: needs a string "id"' in text
    assert "providers.badmodels.models[1].contextWindow: must be a positive integer" in text
    assert "providers.notobj: must be an object" in text
    assert all(line.startswith(str(tmp_path / "models.json")) for line in reg.warnings)
    assert reg.find("ok", "fine") is not None and reg.find("badmodels", "good") is not None
    assert reg.find("badmodels", "neg") is None


def test_a_top_level_that_is_not_pis_shape_is_reported(tmp_path: Path) -> None:
    reg = registry(tmp_path, {"models": []})
    assert reg.warnings and 'expected {"providers": {...}}' in reg.warnings[0]


# -- default model ------------------------------------------------------------------------------------------


def test_settings_default_wins(tmp_path: Path) -> None:
    reg = registry(tmp_path, ANTHROPIC_API_KEY="k")
    chosen = reg.default_model(settings(defaultProvider="openai", defaultModel="gpt-4.1"), probe_local=False)
    assert (chosen.provider, chosen.id) == ("openai", "gpt-4.1")
    only_provider = reg.default_model(settings(defaultProvider="deepseek"), probe_local=False)
    assert only_provider.id == "deepseek-v4-pro"


def test_a_settings_default_that_does_not_exist_says_where_to_fix_it(tmp_path: Path) -> None:
    reg = registry(tmp_path)
    with pytest.raises(NoModelConfigured, match='Fix "defaultProvider"/"defaultModel"'):
        reg.default_model(settings(defaultProvider="anthropic", defaultModel="claude-0"), probe_local=False)


def test_anthropic_key_picks_a_claude_sonnet_then_openai_key_a_gpt(tmp_path: Path) -> None:
    both = registry(tmp_path, ANTHROPIC_API_KEY="a", OPENAI_API_KEY="o").default_model(probe_local=False)
    assert both.provider == "anthropic" and "sonnet" in both.id
    openai = registry(tmp_path, OPENAI_API_KEY="o").default_model(probe_local=False)
    assert openai.provider == "openai" and openai.id.startswith("gpt-")


def test_models_json_model_is_used_before_probing_ollama(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        {
            "providers": {
                "box": {
                    "baseUrl": "http://127.0.0.1:1/v1",
                    "api": "openai-completions",
                    "models": [{"id": "m1"}],
                }
            }
        },
    )
    assert reg.resolve("box/m1") == reg.default_model(probe_local=False)


def test_a_running_ollama_is_found_and_its_first_model_used(tmp_path: Path, ollama: FakeLLM) -> None:
    reg = registry(tmp_path, CADDIE_OLLAMA_URL=ollama.url)
    model = reg.default_model()
    assert (model.provider, model.id, model.base_url) == ("ollama", "qwen2.5-coder:7b", f"{ollama.url}/v1")
    assert reg.api_key_for(model) == NO_KEY_PLACEHOLDER
    assert ollama.requests[0].path == "/api/tags"


def test_an_openai_style_local_server_is_listed_through_v1_models(tmp_path: Path) -> None:
    with FakeLLM(openai_models=["local-model"]) as server:
        assert probe_ollama(server.url) == ["local-model"]
        assert [r.path for r in server.requests] == ["/api/tags", "/v1/models"]


def test_a_silent_port_is_given_up_on_within_the_probe_timeout() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts connections but never answers
        started = time.monotonic()
        assert probe_ollama(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.3) is None
        assert time.monotonic() - started < 0.8


def test_nothing_configured_raises_a_message_that_says_what_to_set(tmp_path: Path) -> None:
    reg = registry(tmp_path, CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    with pytest.raises(NoModelConfigured) as info:
        reg.default_model()
    text = str(info.value)
    for needle in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "--model",
        '"defaultProvider"',
        '"defaultModel"',
        "models.json",
        "Ollama",
    ):
        assert needle in text


def test_the_no_model_message_mentions_a_broken_models_json(tmp_path: Path) -> None:
    reg = registry(tmp_path, "{nope", CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    with pytest.raises(NoModelConfigured, match="not valid JSON"):
        reg.default_model()


# -- thinking levels ------------------------------------------------------------------------------------------


def test_thinking_levels_clamp_to_what_the_model_supports(tmp_path: Path) -> None:
    reg = registry(tmp_path)

    def level(ref: str, wanted: str) -> str:
        model: Model = reg.resolve(ref)
        return clamp_thinking_level(model, wanted)

    assert level("openai/gpt-5", "off") == "minimal"  # GPT-5 cannot switch reasoning off
    assert level("openai/gpt-5.1", "minimal") == "low"
    assert level("anthropic/claude-sonnet-5", "max") == "max"
    assert level("anthropic/claude-sonnet-4-5", "xhigh") == "high"
    assert level("openai/gpt-4.1", "high") == "off"


def test_every_models_json_example_in_the_docs_loads_cleanly(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
    blocks = re.findall(r"```json\n(.*?)```", docs.read_text(encoding="utf-8"), flags=re.S)
    examples = [b for b in blocks if '"providers"' in b]
    assert len(examples) >= 6
    for example in examples:
        reg = registry(tmp_path, example, MY_KEY="k", TEAM="t", PROXY_KEY="p")
        assert reg.warnings == [], example
