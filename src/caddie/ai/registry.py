"""The model registry: which models exist, how to reach them, with which key, and which one to use.

Built in: a catalogue of well-known models (Anthropic, OpenAI, OpenRouter, Groq, DeepSeek, xAI), keyless
local providers that accept any model id (``ollama``, ``lmstudio``, ``llamacpp``, ``vllm``) and the
``faux`` test provider. On top: ``~/.caddie/agent/models.json`` in Pi's format (custom providers and
models, overrides of built-in providers' ``baseUrl``/``headers``/``apiKey``, ``modelOverrides``).

Keys come from models.json ``apiKey`` (``$ENV_VAR``, ``${ENV_VAR}``, ``!shell command``, a bare
environment variable name, or a literal) or from the provider's usual environment variable
(``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``...). Local servers need none.

A models.json that cannot be used never raises: each problem becomes one line in ``warnings`` (naming
the file and what is wrong) and the rest of the file still loads.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from caddie.ai import secrets
from caddie.ai.model import Model, ModelCost
from caddie.ai.providers._shared import (
    NO_KEY_PLACEHOLDER,
    clamp_thinking_level,
    is_local_base_url,
    supported_thinking_levels,
)
from caddie.config.paths import agent_dir
from caddie.config.settings import Settings, read_json_object

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_OLLAMA_URL",
    "NO_KEY_PLACEHOLDER",
    "SUPPORTED_APIS",
    "ModelNotFound",
    "ModelRegistry",
    "NoModelConfigured",
    "ProviderInfo",
    "clamp_thinking_level",
    "probe_ollama",
    "resolve_config_value",
    "supported_thinking_levels",
]

SUPPORTED_APIS = (
    "openai-completions",
    "openai-responses",
    "azure-openai-responses",
    "anthropic-messages",
    "google-generative-ai",
    "anthropic-bedrock",
    "anthropic-vertex",
    "faux",
)
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
OLLAMA_URL_ENV = "CADDIE_OLLAMA_URL"
OLLAMA_PROBE_TIMEOUT_S = 0.3
LOCAL_CONTEXT_WINDOW = 32_768
"""Context window assumed for models discovered on a local Ollama (override it in models.json)."""


class NoModelConfigured(Exception):
    """No model was named and none could be chosen; the message says exactly what to set."""


class ModelNotFound(LookupError):
    """A named model the registry does not know; the message says how to name or add one."""


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    name: str
    base_url: str
    api: str
    env_keys: tuple[str, ...] = ()
    needs_key: bool = True
    open_models: bool = False
    """Any model id resolves (local servers and faux): ``ollama/<anything>``."""
    default_model: str | None = None
    compat: dict[str, Any] | None = None


_LOCAL_COMPAT = {"supportsDeveloperRole": False, "supportsStore": False, "maxTokensField": "max_tokens"}

BUILTIN_PROVIDERS: dict[str, ProviderInfo] = {
    p.name: p
    for p in (
        ProviderInfo(
            "anthropic",
            "https://api.anthropic.com",
            "anthropic-messages",
            ("ANTHROPIC_API_KEY",),
            default_model="claude-sonnet-5",
        ),
        ProviderInfo(
            "openai",
            "https://api.openai.com/v1",
            "openai-responses",  # Pi's default API for openai/* models
            ("OPENAI_API_KEY",),
            default_model="gpt-5.5",
        ),
        ProviderInfo(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "openai-completions",
            ("OPENROUTER_API_KEY",),
            default_model="anthropic/claude-sonnet-5",
        ),
        ProviderInfo(
            "groq",
            "https://api.groq.com/openai/v1",
            "openai-completions",
            ("GROQ_API_KEY",),
            default_model="openai/gpt-oss-120b",
        ),
        ProviderInfo(
            "deepseek",
            "https://api.deepseek.com",
            "openai-completions",
            ("DEEPSEEK_API_KEY",),
            default_model="deepseek-v4-pro",
        ),
        ProviderInfo(
            "xai", "https://api.x.ai/v1", "openai-completions", ("XAI_API_KEY",), default_model="grok-4.6"
        ),
        ProviderInfo(
            "google",
            "https://generativelanguage.googleapis.com/v1beta",
            "google-generative-ai",
            ("GEMINI_API_KEY",),
            open_models=True,
            default_model="gemini-2.5-pro",
        ),
        ProviderInfo(
            "azure-openai-responses",
            "",
            "azure-openai-responses",
            ("AZURE_OPENAI_API_KEY",),
            open_models=True,
        ),
        ProviderInfo(  # AWS_BEARER_TOKEN_BEDROCK or the usual AWS credentials (read by the client)
            "amazon-bedrock",
            "",
            "anthropic-bedrock",
            ("AWS_BEARER_TOKEN_BEDROCK",),
            needs_key=False,
            open_models=True,
        ),
        ProviderInfo(  # Google application-default credentials (read by the client)
            "anthropic-vertex", "", "anthropic-vertex", needs_key=False, open_models=True
        ),
        ProviderInfo(
            "ollama",
            f"{DEFAULT_OLLAMA_URL}/v1",
            "openai-completions",
            needs_key=False,
            open_models=True,
            compat=_LOCAL_COMPAT,
        ),
        ProviderInfo(
            "lmstudio",
            "http://127.0.0.1:1234/v1",
            "openai-completions",
            needs_key=False,
            open_models=True,
            compat=_LOCAL_COMPAT,
        ),
        ProviderInfo(
            "llamacpp",
            "http://127.0.0.1:8080/v1",
            "openai-completions",
            needs_key=False,
            open_models=True,
            compat=_LOCAL_COMPAT,
        ),
        ProviderInfo(
            "vllm",
            "http://127.0.0.1:8000/v1",
            "openai-completions",
            needs_key=False,
            open_models=True,
            compat=_LOCAL_COMPAT,
        ),
        ProviderInfo(
            "faux", "http://localhost:0", "faux", needs_key=False, open_models=True, default_model="faux-1"
        ),
    )
}
"""Order matters: it breaks ties when a bare model id exists at several providers."""

_CLOUD_DEFAULT_ORDER = ("anthropic", "openai", "openrouter", "groq", "deepseek", "xai")


# --------------------------------------------------------------------------------------------------
# The built-in catalogue (context windows and prices per million tokens, as Pi 0.84 ships them)

_ADAPTIVE: dict[str, Any] = {"forceAdaptiveThinking": True}
_ADAPTIVE_NO_TEMP: dict[str, Any] = {"forceAdaptiveThinking": True, "supportsTemperature": False}
_XHIGH_MAX: dict[str, str | None] = {"xhigh": "xhigh", "max": "max"}
_GPT5_NEW: dict[str, str | None] = {"off": "none", "minimal": None, "xhigh": "xhigh"}
_NO_OFF_NO_MIN: dict[str, str | None] = {"off": None, "minimal": None}
_DEEPSEEK_COMPAT: dict[str, Any] = {
    "supportsStore": False,
    "supportsDeveloperRole": False,
    "maxTokensField": "max_tokens",
    "requiresReasoningContentOnAssistantMessages": True,
    "thinkingFormat": "deepseek",
}

# provider, id, name, reasoning, vision, context window, max output, (in, out, cache read, cache write),
# thinking level map, compat
_CatalogueRow = tuple[
    str,
    str,
    str,
    bool,
    bool,
    int,
    int,
    tuple[float, float, float, float],
    dict[str, str | None] | None,
    dict[str, Any] | None,
]
_CATALOGUE: tuple[_CatalogueRow, ...] = (
    ("anthropic", "claude-opus-5", "Claude Opus 5", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25), _XHIGH_MAX, _ADAPTIVE_NO_TEMP),
    ("anthropic", "claude-opus-4-8", "Claude Opus 4.8", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25), _XHIGH_MAX, _ADAPTIVE_NO_TEMP),
    ("anthropic", "claude-opus-4-7", "Claude Opus 4.7", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25), _XHIGH_MAX, _ADAPTIVE_NO_TEMP),
    ("anthropic", "claude-opus-4-6", "Claude Opus 4.6", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25), {"max": "max"}, _ADAPTIVE),
    ("anthropic", "claude-opus-4-5", "Claude Opus 4.5", True, True, 200_000, 64_000, (5, 25, 0.5, 6.25), None, None),
    ("anthropic", "claude-sonnet-5", "Claude Sonnet 5", True, True, 1_000_000, 128_000, (2, 10, 0.2, 2.5), _XHIGH_MAX, _ADAPTIVE),
    ("anthropic", "claude-sonnet-4-6", "Claude Sonnet 4.6", True, True, 1_000_000, 128_000, (3, 15, 0.3, 3.75), {"max": "max"}, _ADAPTIVE),
    ("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5", True, True, 1_000_000, 64_000, (3, 15, 0.3, 3.75), None, None),
    ("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5", True, True, 200_000, 64_000, (1, 5, 0.1, 1.25), None, None),
    ("openai", "gpt-5.5", "GPT-5.5", True, True, 272_000, 128_000, (5, 30, 0.5, 0), _GPT5_NEW, None),
    ("openai", "gpt-5.4", "GPT-5.4", True, True, 272_000, 128_000, (2.5, 15, 0.25, 0), _GPT5_NEW, None),
    ("openai", "gpt-5.4-mini", "GPT-5.4 mini", True, True, 400_000, 128_000, (0.75, 4.5, 0.075, 0), _GPT5_NEW, None),
    ("openai", "gpt-5.2", "GPT-5.2", True, True, 400_000, 128_000, (1.75, 14, 0.175, 0), _GPT5_NEW, None),
    ("openai", "gpt-5.1", "GPT-5.1", True, True, 400_000, 128_000, (1.25, 10, 0.125, 0), {"off": "none", "minimal": None}, None),
    ("openai", "gpt-5", "GPT-5", True, True, 400_000, 128_000, (1.25, 10, 0.125, 0), {"off": None}, None),
    ("openai", "gpt-5-mini", "GPT-5 Mini", True, True, 400_000, 128_000, (0.25, 2, 0.025, 0), {"off": None}, None),
    ("openai", "gpt-5-nano", "GPT-5 Nano", True, True, 400_000, 128_000, (0.05, 0.4, 0.005, 0), {"off": None}, None),
    ("openai", "gpt-4.1", "GPT-4.1", False, True, 1_047_576, 32_768, (2, 8, 0.5, 0), None, None),
    ("openai", "gpt-4.1-mini", "GPT-4.1 mini", False, True, 1_047_576, 32_768, (0.4, 1.6, 0.1, 0), None, None),
    ("openai", "gpt-4.1-nano", "GPT-4.1 nano", False, True, 1_047_576, 32_768, (0.1, 0.4, 0.025, 0), None, None),
    ("openai", "gpt-4o", "GPT-4o", False, True, 128_000, 16_384, (2.5, 10, 1.25, 0), None, None),
    ("openai", "gpt-4o-mini", "GPT-4o mini", False, True, 128_000, 16_384, (0.15, 0.6, 0.075, 0), None, None),
    ("openai", "o3", "o3", True, True, 200_000, 100_000, (2, 8, 0.5, 0), _NO_OFF_NO_MIN, None),
    ("openai", "o4-mini", "o4-mini", True, True, 200_000, 100_000, (1.1, 4.4, 0.275, 0), _NO_OFF_NO_MIN, None),
    ("openai", "o3-mini", "o3-mini", True, False, 200_000, 100_000, (1.1, 4.4, 0.55, 0), _NO_OFF_NO_MIN, None),
    ("openrouter", "anthropic/claude-sonnet-5", "Anthropic: Claude Sonnet 5", True, True, 1_000_000, 128_000, (2, 10, 0.2, 2.5),
     {"off": "none", "minimal": None, "xhigh": "xhigh", "max": "max"}, None),
    ("openrouter", "anthropic/claude-opus-4.8", "Anthropic: Claude Opus 4.8", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25),
     {"off": "none", "minimal": None, "xhigh": "xhigh", "max": "max"}, None),
    ("openrouter", "openai/gpt-5.5", "OpenAI: GPT-5.5", True, True, 1_050_000, 128_000, (5, 30, 0.5, 0), _GPT5_NEW, None),
    ("openrouter", "openai/gpt-oss-120b", "OpenAI: gpt-oss-120b", True, False, 131_072, 117_964, (0.037, 0.17, 0, 0), _NO_OFF_NO_MIN, None),
    ("openrouter", "moonshotai/kimi-k2.6", "MoonshotAI: Kimi K2.6", True, True, 262_144, 235_929, (0.95, 4, 0.16, 0), None,
     {"requiresReasoningContentOnAssistantMessages": True}),
    ("openrouter", "deepseek/deepseek-v4-pro", "DeepSeek: DeepSeek V4 Pro", True, False, 1_024_000, 384_000,
     (0.741588, 1.483176, 0.061799, 0), {"off": "none", "minimal": None, "low": None, "medium": None, "xhigh": "xhigh"},
     {"requiresReasoningContentOnAssistantMessages": True}),
    ("openrouter", "google/gemini-2.5-pro", "Google: Gemini 2.5 Pro", True, True, 1_048_576, 65_536, (1.25, 10, 0.125, 0.375), {"off": None}, None),
    ("openrouter", "qwen/qwen3-coder", "Qwen: Qwen3 Coder 480B A35B", False, False, 262_144, 65_536, (0.3, 1, 0.1, 0), None, None),
    ("openrouter", "z-ai/glm-5.1", "Z.ai: GLM 5.1", True, False, 202_752, 182_476, (1.26, 3.96, 0.234, 0), None, None),
    ("groq", "openai/gpt-oss-120b", "GPT OSS 120B", True, False, 131_072, 65_536, (0.15, 0.6, 0.075, 0), _NO_OFF_NO_MIN, None),
    ("groq", "openai/gpt-oss-20b", "GPT OSS 20B", True, False, 131_072, 65_536, (0.075, 0.3, 0.0375, 0), _NO_OFF_NO_MIN, None),
    ("groq", "llama-3.3-70b-versatile", "Llama 3.3 70B", False, False, 131_072, 32_768, (0.59, 0.79, 0, 0), None, None),
    ("groq", "llama-3.1-8b-instant", "Llama 3.1 8B", False, False, 131_072, 131_072, (0.05, 0.08, 0, 0), None, None),
    ("deepseek", "deepseek-v4-pro", "DeepSeek V4 Pro", True, False, 1_000_000, 384_000, (0.435, 0.87, 0.003625, 0),
     {"minimal": None, "low": None, "medium": None, "high": "high", "max": "max"}, _DEEPSEEK_COMPAT),
    ("deepseek", "deepseek-v4-flash", "DeepSeek V4 Flash", True, False, 1_000_000, 384_000, (0.14, 0.28, 0.0028, 0),
     {"minimal": None, "low": "low", "medium": None, "high": "high", "max": "max"}, _DEEPSEEK_COMPAT),
    ("xai", "grok-4.6", "Grok 4.6", True, True, 500_000, 500_000, (2, 6, 0.5, 0), {"off": None, "minimal": None, "xhigh": "xhigh"}, None),
    ("xai", "grok-4.3", "Grok 4.3", True, True, 1_000_000, 30_000, (1.25, 2.5, 0.2, 0), {"off": "none", "minimal": None}, None),
    ("xai", "grok-build-0.1", "Grok Build 0.1", True, True, 256_000, 256_000, (1, 2, 0.2, 0), _NO_OFF_NO_MIN, None),
    ("faux", "faux-1", "Faux Model", False, True, 128_000, 16_384, (0, 0, 0, 0), None, None),
    ("faux", "echo", "Faux Echo", False, True, 128_000, 16_384, (0, 0, 0, 0), None, None),
)  # fmt: skip


def _builtin_models() -> list[Model]:
    models: list[Model] = []
    for provider, mid, name, reasoning, vision, window, max_out, cost, levels, compat in _CATALOGUE:
        info = BUILTIN_PROVIDERS[provider]
        models.append(
            Model(
                id=mid,
                name=name,
                api=info.api,
                provider=provider,
                base_url=info.base_url,
                reasoning=reasoning,
                input=["text", "image"] if vision else ["text"],
                cost=ModelCost(*cost),
                context_window=window,
                max_tokens=max_out,
                compat=dict(compat) if compat else None,
                thinking_level_map=dict(levels) if levels else None,
            )
        )
    return models


# --------------------------------------------------------------------------------------------------
# Config values: "$VAR", "${VAR}", "!command", bare ENV_NAME, literal

_VAR = re.compile(r"\$\$|\$!|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_command_cache: dict[str, str | None] = {}


def _interpolate(value: str, env: Mapping[str, str]) -> str | None:
    missing = False

    def sub(match: re.Match[str]) -> str:
        nonlocal missing
        token = match.group(0)
        if token == "$$":
            return "$"
        if token == "$!":
            return "!"
        name = match.group(1) or match.group(2)
        found = env.get(name)
        if not found:
            missing = True
            return ""
        return found

    result = _VAR.sub(sub, value)
    return None if missing else result


def _run_command(command: str) -> str | None:
    if command not in _command_cache:
        try:
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=15, check=False
            )
            out = done.stdout.strip() if done.returncode == 0 else ""
            secrets.register(out)  # a command's output is a key or a header value: never show it
            _command_cache[command] = out or None
        except (OSError, subprocess.SubprocessError):
            _command_cache[command] = None
    return _command_cache[command]


def resolve_config_value(value: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value models.json means: ``!cmd`` runs a shell command (stdout, cached per process),
    ``$VAR``/``${VAR}`` interpolate the environment (``$$`` and ``$!`` escape), a bare upper-case name of a
    set environment variable reads it (older Pi configs), anything else is literal. None when unresolved."""
    env = os.environ if env is None else env
    if value.startswith("!"):
        return _run_command(value[1:])
    if "$" in value:
        return _interpolate(value, env)
    if _ENV_NAME.match(value) and env.get(value):
        return env[value]
    return value


def config_value_present(value: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``value`` will resolve, without running commands (for availability checks)."""
    env = os.environ if env is None else env
    if value.startswith("!"):
        return True
    if "$" in value:
        return _interpolate(value, env) is not None
    return bool(value)


# --------------------------------------------------------------------------------------------------
# models.json


@dataclass
class _ProviderConfig:
    name: str
    base_url: str | None = None
    api: str | None = None
    api_key: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    compat: dict[str, Any] | None = None


class _Problems:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: list[str] = []

    def add(self, where: str, problem: str, consequence: str) -> None:
        self.lines.append(f"{self.path}: {where}: {problem}; {consequence}.")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _check_model_fields(spec: dict[str, Any], where: str, problems: _Problems) -> dict[str, Any] | None:
    """Validated model fields (or None when the model must be skipped)."""
    out: dict[str, Any] = {}
    checks: list[tuple[str, Any, str]] = [
        ("name", lambda v: isinstance(v, str), "must be a string"),
        ("api", lambda v: isinstance(v, str), "must be a string"),
        ("reasoning", lambda v: isinstance(v, bool), "must be true or false"),
        (
            "input",
            lambda v: isinstance(v, list) and all(x in ("text", "image") for x in v),
            'must be a list of "text"/"image"',
        ),
        ("contextWindow", _positive_int, "must be a positive integer"),
        ("maxTokens", _positive_int, "must be a positive integer"),
        ("compat", lambda v: isinstance(v, dict), "must be an object"),
        (
            "headers",
            lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
            "must map names to strings",
        ),
        (
            "thinkingLevelMap",
            lambda v: isinstance(v, dict) and all(x is None or isinstance(x, str) for x in v.values()),
            "must map thinking levels to strings or null",
        ),
    ]
    for key, ok, rule in checks:
        if key in spec:
            if not ok(spec[key]):
                problems.add(f"{where}.{key}", rule, "skipping this model")
                return None
            out[key] = spec[key]
    if "cost" in spec:
        cost = spec["cost"]
        if not isinstance(cost, dict) or not all(
            _number(cost.get(k, 0)) for k in ("input", "output", "cacheRead", "cacheWrite")
        ):
            problems.add(
                f"{where}.cost",
                "must hold non-negative numbers input/output/cacheRead/cacheWrite",
                "skipping this model",
            )
            return None
        out["cost"] = cost
    if out.get("api") is not None and out["api"] not in SUPPORTED_APIS:
        problems.add(
            f"{where}.api",
            f"'{out['api']}' is not an API caddie supports ({', '.join(SUPPORTED_APIS)})",
            "skipping this model",
        )
        return None
    return out


def _apply_fields(
    model: Model, fields: dict[str, Any], env: Mapping[str, str], problems: _Problems, where: str
) -> Model:
    changes: dict[str, Any] = {}
    if "name" in fields:
        changes["name"] = fields["name"]
    if "api" in fields:
        changes["api"] = fields["api"]
    if "reasoning" in fields:
        changes["reasoning"] = fields["reasoning"]
    if "input" in fields:
        changes["input"] = list(fields["input"])
    if "contextWindow" in fields:
        changes["context_window"] = fields["contextWindow"]
    if "maxTokens" in fields:
        changes["max_tokens"] = fields["maxTokens"]
    if "cost" in fields:
        c = fields["cost"]
        base = model.cost
        changes["cost"] = ModelCost(
            float(c.get("input", base.input)),
            float(c.get("output", base.output)),
            float(c.get("cacheRead", base.cache_read)),
            float(c.get("cacheWrite", base.cache_write)),
        )
    if "compat" in fields:
        changes["compat"] = {**(model.compat or {}), **fields["compat"]}
    if "thinkingLevelMap" in fields:
        changes["thinking_level_map"] = dict(fields["thinkingLevelMap"])
    if "headers" in fields:
        changes["headers"] = {
            **(model.headers or {}),
            **_resolve_headers(fields["headers"], env, problems, where),
        }
    return replace(model, **changes)


def _resolve_headers(
    raw: dict[str, str], env: Mapping[str, str], problems: _Problems, where: str
) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw.items():
        resolved = resolve_config_value(value, env)
        if resolved is None:
            problems.add(
                f"{where}.headers.{name}",
                f"'{value}' did not resolve (unset variable or failed command)",
                "leaving the header out",
            )
        else:
            out[name] = resolved
    secrets.register_headers(out)
    return out


# --------------------------------------------------------------------------------------------------
# Ollama discovery


def probe_ollama(url: str | None = None, timeout_s: float = OLLAMA_PROBE_TIMEOUT_S) -> list[str] | None:
    """Model names of an Ollama server at ``url`` (default ``CADDIE_OLLAMA_URL`` or 127.0.0.1:11434), or None
    when nothing answers within ``timeout_s``. Tries ``/api/tags``, then the OpenAI-style ``/v1/models``."""
    import urllib.error  # only when probing (~20 ms to import)
    import urllib.request

    base = (url or os.environ.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    for path, key, name_key in (("/api/tags", "models", "name"), ("/v1/models", "data", "id")):
        try:
            with urllib.request.urlopen(base + path, timeout=timeout_s) as response:
                data = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError:
            continue  # something answers, but not Ollama's native API: try the OpenAI-style listing
        except (OSError, ValueError):
            return None  # nothing listening, or too slow: do not wait twice
        items = data.get(key) if isinstance(data, dict) else None
        if isinstance(items, list):
            return [
                str(i[name_key]) for i in items if isinstance(i, dict) and isinstance(i.get(name_key), str)
            ]
    return None


def _ollama_base_url(env: Mapping[str, str]) -> str:
    base = (env.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


# --------------------------------------------------------------------------------------------------
# The registry


class ModelRegistry:
    """Built-in catalogue + models.json. See the module docstring.

    ``env`` defaults to ``os.environ`` (read at each call, so tests can patch it); ``models_json`` to
    ``<agent_dir>/models.json``.
    """

    def __init__(
        self, models_json: str | Path | None = None, *, env: Mapping[str, str] | None = None
    ) -> None:
        self.models_json_path = Path(models_json) if models_json is not None else agent_dir() / "models.json"
        self._env = env
        self.warnings: list[str] = []
        self._models: list[Model] = []
        self._provider_configs: dict[str, _ProviderConfig] = {}
        self._ollama_cache: Model | bool | None = False  # False: not probed yet
        self.refresh()

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    # -- loading ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read models.json (built-in models stay)."""
        self.warnings = []
        self._provider_configs = {}
        models = _builtin_models()
        ollama_url = _ollama_base_url(self.env)
        models = [replace(m, base_url=ollama_url) if m.provider == "ollama" else m for m in models]
        self._models = self._load_models_json(models)

    def _load_models_json(self, models: list[Model]) -> list[Model]:
        path = self.models_json_path
        data, warning = read_json_object(path)
        if warning:
            self.warnings.append(f"{warning}. Fix it, or see docs/providers.md for the format.")
            return models
        if not data:
            return models
        problems = _Problems(path)
        providers = data.get("providers")
        if not isinstance(providers, dict):
            problems.add("top level", 'expected {"providers": {...}}', "ignoring the file")
            self.warnings += problems.lines
            return models
        for name, spec in providers.items():
            where = f"providers.{name}"
            if not isinstance(spec, dict):
                problems.add(where, "must be an object", "skipping this provider")
                continue
            models = self._load_provider(name, spec, models, problems, where)
        self.warnings += problems.lines
        return models

    def _load_provider(
        self, name: str, spec: dict[str, Any], models: list[Model], problems: _Problems, where: str
    ) -> list[Model]:
        env = self.env
        builtin = BUILTIN_PROVIDERS.get(name)
        for key, kind in (
            ("baseUrl", str),
            ("api", str),
            ("apiKey", str),
            ("headers", dict),
            ("compat", dict),
            ("models", list),
            ("modelOverrides", dict),
        ):
            if key in spec and not isinstance(spec[key], kind):
                problems.add(
                    f"{where}.{key}",
                    f"must be a{'n object' if kind is dict else ' list' if kind is list else ' string'}",
                    "skipping this provider",
                )
                return models
        api = spec.get("api")
        if api is not None and api not in SUPPORTED_APIS:
            problems.add(
                f"{where}.api",
                f"'{api}' is not an API caddie supports ({', '.join(SUPPORTED_APIS)}; for OpenAI-style servers use openai-completions)",
                "skipping this provider",
            )
            return models
        secrets.register_url(spec.get("baseUrl"))
        config = _ProviderConfig(
            name=name,
            base_url=spec.get("baseUrl"),
            api=api,
            api_key=spec.get("apiKey"),
            headers=_resolve_headers(spec.get("headers") or {}, env, problems, where),
            compat=spec.get("compat"),
        )
        self._provider_configs[name] = config

        # Provider-level overrides of models this provider already has (built-in ones).
        def adjust(m: Model) -> Model:
            if m.provider != name:
                return m
            changes: dict[str, Any] = {}
            if config.base_url:
                changes["base_url"] = config.base_url
            if config.api:
                changes["api"] = config.api
            if config.headers:
                changes["headers"] = {**(m.headers or {}), **config.headers}
            if config.compat:
                changes["compat"] = {**config.compat, **(m.compat or {})}
            return replace(m, **changes) if changes else m

        models = [adjust(m) for m in models]

        for model_id, override in (spec.get("modelOverrides") or {}).items():
            owhere = f"{where}.modelOverrides.{model_id}"
            if not isinstance(override, dict):
                problems.add(owhere, "must be an object", "ignoring this override")
                continue
            fields = _check_model_fields(override, owhere, problems)
            if fields is None:
                continue
            models = [
                _apply_fields(m, fields, env, problems, owhere)
                if m.provider == name and m.id == model_id
                else m
                for m in models
            ]

        custom = spec.get("models") or []
        if custom:
            base_url = config.base_url or (builtin.base_url if builtin else None)
            if not base_url:
                problems.add(where, "has models but no baseUrl", "skipping this provider")
                return models
        for n, item in enumerate(custom):
            mwhere = f"{where}.models[{n}]"
            if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                problems.add(mwhere, 'needs a string "id"', "skipping this model")
                continue
            fields = _check_model_fields(item, mwhere, problems)
            if fields is None:
                continue
            model_api = fields.get("api") or config.api or (builtin.api if builtin else None)
            if not model_api:
                problems.add(
                    mwhere, 'has no "api" (set it on the provider or the model)', "skipping this model"
                )
                continue
            base = Model(
                id=item["id"],
                name=item["id"],
                api=model_api,
                provider=name,
                base_url=str(config.base_url or (builtin.base_url if builtin else "")),
                reasoning=False,
                input=["text"],
                cost=ModelCost(),
                context_window=128_000,
                max_tokens=16_384,
                headers=dict(config.headers) if config.headers else None,
                compat=dict(config.compat) if config.compat else None,
            )
            model = _apply_fields(base, fields, env, problems, mwhere)
            models = [m for m in models if not (m.provider == name and m.id == model.id)]
            models.append(model)
        return models

    # -- lookup -----------------------------------------------------------------------------------
    def all(self) -> list[Model]:
        """Every known model (built-in and models.json), including those without a key."""
        return list(self._models)

    def available(self) -> list[Model]:
        """Models that have auth (a key, or a keyless local server); the faux test provider is left out."""
        return [m for m in self._models if m.provider != "faux" and self.has_auth(m)]

    def providers(self) -> list[str]:
        names = list(BUILTIN_PROVIDERS)
        names += [n for n in self._provider_configs if n not in BUILTIN_PROVIDERS]
        return names

    def find(self, provider: str, model_id: str) -> Model | None:
        """The model ``provider/model_id``; open providers (local servers, faux) make one up for any id."""
        for m in self._models:
            if m.provider == provider and m.id == model_id:
                return m
        info = BUILTIN_PROVIDERS.get(provider)
        if info is not None and info.open_models and model_id:
            return self._open_model(info, model_id)
        return None

    def _open_model(self, info: ProviderInfo, model_id: str) -> Model:
        config = self._provider_configs.get(info.name)
        base_url = (config.base_url if config and config.base_url else None) or (
            _ollama_base_url(self.env) if info.name == "ollama" else info.base_url
        )
        compat = {**(info.compat or {}), **((config.compat if config else None) or {})}
        return Model(
            id=model_id,
            name=model_id,
            api=info.api,
            provider=info.name,
            base_url=base_url,
            input=["text", "image"] if info.name == "faux" else ["text"],
            context_window=128_000 if info.name == "faux" else LOCAL_CONTEXT_WINDOW,
            max_tokens=16_384 if info.name == "faux" else 8_192,
            headers=dict(config.headers) if config and config.headers else None,
            compat=compat or None,
        )

    def resolve(self, ref: str) -> Model:
        """``provider/model-id`` or a bare model id (preferring providers with a key); ``ModelNotFound`` if unknown."""
        ref = ref.strip()
        named_provider: str | None = None
        if "/" in ref:
            provider, _, model_id = ref.partition("/")
            if provider in BUILTIN_PROVIDERS or provider in self._provider_configs:
                found = self.find(provider, model_id)
                if found is not None:
                    return found
                named_provider = provider
        # A bare id, which may itself contain "/" (openai/gpt-oss-120b is a Groq and OpenRouter id).
        lowered = ref.lower()
        matches = [m for m in self._models if m.id == ref] or [
            m for m in self._models if m.id.lower() == lowered
        ]
        if not matches:
            matches = [m for m in self._models if m.name.lower() == lowered]
        if not matches:
            raise ModelNotFound(self._not_found_text(ref, named_provider))
        with_auth = [m for m in matches if self.has_auth(m)]
        return (with_auth or matches)[0]

    def _not_found_text(self, ref: str, provider: str | None) -> str:
        if provider is not None:
            known = [m.id for m in self._models if m.provider == provider]
            hint = f" Known {provider} models: {', '.join(known[:12])}." if known else ""
            text = f"Unknown model '{ref}'.{hint} Add other models to {self.models_json_path} (see docs/providers.md)."
        else:
            text = (
                f"Unknown model '{ref}'. Name it as provider/model-id (for example anthropic/claude-sonnet-5 or "
                f"ollama/qwen2.5-coder:7b), or add it to {self.models_json_path} (see docs/providers.md)."
            )
        if self.warnings:
            text += " Note: " + " ".join(self.warnings)
        return text

    # -- auth -------------------------------------------------------------------------------------
    def _env_keys(self, provider: str) -> tuple[str, ...]:
        info = BUILTIN_PROVIDERS.get(provider)
        return info.env_keys if info else ()

    def _keyless(self, model: Model) -> bool:
        info = BUILTIN_PROVIDERS.get(model.provider)
        if info is not None and not info.needs_key:
            return True
        return is_local_base_url(model.base_url)

    def api_key_for(self, model: Model) -> str | None:
        """The key to send for ``model`` (runs ``!command`` keys); a placeholder for keyless local servers;
        None when no key is configured."""
        config = self._provider_configs.get(model.provider)
        if config is not None and config.api_key:
            resolved = resolve_config_value(config.api_key, self.env)
            if resolved:
                secrets.register(resolved)
                return resolved
        for name in self._env_keys(model.provider):
            value = self.env.get(name)
            if value:
                secrets.register(value)
                return value
        return NO_KEY_PLACEHOLDER if self._keyless(model) else None

    def has_auth(self, model: Model) -> bool:
        """Whether a key is configured (or none is needed), without running key commands."""
        config = self._provider_configs.get(model.provider)
        if config is not None and config.api_key and config_value_present(config.api_key, self.env):
            return True
        if any(self.env.get(name) for name in self._env_keys(model.provider)):
            return True
        return self._keyless(model)

    def key_hint(self, model: Model) -> str:
        """Where the key for ``model`` would come from (for error messages)."""
        keys = self._env_keys(model.provider)
        if keys:
            return f"set {keys[0]} or add apiKey for provider '{model.provider}' in {self.models_json_path}"
        return f"add apiKey for provider '{model.provider}' in {self.models_json_path}"

    # -- default model ------------------------------------------------------------------------------
    def default_model(
        self,
        settings: Settings | None = None,
        *,
        probe_local: bool = True,
        probe_timeout_s: float = OLLAMA_PROBE_TIMEOUT_S,
    ) -> Model:
        """The model to use when the user named none, in this order:

        1. settings ``defaultProvider``/``defaultModel``;
        2. ``ANTHROPIC_API_KEY`` set → Claude Sonnet; 3. ``OPENAI_API_KEY`` → GPT; then any other built-in
           cloud provider with its key set (OpenRouter, Groq, DeepSeek, xAI);
        4. the first models.json model that has auth (or needs none);
        5. a local Ollama that answers within ``probe_timeout_s`` (``CADDIE_OLLAMA_URL`` overrides its URL);
        otherwise ``NoModelConfigured`` saying exactly what to set.
        """
        if settings is not None and (settings.default_model or settings.default_provider):
            return self._from_settings(settings)
        for provider in _CLOUD_DEFAULT_ORDER:
            info = BUILTIN_PROVIDERS[provider]
            config = self._provider_configs.get(provider)
            keyed = any(self.env.get(k) for k in info.env_keys) or bool(
                config and config.api_key and config_value_present(config.api_key, self.env)
            )
            if keyed and info.default_model:
                model = self.find(provider, info.default_model)
                if model is not None:
                    return model
        for m in self._models:
            custom = m.provider in self._provider_configs and m.provider not in _CLOUD_DEFAULT_ORDER
            if custom and m.provider != "faux" and self.has_auth(m):
                return m
        if probe_local:
            local = self._probe_ollama(probe_timeout_s)
            if local is not None:
                return local
        raise NoModelConfigured(self.no_model_text())

    def _from_settings(self, settings: Settings) -> Model:
        provider = settings.default_provider
        model_id = settings.default_model
        where = f"{settings.global_path or 'settings.json'}"
        if model_id and provider:
            ref = model_id if model_id.startswith(f"{provider}/") else f"{provider}/{model_id}"
        elif model_id:
            ref = model_id
        else:
            assert provider is not None
            info = BUILTIN_PROVIDERS.get(provider)
            if info is None or not info.default_model:
                candidates = [m for m in self._models if m.provider == provider]
                if candidates:
                    return candidates[0]
                raise NoModelConfigured(
                    f'settings.json sets "defaultProvider": "{provider}" but no "defaultModel", and caddie has no '
                    f'default for that provider. Add "defaultModel" to {where}.'
                )
            ref = f"{provider}/{info.default_model}"
        try:
            return self.resolve(ref)
        except ModelNotFound as e:
            raise NoModelConfigured(
                f"settings.json names the default model '{ref}', which caddie does not know. "
                f'Fix "defaultProvider"/"defaultModel" in {where}, or pass --model. ({e})'
            ) from None

    def _probe_ollama(self, timeout_s: float) -> Model | None:
        if self._ollama_cache is not False:
            return self._ollama_cache if isinstance(self._ollama_cache, Model) else None
        url = _ollama_base_url(self.env)
        names = probe_ollama(url, timeout_s)
        model = self.find("ollama", names[0]) if names else None
        self._ollama_cache = model
        return model

    def no_model_text(self) -> str:
        settings_path = agent_dir() / "settings.json"
        ollama = (self.env.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
        lines = [
            "No model is configured. Do one of these:",
            "  - set ANTHROPIC_API_KEY or OPENAI_API_KEY (or OPENROUTER_API_KEY, GROQ_API_KEY, DEEPSEEK_API_KEY, XAI_API_KEY);",
            "  - pass --model provider/model-id, e.g. --model anthropic/claude-sonnet-5 or --model ollama/qwen2.5-coder:7b;",
            f'  - set "defaultProvider" and "defaultModel" in {settings_path};',
            f"  - start Ollama (caddie looks for it at {ollama}), or describe your local server "
            f"(LM Studio, vLLM, llama.cpp) in {self.models_json_path} - see docs/providers.md;",
            "  - or try caddie offline with --model faux/echo.",
        ]
        if self.warnings:
            lines.append("Also: " + " ".join(self.warnings))
        return "\n".join(lines)


def load_registry(models_json: str | Path | None = None) -> ModelRegistry:
    """A registry over the built-in catalogue and ``<agent_dir>/models.json`` (or the given file)."""
    return ModelRegistry(models_json)
