"""The model registry: which models exist, how to reach them, with which key, and which one to use.

Built in: ``caddie.ai.catalogue`` (Pi's providers and models, keyless local servers, faux). On top:
``~/.caddie/agent/models.json`` in Pi's format (``caddie.models.models_json``) and stored keys in
``~/.caddie/agent/auth.json`` (``caddie.models.auth``).

A key comes from, in this order: auth.json (``/login``), models.json ``apiKey`` (``$ENV_VAR``, ``${ENV_VAR}``,
``!shell command``, a bare environment variable name, or a literal), the provider's environment variables
(Pi's names: ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``GEMINI_API_KEY``...). Local servers need none.

A subscription login stored in auth.json (``oauth``) owns its provider: ``request_auth`` gives each request
the login's token, renewed when it expires (``caddie.models.oauth``). Without anything stored, Anthropic
also takes ``ANTHROPIC_AUTH_TOKEN`` (sent as ``Authorization: Bearer``) and ``ANTHROPIC_OAUTH_TOKEN`` (a
Claude Pro/Max token), before ``ANTHROPIC_API_KEY``, as Pi does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

from caddie.ai import catalogue, secrets
from caddie.ai.catalogue import DEFAULT_OLLAMA_URL, LLAMA_ROUTER, ProviderInfo
from caddie.ai.model import Model, ModelCompat, register_api_name
from caddie.ai.oauth import FLOW_NAMES, builtin_flow
from caddie.ai.oauth.types import OAuthFlow, RequestAuth
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER, headers_contain, is_local_base_url
from caddie.ai.stream import register_api
from caddie.config.paths import agent_dir
from caddie.config.settings import Settings
from caddie.errors import ConfigurationError
from caddie.models import llama_router
from caddie.models.auth import AuthStore
from caddie.models.config_value import config_value_present, resolve_config_value
from caddie.models.local_servers import (
    DISCOVERY_TIMEOUT_S,
    LOCAL_DISCOVERY_ENV,
    SERVER_KINDS,
    LocalServer,
    ServerModels,
)
from caddie.models.models_json import ProviderConfig, apply_provider, load_models_json
from caddie.models.models_store import ModelRefresher, ModelsStore
from caddie.models.oauth import ExtensionOAuthFlow, ExtensionStream, OAuthCredentials
from caddie.models.ollama import (
    OLLAMA_PROBE_TIMEOUT_S,
    OLLAMA_URL_ENV,
    ollama_base_url,
    probe_ollama,
)

__all__ = [
    "DEFAULT_MODELS",
    "KeySource",
    "LoginOption",
    "ModelNotFound",
    "ModelRegistry",
    "NoModelConfigured",
]

ANTHROPIC_AUTH_TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
ANTHROPIC_OAUTH_TOKEN_ENV = "ANTHROPIC_OAUTH_TOKEN"


class KeySource(NamedTuple):
    """Where a provider's credential comes from (``ModelRegistry.key_source``)."""

    kind: Literal["stored", "models_json_key", "models_json_command", "environment"]
    """``stored``: auth.json (a key or a login); ``models_json_key`` / ``models_json_command``: models.json
    ``apiKey``, a value or a ``!command``; ``environment``: a variable or the cloud SDK's own credentials."""
    label: str | None = None
    """The variable's name, or ``OAuth`` for a login."""


class LoginOption(NamedTuple):
    """One entry of ``/login``'s menu: a provider and how to log in to it (``oauth`` or ``api_key``)."""

    provider: str
    label: str
    kind: str


class NoModelConfigured(ConfigurationError):
    """No model was named and none could be chosen; the message says exactly what to set."""


class ModelNotFound(ConfigurationError, LookupError):
    """A named model the registry does not know; the message says how to name or add one."""

    def __init__(self, text: str, suggestions: list[str] | None = None) -> None:
        super().__init__(text)
        self.suggestions = suggestions or []


DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-sonnet-5",
    "openai": "gpt-5.5",
    "google": "gemini-3.1-pro-preview",
    "openrouter": "anthropic/claude-sonnet-5",
    "groq": "openai/gpt-oss-120b",
    "deepseek": "deepseek-v4-pro",
    "xai": "grok-4.6",
    "azure-openai-responses": "gpt-5.4",
    "cerebras": "gpt-oss-120b",
    "mistral": "devstral-medium-latest",
    "zai": "glm-5.3",
    "zai-coding-cn": "glm-5.3",
    "minimax": "MiniMax-M2.7",
    "minimax-cn": "MiniMax-M2.7",
    "moonshotai": "kimi-k2.6",
    "moonshotai-cn": "kimi-k2.6",
    "huggingface": "moonshotai/Kimi-K2.6",
    "fireworks": "accounts/fireworks/models/kimi-k2p6",
    "together": "moonshotai/Kimi-K2.6",
    "nvidia": "nvidia/nemotron-3-super-120b-a12b",
    "vercel-ai-gateway": "zai/glm-5.1",
    "opencode": "kimi-k2.6",
    "opencode-go": "kimi-k2.6",
    "kimi-coding": "kimi-for-coding",
    "faux": "faux-1",
}
"""The model a provider means when only the provider is named (settings ``defaultProvider``, or a key
found); a provider not listed means its first model."""

PREFERRED_ORDER = ("anthropic", "openai", "google", "openrouter", "groq", "deepseek", "xai")
"""Order in which a key found in the environment or auth.json picks the default model; other providers with
a key follow in catalogue order. Also breaks ties when a bare model id exists at several providers."""

_PLACEHOLDER = re.compile(r"\{([A-Z][A-Z0-9_]*)\}")


class ModelRegistry:
    """Built-in catalogue + models.json + auth.json. See the module docstring.

    ``env`` defaults to ``os.environ`` (read at each call, so tests can patch it); ``models_json`` to
    ``<agent_dir>/models.json``; ``auth`` to ``<agent_dir>/auth.json``.
    """

    def __init__(
        self,
        models_json: str | Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        auth: AuthStore | str | Path | None = None,
    ) -> None:
        self.models_json_path = Path(models_json) if models_json is not None else agent_dir() / "models.json"
        self.auth = auth if isinstance(auth, AuthStore) else AuthStore(auth)
        self._env = env
        self.warnings: list[str] = []
        self._models: list[Model] = []
        self._provider_configs: dict[str, ProviderConfig] = {}
        self._builtin: dict[str, ProviderInfo] = catalogue.providers()
        self._ollama_cache: Model | bool | None = False  # False: not probed yet
        self._registered: dict[str, tuple[dict[str, Any], str]] = {}
        """Providers extensions registered (``api.register_provider``): name → (config, extension path)."""
        self._registered_problems: dict[str, list[str]] = {}
        self.servers = ServerModels()
        """What local servers said they serve (``discover_local``; ``caddie.models.local_servers``)."""
        self._flows: dict[str, OAuthFlow] = {}
        """Logins extensions registered (``register_provider`` with ``oauth``)."""
        self._model_refreshers: dict[str, ModelRefresher] = {}
        """Extensions' ``refreshModels``: provider → a function returning its current models."""
        self.models_store = ModelsStore(self.models_json_path.parent / "models-store.json")
        self.oauth = OAuthCredentials(self.auth, self.oauth_flow)
        self.refresh()

    @property
    def env(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    # -- loading ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Re-read models.json and auth.json (built-in models stay)."""
        self.auth.reload()
        ollama_url = ollama_base_url(self.env)
        models = [
            replace(m, base_url=ollama_url) if m.provider == "ollama" else m
            for m in catalogue.builtin_models()
        ]
        self._models, self._provider_configs, problems = load_models_json(
            self.models_json_path, models, self._builtin, self.env
        )
        self.warnings = problems + self.auth.warnings
        self._registered_problems = {}
        for name, (config, source) in self._registered.items():  # extensions' providers go on top
            self._models, self._registered_problems[name] = apply_provider(
                name, config, source, self._models, self._builtin, self.env, self._provider_configs
            )
        for (
            name,
            entry,
        ) in self.models_store.read().items():  # dynamic catalogues (Radius, extensions): last, they replace
            stored = [
                m
                for m in entry.get("models") or []
                if isinstance(m, dict) and m.get("provider", name) == name
            ]
            if not stored or not self._is_dynamic(name):
                continue
            spec = {"baseUrl": stored[0].get("baseUrl"), "api": stored[0].get("api"), "models": stored}
            scratch = dict(self._provider_configs)  # the stored list adds models; it never replaces a config
            self._models, found = apply_provider(
                name, spec, str(self.models_store.path), self._models, self._builtin, self.env, scratch
            )
            self.warnings += found

    def register_provider(self, name: str, config: Mapping[str, Any], source: str) -> list[str]:
        """Add or change provider ``name`` for an extension (``api.register_provider``; the config has the
        shape of a models.json provider, plus Pi's ``oauth`` login, ``streamSimple`` stream function for
        its own ``api``, ``authHeader`` and ``refreshModels``). Returns its problems, one line each (empty
        when all is well)."""
        spec = dict(config)
        oauth, stream, refresher = (
            spec.pop("oauth", None),
            spec.pop("streamSimple", None),
            spec.pop("refreshModels", None),
        )
        problems: list[str] = []
        if oauth is not None:
            if not isinstance(oauth, Mapping) or not callable(oauth.get("login")):
                problems.append(
                    f'provider {name}: "oauth" needs a "login" function (and "refreshToken", "getApiKey")'
                )
            else:
                self.register_oauth(name, ExtensionOAuthFlow(oauth))
        if stream is not None:
            api = spec.get("api")
            if not callable(stream) or not isinstance(api, str) or not api:
                problems.append(f'provider {name}: "streamSimple" needs a function and an "api" name for it')
            else:
                register_api_name(api)
                register_api(api, ExtensionStream(stream))
        if refresher is not None:
            if callable(refresher):
                self._model_refreshers[name] = refresher
            else:
                problems.append(f'provider {name}: "refreshModels" must be a function')
        if problems:
            return problems
        self._registered[name] = (spec, source)
        self.refresh()
        return list(self._registered_problems.get(name, []))

    def unregister_provider(self, name: str) -> None:
        """Drop what ``register_provider`` added; built-in models it changed come back."""
        self._flows.pop(name, None)
        self._model_refreshers.pop(name, None)
        if self._registered.pop(name, None) is not None:
            self.refresh()

    # -- lookup -----------------------------------------------------------------------------------
    def all(self) -> list[Model]:
        """Every known model (built-in and models.json), including those without a key; a login that names
        the models its account may use (Copilot's ``availableModelIds``) hides the others of its provider."""
        allowed = account_models(self.auth)
        return [
            self._usable(m) for m in self._models if m.provider not in allowed or m.id in allowed[m.provider]
        ]

    def available(self) -> list[Model]:
        """Models that have auth (a key, or a keyless local server), then those local servers said they serve
        (``discover_local``); the faux test provider is left out."""
        keyed: dict[str, bool] = {}  # a key is per provider: look once, not for each of ~1,300 models

        def usable(m: Model) -> bool:
            if m.provider not in keyed:
                keyed[m.provider] = self.has_key(m.provider)
            return not self._missing_url_env(m) and (keyed[m.provider] or self._keyless(m))

        listed = [m for m in self.all() if m.provider != "faux" and usable(m)]
        known = {m.ref for m in listed}
        return listed + [m for m in self.discovered() if m.ref not in known]

    def discovered(self) -> list[Model]:
        """The models local servers said they serve (``discover_local``), with their context sizes."""
        out: list[Model] = []
        for provider, ids in self.servers.listed().items():
            if provider not in self._builtin and provider not in self._provider_configs:
                continue
            for model_id in ids:
                found = self.find(provider, model_id)
                if found is not None and self.has_auth(found):
                    out.append(found)
        return out

    def discover_local(self, timeout_s: float = DISCOVERY_TIMEOUT_S, *, refresh: bool = True) -> None:
        """Ask every local server caddie knows (the keyless providers, a configured llama.cpp router, models.json
        providers on this machine or network) which models it serves and with what context size; those that do
        not answer within ``timeout_s`` keep what was assumed. ``refresh=False`` asks only servers not asked
        yet in this process."""
        targets = [t for t in (local_server(self, p) for p in self.providers()) if t is not None]
        if not refresh:
            targets = [t for t in targets if not self.servers.asked(t.provider)]
        self.servers.ask_all(targets, timeout_s)

    def providers(self) -> list[str]:
        names = list(self._builtin)
        names += [n for n in self._provider_configs if n not in self._builtin]
        return names

    def provider_info(self, name: str) -> ProviderInfo | None:
        return self._builtin.get(name)

    def login_providers(self) -> list[tuple[str, str]]:
        """(id, label) of every provider a key can be stored for: built-in ones that need a key, then
        models.json providers."""
        out = [(p.name, p.title) for p in self._builtin.values() if p.needs_key or p.name == LLAMA_ROUTER]
        out += [(n, n) for n in self._provider_configs if n not in self._builtin]
        return out

    def login_options(self) -> list[LoginOption]:
        """``/login``'s menu: every subscription login (built-in, models.json ``oauth``, extensions'), then
        every provider a key can be stored for."""
        logins: list[LoginOption] = []
        for provider in [*FLOW_NAMES, *self._provider_configs, *self._flows]:
            if any(o.provider == provider for o in logins) or self.oauth_flow(provider) is None:
                continue
            if provider in FLOW_NAMES and provider not in self._flows:
                name, label = FLOW_NAMES[provider]
            else:
                flow = self.oauth_flow(provider)
                assert flow is not None
                name, label = flow.name, flow.login_label
            logins.append(LoginOption(provider, label or name, "oauth"))
        keys = [LoginOption(name, label, "api_key") for name, label in self.login_providers()]
        return logins + keys

    # -- subscription logins ------------------------------------------------------------------------
    def register_oauth(self, provider: str, flow: OAuthFlow) -> None:
        """An extension's login for ``provider`` (``register_provider`` with ``oauth``)."""
        self._flows[provider] = flow

    def oauth_flow(self, provider: str) -> OAuthFlow | None:
        """The login of ``provider``: an extension's, a models.json ``"oauth": "radius"`` gateway's, or the
        built-in one."""
        flow = self._flows.get(provider)
        if flow is not None:
            return flow
        config = self._provider_configs.get(provider)
        if config is not None and config.oauth == "radius" and config.base_url and provider != "radius":
            from caddie.ai.oauth.radius import RadiusOAuth

            return RadiusOAuth(provider, config.base_url)
        return builtin_flow(provider)

    def _is_dynamic(self, provider: str) -> bool:
        from caddie.ai.oauth.radius import RadiusOAuth

        return provider in self._model_refreshers or isinstance(self.oauth_flow(provider), RadiusOAuth)

    async def refresh_models(self, provider: str) -> list[str]:
        """Load ``provider``'s current model list where it is dynamic (a Radius gateway's catalogue, an
        extension's ``refreshModels``), keep it in models-store.json (Pi's file) and use it; returns
        problems, one line each. Providers with a fixed list: nothing to do."""
        from caddie.ai.oauth.radius import RadiusOAuth

        refresher = self._model_refreshers.get(provider)
        flow = self.oauth_flow(provider)
        if refresher is not None:
            models = await refresher()
            config = self._provider_configs.get(provider)
            base_url = config.base_url if config is not None else None
            api: str | None = config.api if config is not None else None
        elif isinstance(flow, RadiusOAuth):
            credential = await self.oauth.credential(provider)
            stored_key = self.auth.get(provider)
            token = str(credential.get("access")) if credential else (stored_key.key if stored_key else None)
            base_url, models = await flow.load_catalogue(token)
            api = "pi-messages"
        else:
            return []
        # Pi's shape: every model names its provider, API and base URL.
        fixed = {
            "provider": provider,
            **({"api": api} if api else {}),
            **({"baseUrl": base_url} if base_url else {}),
        }
        entry: dict[str, Any] = {"models": [{**dict(m), **fixed} for m in models]}
        self.models_store.write(provider, entry)
        self.refresh()
        return list(self._registered_problems.get(provider, []))

    async def request_auth(self, model: Model) -> RequestAuth | None:
        """How a request to ``model`` authenticates when that is more than its key (see the module
        docstring): a stored login's token (renewed when due), Anthropic's bearer variables, or the key as
        ``Authorization: Bearer`` for an ``authHeader`` provider. None: the key alone (``api_key_for``)."""
        provider = model.provider
        if self.oauth.has_login(provider):
            return await self.oauth.request_auth(provider)
        token_auth = self._anthropic_env_auth(provider)
        if token_auth is not None:
            return token_auth
        config = self._provider_configs.get(provider)
        if config is not None and config.auth_header and not headers_contain(model.headers, "authorization"):
            key = self.api_key_for(model)
            if key and key != NO_KEY_PLACEHOLDER:
                return RequestAuth(headers={"Authorization": f"Bearer {key}"})
        return None

    def _anthropic_env_auth(self, provider: str) -> RequestAuth | None:
        """``ANTHROPIC_AUTH_TOKEN`` / ``ANTHROPIC_OAUTH_TOKEN`` when nothing for Anthropic is stored or
        configured."""
        if provider != "anthropic" or self.auth.get(provider) is not None:
            return None
        config = self._provider_configs.get(provider)
        if config is not None and config.api_key:
            return None
        env = self._provider_env(provider)
        bearer = env.get(ANTHROPIC_AUTH_TOKEN_ENV)
        if bearer:
            secrets.register(bearer)
            return RequestAuth(headers={"Authorization": f"Bearer {bearer}"})
        token = env.get(ANTHROPIC_OAUTH_TOKEN_ENV)
        if token:
            secrets.register(token)
            return RequestAuth(api_key=token)
        return None

    def find(self, provider: str, model_id: str) -> Model | None:
        """The model ``provider/model_id``; open providers (local servers, faux) make one up for any id."""
        for m in self._models:
            if m.provider == provider and m.id == model_id:
                return self._usable(m)
        info = self._builtin.get(provider)
        if info is not None and info.open_models and model_id:
            return self._open_model(info, model_id)
        return None

    def _open_model(self, info: ProviderInfo, model_id: str) -> Model:
        config = self._provider_configs.get(info.name)
        base_url = (config.base_url if config and config.base_url else None) or (
            ollama_base_url(self.env) if info.name == "ollama" else info.base_url
        )
        if info.name == LLAMA_ROUTER and (router := llama_server(self)) is not None:
            base_url = llama_router.inference_url(router) if "://" in router else router
        model = catalogue.open_model(info, model_id, base_url)
        compat = (info.compat or ModelCompat()).merged(config.compat if config else None)
        model = replace(
            model,
            headers=dict(config.headers) if config and config.headers else None,
            compat=compat if compat != ModelCompat() else None,
        )
        if info.name in SERVER_KINDS:  # what the server says about it (asked once, on first use)
            model = self.servers.apply(model, lambda: local_server(self, info.name))
        return model

    def _usable(self, model: Model) -> Model:
        """``model`` with ``{NAME}`` placeholders in its base URL filled from auth.json's ``env`` for the
        provider, then the environment (Cloudflare's account and gateway ids); unset ones stay."""
        if "{" not in model.base_url:
            return model
        env = self._provider_env(model.provider)
        url = _PLACEHOLDER.sub(lambda m: env.get(m.group(1)) or m.group(0), model.base_url)
        return replace(model, base_url=url) if url != model.base_url else model

    def _provider_env(self, provider: str) -> Mapping[str, str]:
        credential = self.auth.get(provider)
        return {**self.env, **credential.env} if credential and credential.env else self.env

    def _rank(self, provider: str) -> int:
        return PREFERRED_ORDER.index(provider) if provider in PREFERRED_ORDER else len(PREFERRED_ORDER)

    def resolve(self, ref: str) -> Model:
        """``provider/model-id`` or a bare model id (preferring providers with a key); ``ModelNotFound``
        (with the closest known ids) if unknown."""
        ref = ref.strip()
        named_provider: str | None = None
        if "/" in ref:
            provider, _, model_id = ref.partition("/")
            if provider in self._builtin or provider in self._provider_configs:
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
            raise self._not_found(ref, named_provider)
        matches.sort(key=lambda m: (not self.has_auth(m), self._rank(m.provider)))
        return self._usable(matches[0])

    def closest(self, ref: str, n: int = 3) -> list[str]:
        """Up to ``n`` known ``provider/id`` refs closest to ``ref``, best first."""
        return catalogue.closest(ref, [m.ref for m in self._models], n)

    def _not_found(self, ref: str, provider: str | None) -> ModelNotFound:
        suggestions = self.closest(ref)
        if provider is not None and not suggestions:
            suggestions = [m.ref for m in self._models if m.provider == provider][:3]
        hint = f" Did you mean {suggestions[0]}?" if suggestions else ""
        if len(suggestions) > 1:
            hint += f" (Also close: {', '.join(suggestions[1:])}.)"
        if provider is not None:
            text = (
                f"Unknown model '{ref}'.{hint} caddie --list-models {provider} lists the known ones; add others "
                f"to {self.models_json_path} (see docs/providers.md)."
            )
        else:
            text = (
                f"Unknown model '{ref}'.{hint} Name it as provider/model-id (for example anthropic/claude-sonnet-5 "
                f"or ollama/qwen2.5-coder:7b), or add it to {self.models_json_path} (see docs/providers.md)."
            )
        if self.warnings:
            text += " Note: " + " ".join(self.warnings)
        return ModelNotFound(text, suggestions)

    # -- auth -------------------------------------------------------------------------------------
    def _env_keys(self, provider: str) -> tuple[str, ...]:
        info = self._builtin.get(provider)
        return info.env_keys if info else ()

    def _keyless(self, model: Model) -> bool:
        if model.provider == LLAMA_ROUTER:  # keyless once configured, as in Pi
            return llama_server(self) is not None
        info = self._builtin.get(model.provider)
        if info is not None and not info.needs_key:
            return True
        return is_local_base_url(model.base_url)

    def _missing_url_env(self, model: Model) -> list[str]:
        """Variables the model's base URL still needs (unset ``{NAME}`` placeholders)."""
        return _PLACEHOLDER.findall(self._usable(model).base_url)

    def api_key_for(self, model: Model) -> str | None:
        """The key to send for ``model`` (runs ``!command`` keys); a placeholder for keyless local servers;
        None when no key is configured."""
        env = self._provider_env(model.provider)
        login = self.auth.oauth(model.provider)
        if login is not None and isinstance(login.get("access"), str):
            return str(login["access"])  # renewed, when due, by request_auth
        credential = self.auth.get(model.provider)
        candidates: list[str] = []
        if credential is not None and credential.key:
            candidates.append(credential.key)
        config = self._provider_configs.get(model.provider)
        if config is not None and config.api_key:
            candidates.append(config.api_key)
        for raw in candidates:
            resolved = resolve_config_value(raw, env)
            if resolved:
                secrets.register(resolved)
                return resolved
        for name in self._env_keys(model.provider):
            value = env.get(name)
            if value:
                secrets.register(value)
                return value
        return NO_KEY_PLACEHOLDER if self._keyless(model) else None

    def has_auth(self, model: Model) -> bool:
        """Whether a key is configured (or none is needed) and the base URL is complete, without running
        key commands."""
        return not self._missing_url_env(model) and (self.has_key(model.provider) or self._keyless(model))

    def key_hint(self, model: Model) -> str:
        """What to do so ``model`` has a key (for error messages): the variable to set and ``/login``."""
        if model.provider == LLAMA_ROUTER and llama_server(self) is None:
            return f"configure it with /login {LLAMA_ROUTER}, or set LLAMA_BASE_URL (and LLAMA_API_KEY if the server needs one)"
        missing = self._missing_url_env(model)
        if missing and self.has_key(model.provider):
            return f"set {' and '.join(missing)} (its base URL needs them)"
        keys = self._env_keys(model.provider)
        where = f"set {keys[0]}, or " if keys else ""
        extra = f" (its base URL also needs {' and '.join(missing)})" if missing else ""
        return (
            f"{where}store a key with /login {model.provider}, or add apiKey for provider "
            f"'{model.provider}' in {self.models_json_path}{extra}"
        )

    def has_key(self, provider: str) -> bool:
        """Whether a key for ``provider`` is stored, configured or in the environment."""
        return self.key_source(provider) is not None

    def key_source(self, provider: str) -> KeySource | None:
        """Where ``provider``'s credential comes from, without running key commands (Pi's
        ``getProviderAuthStatus``); None when there is none. Checked in this order: a
        stored login, a stored key, models.json ``apiKey``, the provider's variables, then Anthropic's token
        variables and the cloud SDKs' own credentials."""
        env = self._provider_env(provider)
        if self.oauth.has_login(provider):
            return KeySource("stored", "OAuth")
        credential = self.auth.get(provider)
        if credential is not None and credential.key and config_value_present(credential.key, env):
            return KeySource("stored")
        config = self._provider_configs.get(provider)
        if config is not None and config.api_key and config_value_present(config.api_key, env):
            return KeySource("models_json_command" if config.api_key.startswith("!") else "models_json_key")
        for name in self._env_keys(provider):
            if env.get(name):
                return KeySource("environment", name)
        if self._anthropic_env_auth(provider) is not None or ambient_credentials(provider, self.env):
            return KeySource("environment")
        return None

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
        2. a key for a built-in cloud provider (auth.json, models.json ``apiKey`` or its variable): Anthropic,
           then OpenAI, Google, OpenRouter, Groq, DeepSeek, xAI, then the others in catalogue order — that
           provider's default model (``DEFAULT_MODELS``);
        3. the first models.json model that has auth (or needs none);
        4. a local Ollama that answers within ``probe_timeout_s`` (``CADDIE_OLLAMA_URL`` overrides its URL);
        otherwise ``NoModelConfigured`` saying exactly what to set.
        """
        if settings is not None and (settings.default_model or settings.default_provider):
            return self._from_settings(settings)
        cloud = [p for p in self._builtin.values() if p.needs_key]
        cloud.sort(key=lambda p: self._rank(p.name))
        for info in cloud:
            if not self.has_key(info.name):
                continue
            model = self.provider_default(info.name)
            if model is not None and self.has_auth(model):
                return model
        for m in self._models:
            custom = m.provider in self._provider_configs and m.provider not in self._builtin
            if custom and self.has_auth(m):
                return self._usable(m)
        if probe_local:
            local = self._probe_ollama(probe_timeout_s)
            if local is not None:
                return local
        raise NoModelConfigured(self.no_model_text())

    def provider_default(self, provider: str) -> Model | None:
        """The model ``provider`` means when only the provider is named (``DEFAULT_MODELS``, else its first)."""
        model_id = DEFAULT_MODELS.get(provider)
        found = self.find(provider, model_id) if model_id else None
        if found is not None:
            return found
        return next((self._usable(m) for m in self._models if m.provider == provider), None)

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
            found = self.provider_default(provider)
            if found is None:
                raise NoModelConfigured(
                    f'settings.json sets "defaultProvider": "{provider}" but no "defaultModel", and caddie has no '
                    f'default for that provider. Add "defaultModel" to {where}.'
                )
            return found
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
        names = probe_ollama(ollama_base_url(self.env), timeout_s)
        model = self.find("ollama", names[0]) if names else None
        self._ollama_cache = model
        return model

    def no_model_text(self) -> str:
        settings_path = agent_dir() / "settings.json"
        ollama = (self.env.get(OLLAMA_URL_ENV) or DEFAULT_OLLAMA_URL).rstrip("/")
        lines = [
            "No model is configured. Do one of these:",
            "  - set ANTHROPIC_API_KEY or OPENAI_API_KEY (or GEMINI_API_KEY, OPENROUTER_API_KEY, ... - docs/providers.md "
            "lists every provider's variable), or store a key with /login in the interactive UI;",
            "  - pass --model provider/model-id, e.g. --model anthropic/claude-sonnet-5 or --model ollama/qwen2.5-coder:7b;",
            f'  - set "defaultProvider" and "defaultModel" in {settings_path};',
            f"  - start Ollama (caddie looks for it at {ollama}), or describe your local server "
            f"(LM Studio, vLLM, llama.cpp) in {self.models_json_path} - see docs/providers.md;",
            "  - or try caddie offline with --model faux/echo, or take the 30-second tour: caddie demo.",
        ]
        if self.warnings:
            lines.append("Also: " + " ".join(self.warnings))
        return "\n".join(lines)


def ambient_credentials(provider: str, env: Mapping[str, str]) -> bool:
    """Cloud credentials the provider's client finds by itself: AWS's chain for Amazon Bedrock, Google's
    application-default credentials for Vertex (checked without running anything)."""
    home = Path(env.get("HOME") or Path.home())
    if provider == "amazon-bedrock":
        files = [env.get("AWS_SHARED_CREDENTIALS_FILE") or home / ".aws" / "credentials"]
        if env.get("AWS_BEDROCK_SKIP_AUTH") == "1":  # a proxy that needs no credentials (Pi's switch)
            return True
        keys = (
            "AWS_BEARER_TOKEN_BEDROCK",
            "AWS_PROFILE",
            "AWS_ACCESS_KEY_ID",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        )
        return any(env.get(k) for k in keys) or any(Path(f).is_file() for f in files)
    if provider == "google-vertex":
        explicit = env.get("GOOGLE_APPLICATION_CREDENTIALS")
        adc = (
            Path(explicit)
            if explicit
            else home / ".config" / "gcloud" / "application_default_credentials.json"
        )
        return adc.is_file()
    return False


def llama_server(registry: ModelRegistry) -> str | None:
    """The llama.cpp router's URL (``/login llama.cpp`` or ``LLAMA_BASE_URL``); None when not configured."""
    credential = registry.auth.get(LLAMA_ROUTER)
    return llama_router.server_url(credential.env if credential else None, registry.env)


def local_server(registry: ModelRegistry, provider: str) -> LocalServer | None:
    """Where ``provider``'s server is, when it is a local one caddie can ask (``CADDIE_LOCAL_DISCOVERY=0``:
    none is asked)."""
    if registry.env.get(LOCAL_DISCOVERY_ENV, "").strip() == "0":
        return None
    kind = SERVER_KINDS.get(provider)
    config = registry._provider_configs.get(provider)
    if provider == LLAMA_ROUTER:
        url = llama_server(registry)
        if url is None:
            return None
        base = llama_router.inference_url(url) if "://" in url else url
    elif kind is not None:
        base = (config.base_url if config and config.base_url else None) or (
            ollama_base_url(registry.env) if provider == "ollama" else registry._builtin[provider].base_url
        )
    elif (
        config is not None
        and config.base_url
        and is_local_base_url(config.base_url)
        and (config.api in (None, "openai-completions"))
    ):
        kind, base = "openai", config.base_url
    else:
        return None
    key = registry.api_key_for(
        Model(id="", name="", api="openai-completions", provider=provider, base_url=base)
    )
    return LocalServer(provider, kind or "openai", base, key)


def account_models(auth: AuthStore) -> dict[str, set[str]]:
    """Provider → the model ids its login says the account may use (Copilot's ``availableModelIds``)."""
    out: dict[str, set[str]] = {}
    for provider in auth.oauth_providers():
        ids = (auth.oauth(provider) or {}).get("availableModelIds")
        if isinstance(ids, list) and all(isinstance(i, str) for i in ids):
            out[provider] = set(ids)
    return out
