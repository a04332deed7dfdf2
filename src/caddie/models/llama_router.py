"""Pi's llama.cpp router provider (``llama.cpp``): where the router is, and a client for managing its models.

A ``llama-server`` started without a model is a *router*: it finds GGUF files (``--models-dir``), loads and
unloads them on request, and downloads new ones from Hugging Face. As in Pi 0.84.4:

- the provider is configured by ``/login llama.cpp`` (the router URL and an optional key, stored in auth.json
  as ``{"type": "api_key", "key"?: …, "env": {"LLAMA_BASE_URL": url}}``) or by ``LLAMA_BASE_URL`` /
  ``LLAMA_API_KEY`` in the environment; unconfigured, it has no models;
- its models are the ones the router has loaded (or sleeping, or unloaded presets it loads on first use);
- ``/llama`` (interactive) loads, unloads and downloads them through this client.

The client speaks the router's API: ``GET /models`` (``?reload=1`` after a download), ``GET /props``,
``POST /models/load`` / ``/models/unload`` / ``/models`` (``{"model"}``), polling ``/models`` for the state;
Hugging Face search uses ``/api/models`` (``HF_ENDPOINT`` moves it, as for Hugging Face's own tools).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from caddie.errors import ConfigurationError, ProviderError
from caddie.models.local_servers import ServerModel, parse_router_models

__all__ = [
    "DEFAULT_LLAMA_SERVER_URL",
    "HuggingFaceClient",
    "LlamaRouterClient",
    "LlamaRouterError",
    "Quantization",
    "find_hugging_face_token",
    "format_bytes",
    "inference_url",
    "normalize_server_url",
    "parse_download_progress",
    "server_url",
]

DEFAULT_LLAMA_SERVER_URL = "http://127.0.0.1:8080"
BASE_URL_ENV = "LLAMA_BASE_URL"
API_KEY_ENV = "LLAMA_API_KEY"
REQUEST_TIMEOUT_S = 15.0


class LlamaRouterError(ProviderError):
    """The router (or Hugging Face) refused or failed a request; the message is the server's, or says what
    to check."""


def normalize_server_url(value: str) -> str:
    """``http(s)://host[:port][/path]`` without a trailing slash or ``/v1`` (Pi's normalisation);
    ``ConfigurationError`` for anything else."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"{text or '(empty)'} is not a server URL: give http:// or https:// and the host, "
            f"e.g. {DEFAULT_LLAMA_SERVER_URL}"
        )
    path = re.sub(r"/+$", "", parts.path)
    path = path[:-3] if path.endswith("/v1") else path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def inference_url(server: str) -> str:
    """The OpenAI-style base URL requests go to: ``<server>/v1``."""
    return normalize_server_url(server) + "/v1"


def server_url(credential_env: Mapping[str, str] | None, env: Mapping[str, str]) -> str | None:
    """The configured router URL: the stored credential's ``LLAMA_BASE_URL``, else the environment's; None
    when neither is set (the provider is not configured). A malformed URL is returned as it is, so the
    request that uses it fails with the address in its message."""
    for source in (credential_env or {}, env):
        value = (source.get(BASE_URL_ENV) or "").strip()
        if value:
            try:
                return normalize_server_url(value)
            except ConfigurationError:
                return value
    return None


def format_bytes(size: int) -> str:
    """``512 B``, ``1.50 KiB``, ``253.1 MiB`` (as Pi shows sizes)."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    unit = "KiB"
    for next_unit in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value /= 1024
        unit = next_unit
    return f"{value:.1f} {unit}" if value >= 10 else f"{value:.2f} {unit}"


def parse_download_progress(data: Any) -> tuple[float, str] | None:
    """(ratio, ``done / total``) of a download from the router's progress object (per-file ``done``/``total``
    byte counts, possibly under ``progress``); None without sizes."""
    if not isinstance(data, dict):
        return None
    nested = data.get("progress")
    files: dict[str, Any] = nested if isinstance(nested, dict) else data
    done = total = 0
    for value in files.values():
        if (
            isinstance(value, dict)
            and isinstance(value.get("done"), int | float)
            and isinstance(value.get("total"), int | float)
        ):
            done += int(value["done"])
            total += int(value["total"])
    if total <= 0:
        return None
    return done / total, f"{format_bytes(done)} / {format_bytes(total)}"


def _error_text(payload: Any, fallback: str) -> str:
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
    return fallback


def _request(url: str, method: str, body: Any, token: str | None, timeout_s: float, what: str) -> Any:
    import urllib.error
    import urllib.request

    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body).encode("utf-8")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as e:
        try:
            payload = json.loads(e.read().decode("utf-8"))
        except (OSError, ValueError):
            payload = None
        if e.code == 429 and what == "Hugging Face":
            retry = e.headers.get("retry-after") if e.headers else None
            raise LlamaRouterError(
                f"Hugging Face rate limit reached; retry in {retry}s"
                if retry
                else "Hugging Face rate limit reached"
            ) from None
        raise LlamaRouterError(_error_text(payload, f"{what} returned HTTP {e.code}")) from None
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise LlamaRouterError(f"Could not connect to the server ({url}: {reason}).") from None
    try:
        return json.loads(raw.decode("utf-8")) if raw.strip() else None
    except ValueError:
        return None


@dataclass
class LlamaRouterClient:
    """The router at ``server`` (normalised), with an optional key. Blocking calls: run them in a thread."""

    server: str
    api_key: str | None = None
    timeout_s: float = REQUEST_TIMEOUT_S

    def __post_init__(self) -> None:
        self.server = normalize_server_url(self.server)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        return _request(self.server + path, method, body, self.api_key, self.timeout_s, "llama.cpp")

    def list(self, reload: bool = False) -> list[ServerModel]:
        """Every model the router knows, with its state; ``LlamaRouterError`` when the server is not a router."""
        payload = self._call("GET", "/models?reload=1" if reload else "/models")
        if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
            raise LlamaRouterError("llama.cpp returned an invalid model catalog")
        models = parse_router_models(payload)
        if models is None:
            raise LlamaRouterError(
                "Server is not running in llama.cpp router mode (start llama-server without -m/--model)"
            )
        return models

    def autoload(self) -> bool:
        """Whether the router loads an unloaded preset on first use (``/props`` ``models_autoload``)."""
        try:
            props = self._call("GET", "/props")
        except LlamaRouterError:
            return False
        return isinstance(props, dict) and props.get("models_autoload") is True

    def load(self, model: str) -> None:
        self._call("POST", "/models/load", {"model": model})

    def unload(self, model: str) -> None:
        self._call("POST", "/models/unload", {"model": model})

    def download(self, model: str) -> None:
        self._call("POST", "/models", {"model": model})

    def find(self, model: str) -> ServerModel | None:
        return next((m for m in self.list() if m.id == model), None)

    def wait_loaded(
        self, model: str, cancelled: Callable[[], bool], interval_s: float = 0.25
    ) -> ServerModel | None:
        """Poll until ``model`` is loaded (returned), its load failed (``LlamaRouterError``), or ``cancelled()``
        (None)."""
        while not cancelled():
            entry = self.find(model)
            if entry is not None and entry.status == "loaded":
                return entry
            if entry is not None and entry.failed:
                raise LlamaRouterError(f"{model} failed to load (see the llama.cpp server's log)")
            time.sleep(interval_s)
        return None

    def wait_unloaded(self, model: str, interval_s: float = 0.1, limit_s: float = 60.0) -> None:
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            entry = self.find(model)
            if entry is None or entry.status == "unloaded":
                return
            time.sleep(interval_s)
        raise LlamaRouterError(f"{model} is still loaded after {limit_s:.0f}s")

    def download_state(self, model: str) -> tuple[ServerModel | None, Any]:
        """The model's entry and its raw ``status.progress`` (for ``parse_download_progress``)."""
        payload = self._call("GET", "/models")
        for item in payload.get("data", []) if isinstance(payload, dict) else []:
            if isinstance(item, dict) and item.get("id") == model:
                raw_status = item.get("status")
                status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
                return next((m for m in parse_router_models({"data": [item]}) or []), None), status.get(
                    "progress"
                )
        return None, None


# --------------------------------------------------------------------------------------------------
# Hugging Face search (for "Download model…")

_QUANT = re.compile(
    r"(?:^|[-_.])((?:UD-)?(?:IQ\d(?:_[A-Z0-9]+)+|Q\d(?:_[A-Z0-9]+)+|BF16|F16|F32|MXFP\d(?:_[A-Z0-9]+)*))$",
    re.IGNORECASE,
)
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")


@dataclass(frozen=True, slots=True)
class Quantization:
    name: str
    size: int | None
    """Bytes of all its files (None when Hugging Face did not give every size)."""


def quantizations(siblings: Any) -> list[Quantization]:
    """The GGUF quantizations a repository offers (``Q4_K_M`` first, then by size), from its file list."""
    sizes: dict[str, list[int | None]] = {}
    for file in siblings if isinstance(siblings, list) else []:
        name = file.get("rfilename") if isinstance(file, dict) else None
        if not isinstance(name, str) or not name.lower().endswith(".gguf"):
            continue
        base = name.rsplit("/", 1)[-1]
        if base.lower().startswith("mmproj"):
            continue
        match = _QUANT.search(_SHARD.sub("", base[:-5]))
        if match is None:
            continue
        size = file.get("size")
        sizes.setdefault(match.group(1).upper(), []).append(size if isinstance(size, int) else None)
    out = [
        Quantization(name, None if None in parts else sum(p for p in parts if p is not None))
        for name, parts in sizes.items()
    ]
    return sorted(out, key=lambda q: (q.name != "Q4_K_M", q.size if q.size is not None else 2**63, q.name))


def find_hugging_face_token(env: Mapping[str, str] | None = None) -> str | None:
    """``HF_TOKEN``, else the first token file of ``HF_TOKEN_PATH``, ``$HF_HOME/token``,
    ``$XDG_CACHE_HOME/huggingface/token``, ``~/.cache/huggingface/token`` (as Pi and Hugging Face look)."""
    env = os.environ if env is None else env
    token = (env.get("HF_TOKEN") or "").strip()
    if token:
        return token
    paths = [
        env.get("HF_TOKEN_PATH"),
        str(Path(env["HF_HOME"]) / "token") if env.get("HF_HOME") else None,
        str(Path(env["XDG_CACHE_HOME"]) / "huggingface" / "token") if env.get("XDG_CACHE_HOME") else None,
        str(Path.home() / ".cache" / "huggingface" / "token"),
    ]
    for path in dict.fromkeys(p for p in paths if p):
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None


@dataclass
class HuggingFaceClient:
    token: str | None = None
    base_url: str = "https://huggingface.co"
    timeout_s: float = REQUEST_TIMEOUT_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HuggingFaceClient:
        env = os.environ if env is None else env
        base = (env.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        return cls(find_hugging_face_token(env), base)

    def _get(self, path: str) -> Any:
        return _request(self.base_url + path, "GET", None, self.token, self.timeout_s, "Hugging Face")

    def search(self, query: str) -> list[tuple[str, int]]:
        """(repository, downloads) of GGUF repositories matching ``query``, most downloaded first."""
        params = urlencode(
            {"search": query, "filter": "gguf", "sort": "downloads", "direction": "-1", "limit": "20"}
        )
        payload = self._get(f"/api/models?{params}")
        if not isinstance(payload, list):
            raise LlamaRouterError("Hugging Face returned invalid search results")
        return [
            (str(m["id"]), int(m["downloads"]) if isinstance(m.get("downloads"), int) else 0)
            for m in payload
            if isinstance(m, dict) and isinstance(m.get("id"), str)
        ]

    def details(self, repository: str) -> tuple[str, str | None, list[Quantization]]:
        """(id, gated — ``"auto"``/``"manual"``/None —, quantizations) of a repository."""
        encoded = "/".join(quote(part, safe="") for part in repository.split("/"))
        payload = self._get(f"/api/models/{encoded}?blobs=true")
        if not isinstance(payload, dict):
            raise LlamaRouterError("Hugging Face returned invalid model details")
        gated = payload.get("gated")
        return (
            str(payload.get("id") or repository),
            gated if gated in ("auto", "manual") else None,
            quantizations(payload.get("siblings")),
        )
