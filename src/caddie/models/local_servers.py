"""What a local model server says it serves: its models and, where it publishes one, each model's context size.

caddie's keyless local providers (``ollama``, ``lmstudio``, ``llamacpp``, ``vllm``) and Pi's llama.cpp router
(``llama.cpp``) accept any model id; asking the server gives the real list (for ``--list-models`` and the
``/model`` picker) and the real context window (for the footer's percentage, compaction and mulligan). What
each server publishes:

| server | models | context size | images |
|---|---|---|---|
| Ollama | ``GET /api/tags`` | ``POST /api/show``: ``num_ctx`` among its parameters, else the model's own ``<arch>.context_length`` capped at 32,768; ``GET /api/ps``: the size it runs with, once loaded | ``capabilities`` has ``vision`` |
| LM Studio | ``GET /api/v0/models`` (``type`` ``llm``/``vlm``) | ``loaded_context_length`` of a loaded model, else ``max_context_length`` | ``type: vlm`` |
| llama.cpp ``llama-server`` | ``GET /v1/models`` | ``GET /props`` ``default_generation_settings.n_ctx`` (what ``-c`` set), else ``meta.n_ctx_train`` | ``/props`` ``modalities.vision`` |
| llama.cpp router | ``GET /models`` (with each model's ``status``) | ``meta.n_ctx``, else ``meta.n_ctx_train``, else the ``--ctx-size``/``-c`` of its ``status.args`` | ``architecture.input_modalities`` |
| vLLM | ``GET /v1/models`` | ``max_model_len`` | — |
| others (llama-cpp-python, …) | ``GET /v1/models`` | — (set ``contextWindow`` in models.json) | — |

Every request has a short timeout (``DISCOVERY_TIMEOUT_S``); a server that does not answer gives None, and
caddie carries on with what it assumed (32,768 tokens). Pure parsing functions (``parse_*``) are apart from the
one I/O helper, so each server's shapes are tested without a server.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from caddie.ai.catalogue import LOCAL_CONTEXT_WINDOW
from caddie.ai.model import Model
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER

__all__ = [
    "DISCOVERY_TIMEOUT_S",
    "LOCAL_DISCOVERY_ENV",
    "SERVER_KINDS",
    "LocalServer",
    "ServerModel",
    "ServerModels",
    "discover",
    "parse_lmstudio_models",
    "parse_ollama_show",
    "parse_openai_models",
    "parse_router_models",
    "server_root",
]

DISCOVERY_TIMEOUT_S = 1.0
LOCAL_DISCOVERY_ENV = "CADDIE_LOCAL_DISCOVERY"
"""``0`` turns the asking off (the test suite does, so servers running on this machine cannot leak in)."""

SERVER_KINDS: dict[str, str] = {
    "ollama": "ollama",
    "lmstudio": "lmstudio",
    "llamacpp": "llama.cpp",
    "llama.cpp": "llama.cpp-router",
    "vllm": "openai",
}
"""Provider → what its server is (``openai``: a plain OpenAI-style listing, which also reads vLLM's sizes)."""


@dataclass(frozen=True, slots=True)
class ServerModel:
    id: str
    context_window: int | None = None
    """Tokens the server runs the model with (None: it does not say)."""
    images: bool = False
    status: str | None = None
    """The llama.cpp router's ``status.value`` (``loaded``, ``unloaded``, ``loading``, ``sleeping``…)."""
    source: str | None = None
    """The router's ``source`` (``preset``, ``cache``…)."""
    failed: bool = False
    """The router tried to load it and the load failed."""


def server_root(base_url: str) -> str:
    """``http://host:port`` (and any path before ``/v1``) of an OpenAI-style base URL."""
    root = base_url.strip().rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# --------------------------------------------------------------------------------------------------
# Parsing what servers answer (pure)


def parse_openai_models(payload: Any) -> list[ServerModel]:
    """``/v1/models``: ids, with vLLM's ``max_model_len`` or llama.cpp's ``meta.n_ctx``/``n_ctx_train``."""
    data = payload.get("data") if isinstance(payload, dict) else None
    out: list[ServerModel] = []
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        meta = _dict(item.get("meta"))
        window = _int(item.get("max_model_len")) or _int(meta.get("n_ctx")) or _int(meta.get("n_ctx_train"))
        out.append(ServerModel(item["id"], window))
    return out


def parse_llama_props(payload: Any) -> tuple[int | None, bool]:
    """llama-server's ``/props``: the context size it runs with (``-c``) and whether it takes images."""
    if not isinstance(payload, dict):
        return None, False
    settings = payload.get("default_generation_settings")
    n_ctx = _int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    modalities = payload.get("modalities")
    vision = isinstance(modalities, dict) and modalities.get("vision") is True
    return n_ctx, vision


_CTX_ARGS = ("--ctx-size", "-c", "-ctx")


def parse_router_models(payload: Any) -> list[ServerModel] | None:
    """The llama.cpp router's ``/models``; None when the server is not a router (no ``status`` per model)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        return None
    out: list[ServerModel] = []
    for item in data:
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(item.get("id") if isinstance(item, dict) else None, str) or not isinstance(
            status, dict
        ):
            return None
        value = status.get("value")
        if not isinstance(value, str):
            return None
        meta = _dict(item.get("meta"))
        window = _int(meta.get("n_ctx")) or _int(meta.get("n_ctx_train"))
        args = _list(status.get("args"))
        for flag, arg in itertools.pairwise(args):
            if window is None and flag in _CTX_ARGS and isinstance(arg, str) and arg.isdigit():
                window = _int(int(arg))
        modalities = _dict(item.get("architecture")).get("input_modalities")
        source = item.get("source")
        out.append(
            ServerModel(
                item["id"],
                window,
                images=isinstance(modalities, list) and "image" in modalities,
                status=value,
                source=source if isinstance(source, str) else None,
                failed=bool(status.get("failed")),
            )
        )
    return out


def parse_lmstudio_models(payload: Any) -> list[ServerModel]:
    """LM Studio's ``/api/v0/models``: language and vision models (not embeddings), with their context size."""
    data = payload.get("data") if isinstance(payload, dict) else None
    out: list[ServerModel] = []
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        if item.get("type") not in ("llm", "vlm", None):
            continue
        loaded = item.get("state") == "loaded"
        window = (_int(item.get("loaded_context_length")) if loaded else None) or _int(
            item.get("max_context_length")
        )
        out.append(
            ServerModel(item["id"], window, images=item.get("type") == "vlm", status=item.get("state"))
        )
    return out


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def parse_ollama_show(payload: Any) -> tuple[int | None, bool]:
    """Ollama's ``/api/show``: the context size (``num_ctx`` when the model sets one, else its trained length
    capped at 32,768 — Ollama runs models with less than that unless told) and whether it takes images."""
    if not isinstance(payload, dict):
        return None, False
    parameters = payload.get("parameters")
    match = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    window = _int(int(match.group(1))) if match else None
    if window is None:
        info = _dict(payload.get("model_info"))
        trained = [_int(v) for k, v in info.items() if isinstance(k, str) and k.endswith(".context_length")]
        native = next((t for t in trained if t), None)
        window = min(native, LOCAL_CONTEXT_WINDOW) if native else None
    capabilities = payload.get("capabilities")
    return window, isinstance(capabilities, list) and "vision" in capabilities


def parse_ollama_running(payload: Any) -> dict[str, int]:
    """Ollama's ``/api/ps``: the context size each loaded model runs with (newer Ollama reports it)."""
    models = payload.get("models") if isinstance(payload, dict) else None
    out: dict[str, int] = {}
    for item in models if isinstance(models, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str) and _int(item.get("context_length")):
            out[item["name"]] = item["context_length"]
    return out


# --------------------------------------------------------------------------------------------------
# Asking the server


Fetch = Callable[[str, str, Any], Any]
"""(method, url, JSON body or None) → parsed JSON; raises OSError/ValueError when the server fails."""


def http_fetch(api_key: str | None = None, timeout_s: float = DISCOVERY_TIMEOUT_S) -> Fetch:
    """A ``Fetch`` over urllib with ``timeout_s`` per request and the key as a bearer token (not the keyless
    placeholder)."""

    def fetch(method: str, url: str, body: Any) -> Any:
        import urllib.request  # only when a server is asked

        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode("utf-8")
        if api_key and api_key != NO_KEY_PLACEHOLDER:
            headers["Authorization"] = f"Bearer {api_key}"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read().decode("utf-8"))

    return fetch


def _try(fetch: Fetch, method: str, url: str, body: Any = None) -> Any:
    try:
        return fetch(method, url, body)
    except (OSError, ValueError):
        return None


def discover(kind: str, base_url: str, fetch: Fetch) -> list[ServerModel] | None:
    """The models a ``kind`` server (a ``SERVER_KINDS`` value) at ``base_url`` serves; None when it does not
    answer (or is not that kind of server: a llama.cpp router that answers without model states)."""
    root = server_root(base_url)
    if kind == "ollama":
        return _ollama(root, fetch)
    if kind == "lmstudio":
        listed = _try(fetch, "GET", root + "/api/v0/models")
        if listed is not None:
            return parse_lmstudio_models(listed)
    elif kind == "llama.cpp-router":
        listed = _try(fetch, "GET", root + "/models")
        return None if listed is None else parse_router_models(listed)
    elif kind == "llama.cpp":
        listed = _try(fetch, "GET", root + "/v1/models")
        if listed is None:
            return None
        models = parse_openai_models(listed)
        n_ctx, vision = parse_llama_props(_try(fetch, "GET", root + "/props"))
        return [ServerModel(m.id, n_ctx or m.context_window, vision) for m in models]
    listed = _try(fetch, "GET", root + "/v1/models")
    return None if listed is None else parse_openai_models(listed)


def _ollama(root: str, fetch: Fetch) -> list[ServerModel] | None:
    tags = _try(fetch, "GET", root + "/api/tags")
    items = tags.get("models") if isinstance(tags, dict) else None
    if not isinstance(items, list):
        listed = _try(fetch, "GET", root + "/v1/models")
        return None if listed is None else parse_openai_models(listed)
    running = parse_ollama_running(_try(fetch, "GET", root + "/api/ps"))
    out: list[ServerModel] = []
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            continue
        window, vision = parse_ollama_show(_try(fetch, "POST", root + "/api/show", {"model": name}))
        out.append(ServerModel(name, running.get(name) or window, vision))
    return out


def selectable(models: list[ServerModel], autoload: bool) -> list[ServerModel]:
    """The router models a request may name (as Pi decides): loaded or sleeping ones, and unloaded presets
    when the router loads on first use (``models_autoload``)."""
    out = []
    for m in models:
        if m.status in ("loaded", "sleeping") or (
            autoload and m.status == "unloaded" and not m.failed and m.source == "preset"
        ):
            out.append(m)
    return out


def router_autoload(root: str, fetch: Fetch) -> bool:
    """Whether the router loads an unloaded model on first use (``/props`` ``models_autoload``)."""
    props = _try(fetch, "GET", server_root(root) + "/props")
    return isinstance(props, Mapping) and props.get("models_autoload") is True


# --------------------------------------------------------------------------------------------------
# What the registry keeps


@dataclass(frozen=True, slots=True)
class LocalServer:
    """One local server to ask: the provider it serves, what it is (a ``SERVER_KINDS`` value), where, the key."""

    provider: str
    kind: str
    base_url: str
    api_key: str | None = None


class ServerModels:
    """What each local server said it serves, by provider, remembered for the process (``ask``/``ask_all``
    replace it). ``fetch_for`` makes the HTTP helper (tests pass another)."""

    def __init__(self, fetch_for: Callable[[str | None, float], Fetch] = http_fetch) -> None:
        self._fetch_for = fetch_for
        self._said: dict[str, list[ServerModel] | None] = {}
        self._selectable: dict[str, list[ServerModel]] = {}
        self._lock = threading.Lock()

    def ask(self, server: LocalServer, timeout_s: float = DISCOVERY_TIMEOUT_S) -> list[ServerModel] | None:
        """Ask ``server`` now; None when it does not answer."""
        fetch = self._fetch_for(server.api_key, timeout_s)
        models = discover(server.kind, server.base_url, fetch)
        usable = models or []
        if server.kind == "llama.cpp-router" and models is not None:
            usable = selectable(models, router_autoload(server.base_url, fetch))
        with self._lock:
            self._said[server.provider] = models
            self._selectable[server.provider] = usable
        return models

    def ask_all(self, servers: Iterable[LocalServer], timeout_s: float = DISCOVERY_TIMEOUT_S) -> None:
        """Ask every server at once (one thread each)."""
        threads = [threading.Thread(target=self.ask, args=(s, timeout_s), daemon=True) for s in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def asked(self, provider: str) -> bool:
        return provider in self._said

    def listed(self) -> dict[str, list[str]]:
        """Provider → the ids of the models its server offers for requests (answered servers only)."""
        with self._lock:
            return {p: [m.id for m in models] for p, models in self._selectable.items() if models}

    def get(self, provider: str, model_id: str) -> ServerModel | None:
        with self._lock:
            return next((m for m in self._said.get(provider) or [] if m.id == model_id), None)

    def apply(self, model: Model, where: Callable[[], LocalServer | None]) -> Model:
        """``model`` with what its server said about it: the context size it runs with (the output cap kept
        inside it) and image input. The server is asked (via ``where()``) the first time its provider is seen."""
        if not self.asked(model.provider):
            server = where()
            if server is not None:
                self.ask(server)
        found = self.get(model.provider, model.id)
        if found is None:
            return model
        window = found.context_window or model.context_window
        return replace(
            model,
            context_window=window,
            max_tokens=min(model.max_tokens, window),
            input=["text", "image"] if found.images else model.input,
        )
