"""The built-in catalogue: generated from Pi 0.84.4's, typed, and what the registry builds on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from caddie.ai import catalogue
from caddie.ai.model import Api, ModelCompat
from caddie.models import ModelNotFound, ModelRegistry
from tests.interop.pi import PI_DIR, REPO, require_pi

CATALOGUE = REPO / "src" / "caddie" / "ai" / "catalogue.json"


def test_the_committed_catalogue_is_what_the_script_makes_from_pi() -> None:
    require_pi()  # fails under CI=1 when Pi is missing
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_catalogue.py"), "--check", "--pi-dir", str(PI_DIR)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_the_script_keeps_exactly_pis_facts_for_the_apis_caddie_speaks(tmp_path: Path) -> None:
    """Every Pi model of a supported API is in the file, field for field; none of another API is."""
    require_pi()
    pi_ai = PI_DIR / "node_modules" / "@earendil-works" / "pi-ai"
    node = require_pi()
    raw = subprocess.run(
        [node, str(REPO / "scripts" / "pi_catalogue.mjs"), str(pi_ai)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    pi = json.loads(raw)
    ours = json.loads(CATALOGUE.read_text())
    apis = set(get_args(Api)) - {"faux"}
    expected = {(p["id"], m["id"]): m for p in pi["providers"] for m in p["models"] if m["api"] in apis}
    got = {(name, m["id"]): m for name, p in ours["providers"].items() for m in p["models"]}
    assert set(got) == set(expected)
    for key, model in got.items():
        pi_model = expected[key]
        for field in ("contextWindow", "maxTokens", "input", "reasoning", "cost", "baseUrl", "api"):
            assert model[field] == pi_model[field], (key, field)
    by_id = {p["id"]: p for p in pi["providers"]}
    for name, provider in ours["providers"].items():
        pi_keys = [
            k for k in by_id[name]["envKeys"] if k not in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN")
        ]
        assert provider["envKeys"] == pi_keys and provider["name"] == by_id[name]["name"]


def test_providers_carry_pis_variables_and_base_urls() -> None:
    providers = catalogue.providers()
    expected = {
        "anthropic": ("ANTHROPIC_API_KEY", "anthropic-messages"),
        "openai": ("OPENAI_API_KEY", "openai-responses"),
        "google": ("GEMINI_API_KEY", "google-generative-ai"),
        "azure-openai-responses": ("AZURE_OPENAI_API_KEY", "azure-openai-responses"),
        "cerebras": ("CEREBRAS_API_KEY", "openai-completions"),
        "together": ("TOGETHER_API_KEY", "openai-completions"),
        "fireworks": ("FIREWORKS_API_KEY", "anthropic-messages"),
        "huggingface": ("HF_TOKEN", "openai-completions"),
        "nvidia": ("NVIDIA_API_KEY", "openai-completions"),
        "vercel-ai-gateway": ("AI_GATEWAY_API_KEY", "anthropic-messages"),
        "zai": ("ZAI_API_KEY", "openai-completions"),
        "kimi-coding": ("KIMI_API_KEY", "anthropic-messages"),
        "minimax": ("MINIMAX_API_KEY", "anthropic-messages"),
        "opencode": ("OPENCODE_API_KEY", "openai-responses"),
        "cloudflare-workers-ai": ("CLOUDFLARE_API_KEY", "openai-completions"),
    }
    for name, (key, api) in expected.items():
        info = providers[name]
        assert (info.env_keys[0], info.api) == (key, api), name
    assert providers["anthropic"].env_keys == ("ANTHROPIC_API_KEY",)  # Pi's bearer-token variables left out
    assert providers["cloudflare-ai-gateway"].base_url_env == (
        "CLOUDFLARE_ACCOUNT_ID",
        "CLOUDFLARE_GATEWAY_ID",
    )
    assert (
        providers["openai"].base_url == "https://api.openai.com/v1" and providers["openai"].title == "OpenAI"
    )
    assert providers["mistral"].api == "mistral-conversations" and providers["mistral"].env_keys == (
        "MISTRAL_API_KEY",
    )
    assert providers["amazon-bedrock"].api == "bedrock-converse-stream"  # every vendor, as in Pi
    assert providers["google-vertex"].api == "google-vertex"
    assert (
        providers["openai-codex"].api == "openai-codex-responses" and providers["openai-codex"].env_keys == ()
    )
    for local in ("ollama", "lmstudio", "llamacpp", "vllm", "faux"):
        assert not providers[local].needs_key and providers[local].open_models


def test_models_have_windows_modalities_reasoning_and_prices() -> None:
    models = {m.ref: m for m in catalogue.builtin_models()}
    assert len(models) > 900
    opus = models["anthropic/claude-opus-4-8"]
    assert (opus.context_window, opus.max_tokens, opus.reasoning, opus.input) == (
        1_000_000,
        128_000,
        True,
        ["text", "image"],
    )
    assert (opus.cost.input, opus.cost.output, opus.cost.cache_read, opus.cost.cache_write) == (
        5,
        25,
        0.5,
        6.25,
    )
    assert opus.compat is not None and opus.compat.force_adaptive_thinking is True
    assert models["google/gemini-2.5-pro"].api == "google-generative-ai"
    tiered = models["github-copilot/gpt-5.5"].cost.tiers  # Pi's request-wide price tiers come along
    assert tiered and tiered[0].input_tokens_above > 0
    assert all(m.api in get_args(Api) for m in models.values())
    assert models["faux/echo"].name == "Faux Echo"


def test_compat_is_typed_with_camel_case_on_the_wire() -> None:
    compat = ModelCompat.from_json(
        {
            "supportsStore": False,
            "maxTokensField": "max_tokens",
            "supportsOpenAIGrammarTools": True,
            "other": 1,
        }
    )
    assert compat.supports_store is False and compat.max_tokens_field == "max_tokens"
    assert compat.supports_open_ai_grammar_tools is True
    assert compat.to_json() == {
        "supportsStore": False,
        "maxTokensField": "max_tokens",
        "supportsOpenAIGrammarTools": True,
    }
    assert compat.merged(ModelCompat(supports_store=True)).supports_store is True
    assert compat.merged(ModelCompat()).supports_store is False  # unset flags do not override
    with pytest.raises(msgspec.ValidationError, match="supportsStore"):
        ModelCompat.from_json({"supportsStore": "no"})


def test_a_wrongly_typed_compat_flag_in_models_json_is_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "lab": {
                        "baseUrl": "http://127.0.0.1:1/v1",
                        "api": "openai-completions",
                        "models": [
                            {"id": "bad", "compat": {"supportsStore": "no"}},
                            {"id": "good", "compat": {"supportsStore": False}},
                        ],
                    }
                }
            }
        )
    )
    reg = ModelRegistry(path, env={})
    assert len(reg.warnings) == 1
    assert "providers.lab.models[0].compat" in reg.warnings[0] and "supportsStore" in reg.warnings[0]
    good = reg.find("lab", "good")
    assert good is not None and good.compat == ModelCompat(supports_store=False)
    assert reg.find("lab", "bad") is None


def test_models_json_overrides_catalogue_models(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "openai": {
                        "baseUrl": "https://proxy.example/v1",
                        "modelOverrides": {
                            "gpt-5.5": {"contextWindow": 50_000, "compat": {"supportsStore": False}}
                        },
                    }
                }
            }
        )
    )
    reg = ModelRegistry(path, env={})
    model = reg.resolve("openai/gpt-5.5")
    assert model.base_url == "https://proxy.example/v1" and model.context_window == 50_000
    assert model.compat is not None and model.compat.supports_store is False
    assert model.cost.input > 0  # the catalogue's price stays


def test_an_unknown_model_suggests_the_closest_ids(tmp_path: Path) -> None:
    reg = ModelRegistry(tmp_path / "none.json", env={})
    with pytest.raises(ModelNotFound) as info:
        reg.resolve("gemini-2.5-pr")
    assert info.value.suggestions[0] == "google/gemini-2.5-pro"
    assert "Did you mean google/gemini-2.5-pro?" in str(info.value)
    with pytest.raises(ModelNotFound) as named:
        reg.resolve("openai/gpt-5.55")
    assert named.value.suggestions and all(
        s.startswith("openai/gpt-5.5") for s in named.value.suggestions[:1]
    )


def test_cloudflare_base_urls_are_filled_from_the_environment(tmp_path: Path) -> None:
    ref = next(m.ref for m in catalogue.builtin_models() if m.provider == "cloudflare-workers-ai")
    reg = ModelRegistry(tmp_path / "none.json", env={"CLOUDFLARE_API_KEY": "cf-key-123456"})
    model = reg.resolve(ref)
    assert not reg.has_auth(model)  # the account id is still missing
    assert "CLOUDFLARE_ACCOUNT_ID" in reg.key_hint(model)
    reg = ModelRegistry(
        tmp_path / "none.json", env={"CLOUDFLARE_API_KEY": "k" * 12, "CLOUDFLARE_ACCOUNT_ID": "acct42"}
    )
    model = reg.resolve(ref)
    assert reg.has_auth(model) and "/accounts/acct42/ai/v1" in model.base_url


def test_a_key_in_the_environment_picks_that_providers_default(tmp_path: Path) -> None:
    reg = ModelRegistry(
        tmp_path / "none.json", env={"GEMINI_API_KEY": "g" * 20, "CADDIE_OLLAMA_URL": "http://127.0.0.1:9"}
    )
    model = reg.default_model(probe_local=False)
    assert model.ref == "google/gemini-3.1-pro-preview"
