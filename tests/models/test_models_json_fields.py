"""models.json: a field caddie would ignore (a typo, a misplaced field) gets one line naming it; Pi's fields are read as
Pi reads them (``cost.tiers``, ``samplingParams``)."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.models.registry import ModelRegistry


def test_unknown_and_unsupported_fields_are_named(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    model = {"id": "m", "contextWindw": 5, "baseUrl": "http://x", "contextWindow": 9000}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k", "bogus": 1}
    path.write_text(json.dumps({"providers": {"x": {**provider, "models": [model]}}}))
    registry = ModelRegistry(path, env={})
    lines = [w.removeprefix(f"{path}: ") for w in registry.warnings]
    assert lines == [
        "providers.x.bogus: is not a models.json provider field; ignoring it.",
        "providers.x.models[0].contextWindw: is not a models.json model field; ignoring it.",
        "providers.x.models[0].baseUrl: is not a models.json model field; ignoring it.",
    ]
    assert registry.resolve("x/m").context_window == 9000  # the model itself still loads


def test_sampling_params_are_read_from_models_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    model = {"id": "m", "samplingParams": {"min_p": 0.05, "top_k": 20}}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    overrides = {"deepseek-v4-flash": {"samplingParams": {"top_k": 40, "temperature": 0.6}}}
    bad = {"id": "b", "samplingParams": [1]}
    path.write_text(
        json.dumps(
            {"providers": {"x": {**provider, "models": [model, bad]}, "y": {**provider, "models": [model]}}}
        )
    )
    registry = ModelRegistry(path, env={})
    assert registry.resolve("x/m").sampling_params == {"min_p": 0.05, "top_k": 20}
    assert [w.removeprefix(f"{path}: ") for w in registry.warnings] == [
        "providers.x.models[1].samplingParams: must be an object; skipping this model."
    ]
    path.write_text(json.dumps({"providers": {"deepseek": {"modelOverrides": overrides}}}))
    overridden = ModelRegistry(path, env={}).resolve("deepseek/deepseek-v4-flash")
    assert overridden.sampling_params == {"top_k": 40, "temperature": 0.6}


def test_cost_tiers_are_read_and_an_override_keeps_the_built_in_tiers_unless_it_names_its_own(
    tmp_path: Path,
) -> None:
    from caddie.ai.messages import Usage
    from caddie.ai.providers.cost import calculate_cost

    path = tmp_path / "models.json"
    tier = {"inputTokensAbove": 1000, "input": 10, "output": 20, "cacheRead": 1, "cacheWrite": 2}
    model = {"id": "m", "cost": {"input": 1, "output": 2, "tiers": [tier]}}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    overrides = {
        "gpt-5.6-luna": {"cost": {"input": 0.3}},  # built-in tiers kept (Pi: override.cost.tiers ?? model's)
    }
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "x": {**provider, "models": [model]},
                    "cloudflare-ai-gateway": {"modelOverrides": overrides},
                }
            }
        )
    )
    registry = ModelRegistry(path, env={})
    assert registry.warnings == []
    m = registry.resolve("x/m")
    small = calculate_cost(m, Usage(input=500, output=1000))
    large = calculate_cost(m, Usage(input=2000, output=1000))
    assert small.total == (500 * 1 + 1000 * 2) / 1e6
    assert large.total == (2000 * 10 + 1000 * 20) / 1e6  # the whole request at the tier's rates
    luna = registry.resolve("cloudflare-ai-gateway/gpt-5.6-luna")
    assert luna.cost.input == 0.3
    assert [t.input_tokens_above for t in luna.cost.tiers] == [272000]


def test_malformed_cost_tiers_skip_the_model_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    model = {"id": "m", "cost": {"input": 1, "tiers": [{"input": 5}]}}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    path.write_text(json.dumps({"providers": {"x": {**provider, "models": [model]}}}))
    registry = ModelRegistry(path, env={})
    assert [w.removeprefix(f"{path}: ") for w in registry.warnings] == [
        "providers.x.models[0].cost.tiers: must be a list of objects with a non-negative inputTokensAbove and "
        "rates; skipping this model."
    ]


def test_compat_flags_caddie_does_not_act_on_are_named_when_set(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    compat = {"supportsToolSearch": True, "deferredToolsMode": "kimi", "supportsOpenAIGrammarTools": False}
    model = {"id": "m", "compat": {"supportsOpenAIGrammarTools": True}}
    provider = {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "k"}
    path.write_text(json.dumps({"providers": {"x": {**provider, "compat": compat, "models": [model]}}}))
    registry = ModelRegistry(path, env={})
    lines = sorted(w.removeprefix(f"{path}: ").partition("; ignoring it: ")[0] for w in registry.warnings)
    assert lines == [  # supportsOpenAIGrammarTools is acted on (grammar tools: constrained_sampling)
        "providers.x.compat.deferredToolsMode: is not supported",
        "providers.x.compat.supportsToolSearch: is not supported",
    ]
    assert registry.resolve("x/m").compat is not None  # the flags are kept; the model loads
