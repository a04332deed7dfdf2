"""The built-in model catalogue: which providers exist, how to reach them, and what each model can do.

Data, not policy. ``catalogue.json`` (next to this module) is generated from the catalogue Pi 0.84.4 ships
(``scripts/gen_catalogue.py``, never edited by hand): every provider in Pi's table that speaks an API caddie
speaks, with Pi's environment variable names and base URLs, and per model the context window, max output,
input modalities, reasoning support, prices, compat flags and thinking-level map. On top, a few keyless
providers Pi does not list: local OpenAI-compatible servers that accept any model id (``ollama``,
``lmstudio``, ``llamacpp``, ``vllm``) and the scripted ``faux`` provider.

Which model to use, which key to send, and what models.json changes live a layer up, in ``caddie.models``.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources

import msgspec

from caddie.ai.model import Api, Model, ModelCompat, ModelCost, ModelCostTier

__all__ = [
    "DEFAULT_OLLAMA_URL",
    "LLAMA_ROUTER",
    "LOCAL_CONTEXT_WINDOW",
    "ProviderInfo",
    "builtin_models",
    "closest",
    "missing_key_text",
    "open_model",
    "provider_info",
    "providers",
    "source",
]

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
LOCAL_CONTEXT_WINDOW = 32_768
"""Context window assumed for a model of a local server (override it in models.json)."""


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    name: str
    """The provider id (``openai``), as in ``provider/model`` and auth.json."""
    title: str
    """How people call it (``OpenAI``)."""
    base_url: str
    api: Api
    """The API most of its models speak (models.json models of this provider default to it)."""
    env_keys: tuple[str, ...] = ()
    """Environment variables the key is read from, first set one wins (Pi's names)."""
    needs_key: bool = True
    open_models: bool = False
    """Any model id resolves (local servers and faux): ``ollama/<anything>``."""
    compat: ModelCompat | None = None
    base_url_env: tuple[str, ...] = ()
    """Variables the base URL names as ``{NAME}`` placeholders (Cloudflare's account id)."""
    login_label: str | None = None
    """What ``/login`` asks for (``OpenAI API key``)."""
    headers: dict[str, str] | None = None


_LOCAL_COMPAT = ModelCompat(
    supports_developer_role=False, supports_store=False, max_tokens_field="max_tokens"
)

_LLAMA_ROUTER_COMPAT = ModelCompat(
    supports_store=False,
    supports_developer_role=False,
    supports_reasoning_effort=False,
    supports_usage_in_streaming=True,
    supports_strict_mode=False,
    max_tokens_field="max_tokens",
)
"""Pi's flags for its llama.cpp router models."""

LLAMA_ROUTER = "llama.cpp"
"""Pi's llama.cpp router provider: configured with ``/login llama.cpp`` or ``LLAMA_BASE_URL``
(``caddie.models.llama_router``); its models are what the router has loaded."""

_KEYLESS: tuple[ProviderInfo, ...] = (
    ProviderInfo(
        "ollama", "Ollama", f"{DEFAULT_OLLAMA_URL}/v1", "openai-completions", needs_key=False, open_models=True,
        compat=_LOCAL_COMPAT,
    ),
    ProviderInfo(
        "lmstudio", "LM Studio", "http://127.0.0.1:1234/v1", "openai-completions", needs_key=False,
        open_models=True, compat=_LOCAL_COMPAT,
    ),
    ProviderInfo(
        "llamacpp", "llama.cpp", "http://127.0.0.1:8080/v1", "openai-completions", needs_key=False,
        open_models=True, compat=_LOCAL_COMPAT,
    ),
    ProviderInfo(
        "vllm", "vLLM", "http://127.0.0.1:8000/v1", "openai-completions", needs_key=False, open_models=True,
        compat=_LOCAL_COMPAT,
    ),
    ProviderInfo(
        LLAMA_ROUTER, "llama.cpp", "http://127.0.0.1:8080/v1", "openai-completions", ("LLAMA_API_KEY",),
        needs_key=False, open_models=True, compat=_LLAMA_ROUTER_COMPAT, login_label="llama.cpp server",
    ),
    ProviderInfo("faux", "Faux (scripted)", "http://localhost:0", "faux", needs_key=False, open_models=True),
    # Claude on Vertex through the anthropic SDK's cloud client (extra [vertex]): Google application-default
    # credentials. (Amazon Bedrock is Pi's provider, in the catalogue: every vendor over bedrock-converse-stream.)
    ProviderInfo(
        "anthropic-vertex", "Claude on Vertex AI", "", "anthropic-vertex", needs_key=False, open_models=True,
    ),
)  # fmt: skip


# --------------------------------------------------------------------------------------------------
# catalogue.json


class _Tier(msgspec.Struct, rename="camel"):
    input_tokens_above: int
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class _Cost(msgspec.Struct, rename="camel"):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    tiers: list[_Tier] | None = None


class _Model(msgspec.Struct, rename="camel"):
    id: str
    name: str
    api: Api
    base_url: str
    reasoning: bool
    input: list[str]
    cost: _Cost
    context_window: int
    max_tokens: int
    headers: dict[str, str] | None = None
    compat: ModelCompat | None = None
    thinking_level_map: dict[str, str | None] | None = None


class _Provider(msgspec.Struct, rename="camel"):
    name: str
    api: Api
    base_url: str
    env_keys: list[str]
    models: list[_Model]
    base_url_env: list[str] = []
    login_label: str | None = None
    headers: dict[str, str] | None = None


class _Catalogue(msgspec.Struct):
    source: str
    apis: list[str]
    providers: dict[str, _Provider]


@functools.cache
def _catalogue() -> _Catalogue:
    raw = (resources.files("caddie.ai") / "catalogue.json").read_bytes()
    return msgspec.json.decode(raw, type=_Catalogue)


@functools.cache
def _providers() -> dict[str, ProviderInfo]:
    out: dict[str, ProviderInfo] = {}
    for name, p in _catalogue().providers.items():
        out[name] = ProviderInfo(
            name=name,
            title=p.name,
            base_url=p.base_url,
            api=p.api,
            env_keys=tuple(p.env_keys),
            base_url_env=tuple(p.base_url_env),
            login_label=p.login_label,
            headers=dict(p.headers) if p.headers else None,
        )
    for info in _KEYLESS:
        out.setdefault(info.name, info)
    return out


def source() -> str:
    """Where the catalogue's facts come from (``@earendil-works/pi-ai 0.84.4``)."""
    return _catalogue().source


def providers() -> dict[str, ProviderInfo]:
    """Every built-in provider by id: the catalogue's (alphabetical), then the keyless local ones and faux."""
    return dict(_providers())


def provider_info(name: str) -> ProviderInfo | None:
    return _providers().get(name)


def missing_key_text(provider: str) -> str:
    """The error for a request without a key: the variable to set, and ``/login``."""
    info = _providers().get(provider)
    keys = info.env_keys if info is not None else ()
    first = f"Set {keys[0]}, or store a key" if keys else "Store a key"
    return (
        f"No API key for provider '{provider}'. {first} with /login {provider} (interactive), or add "
        f'"apiKey" for it in models.json (see docs/providers.md).'
    )


def _cost(c: _Cost) -> ModelCost:
    tiers = tuple(
        ModelCostTier(t.input_tokens_above, t.input, t.output, t.cache_read, t.cache_write)
        for t in c.tiers or ()
    )
    return ModelCost(c.input, c.output, c.cache_read, c.cache_write, tiers)


def builtin_models() -> list[Model]:
    """Every catalogue model (and faux's ``faux-1`` and ``echo``). The ``Model`` objects are built once and
    shared: change one with ``dataclasses.replace``, never in place."""
    return list(_builtin_models())


@functools.cache
def _builtin_models() -> tuple[Model, ...]:
    out: list[Model] = []
    for provider, p in _catalogue().providers.items():
        for m in p.models:
            headers = {**(p.headers or {}), **(m.headers or {})}
            out.append(
                Model(
                    id=m.id,
                    name=m.name,
                    api=m.api,
                    provider=provider,
                    base_url=m.base_url,
                    reasoning=m.reasoning,
                    input=list(m.input),
                    cost=_cost(m.cost),
                    context_window=m.context_window,
                    max_tokens=m.max_tokens,
                    headers=headers or None,
                    compat=m.compat,
                    thinking_level_map=dict(m.thinking_level_map)
                    if m.thinking_level_map is not None
                    else None,
                )
            )
    return tuple(out + _faux_models())


def _faux_models() -> list[Model]:
    faux = _providers()["faux"]
    return [
        open_model(faux, "faux-1", name="Faux Model"),
        open_model(faux, "echo", name="Faux Echo"),
    ]


def open_model(
    info: ProviderInfo, model_id: str, base_url: str | None = None, name: str | None = None
) -> Model:
    """A model of an open provider (a local server, or faux) made up for any id."""
    faux = info.api == "faux"
    return Model(
        id=model_id,
        name=name or model_id,
        api=info.api,
        provider=info.name,
        base_url=base_url or info.base_url,
        input=["text", "image"] if faux else ["text"],
        context_window=128_000 if faux else LOCAL_CONTEXT_WINDOW,
        max_tokens=16_384 if faux else 8_192,
        compat=info.compat,
    )


def closest(ref: str, refs: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``refs`` (``provider/id``) closest to a misspelled ``ref`` (difflib), best first; a
    bare id is also compared with the ids alone."""
    refs = list(dict.fromkeys(refs))
    found = difflib.get_close_matches(ref, refs, n=n, cutoff=0.6)
    by_id: dict[str, list[str]] = {}
    for r in refs:
        by_id.setdefault(r.partition("/")[2], []).append(r)
    for model_id in difflib.get_close_matches(ref.rpartition("/")[2], list(by_id), n=n, cutoff=0.6):
        for r in by_id[model_id]:
            if r not in found:
                found.append(r)
    return found[:n]
