"""Import a model API's SDK in a worker thread, before the first request needs it.

The provider modules import their SDK (``openai``, ``anthropic``, ``google.genai``) inside ``stream`` so
that starting caddie does not pay for SDKs it will not call. Those imports are slow (``import anthropic``
2.5–3.4 s on a 2-core machine, ``import openai`` 0.6–1.1 s: hundreds of pydantic type modules).
``start_provider_preload(model)`` does the same imports (plus the SDK's HTTP stack, a throw-away client and
the provider's one-off warm-ups) in a daemon thread named ``preload-<api>`` as soon as the model is known,
so they overlap whatever the process waits on next: the user's typing (TUI), an RPC client's first command,
piped input, session loading. ``ai.stream.stream`` awaits ``wait_preloaded(api)`` before every request, so
an SDK is never imported on the event loop.

Everything here is idempotent (one thread per API per process) and never raises: a missing SDK or a broken
module surfaces again, clearly, from the request itself.

Adding an API: one ``register_preload(api, SdkSpec(...))`` (or an entry in ``_SPECS`` for built-in ones).
The provider module (``ai.stream``'s table of built-in providers) is imported too, and its optional
module-level ``_known_create_fields()`` / ``preload_warmup()`` functions are called once.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import ModuleType
from typing import Protocol


class _HasApi(Protocol):
    @property
    def api(self) -> str: ...


@dataclass(frozen=True)
class SdkSpec:
    """What to load for one model API."""

    modules: tuple[str, ...]
    """The SDK package first, then the SDK modules the first request imports."""
    client: Callable[[ModuleType], object] | None = None
    """Builds a throw-away client from the SDK package (it imports more, and sets up TLS, on construction)."""
    warmups: tuple[Callable[[], object], ...] = ()
    """One-off work the first request would otherwise do (type-hint resolution, pydantic schemas)."""
    optional: tuple[str, ...] = field(default=("opentelemetry", "anyio"))
    """Module name prefixes that may be missing without it being a problem."""


_HTTP_STACK = ("anyio._backends._asyncio", "concurrent.futures.thread")
"""Imported by the HTTP client on its first request (anyio picks its asyncio backend lazily)."""


def _openai_client(sdk: ModuleType) -> object:
    return sdk.AsyncOpenAI(api_key="preload", base_url="http://127.0.0.1:9")


def _azure_client(sdk: ModuleType) -> object:
    return sdk.AsyncAzureOpenAI(api_key="preload", azure_endpoint="http://127.0.0.1:9", api_version="preview")


def _anthropic_client(sdk: ModuleType) -> object:
    return sdk.AsyncAnthropic(api_key="preload", base_url="http://127.0.0.1:9")


def _http_client(sdk: ModuleType) -> object:
    return sdk.AsyncClient()


_OPENAI_RESPONSES = ("openai", "openai.resources.responses", *_HTTP_STACK)
_PLAIN_HTTP = SdkSpec(("httpx2", "caddie.ai.providers.http_stream", *_HTTP_STACK), _http_client)
"""APIs sent as plain HTTP (``http_stream``): the HTTP client the SDKs are built on."""
_SPECS: dict[str, SdkSpec] = {
    "openai-completions": SdkSpec(
        ("openai", "openai.resources.chat.completions", "openai.resources.chat.chat", *_HTTP_STACK),
        _openai_client,
    ),
    "openai-responses": SdkSpec(_OPENAI_RESPONSES, _openai_client),
    "azure-openai-responses": SdkSpec(_OPENAI_RESPONSES, _azure_client),
    "anthropic-messages": SdkSpec(
        (
            "anthropic",
            "anthropic.resources.messages",
            "opentelemetry.propagate",  # the SDK's tracing imports it on the first request, when installed
            *_HTTP_STACK,
        ),
        _anthropic_client,
    ),
    "google-generative-ai": _PLAIN_HTTP,
    "pi-messages": _PLAIN_HTTP,
    "mistral-conversations": _PLAIN_HTTP,
    "google-vertex": _PLAIN_HTTP,
    "openai-codex-responses": SdkSpec(
        ("httpx2", "caddie.ai.providers.http_stream", "websockets.asyncio.client", *_HTTP_STACK), _http_client
    ),
}
_PROVIDER_HOOKS = ("_known_create_fields", "preload_warmup")
"""Module-level functions of a provider module that cache something slow on their first call."""


def register_preload(api: str, spec: SdkSpec) -> None:
    """What to import in the background for ``api`` (an extension's provider, or a new built-in one)."""
    _SPECS[api] = spec


def spec_for(api: str) -> SdkSpec | None:
    return _SPECS.get(api)


def thread_name(api: str) -> str:
    """The name of the thread that preloads ``api`` (visible in ``threading.enumerate()``)."""
    return f"preload-{api}"


def _provider_module(api: str) -> str | None:
    from caddie.ai import stream  # not at module level: ai.stream imports this module

    return stream.builtin_provider_module(api)


def _make_client(spec: SdkSpec) -> None:
    if spec.client is not None:
        spec.client(importlib.import_module(spec.modules[0]))


def _load(api: str, spec: SdkSpec) -> None:
    problem: BaseException | None = None
    provider = _provider_module(api)
    for name in (*spec.modules, *([provider] if provider else [])):
        try:
            module = importlib.import_module(name)
            if name == provider:
                for hook in _PROVIDER_HOOKS:
                    function: Callable[[], object] | None = getattr(module, hook, None)
                    if callable(function):
                        function()
        except ModuleNotFoundError as exc:
            if not name.startswith(spec.optional):  # optional parts of the HTTP stack
                problem = problem or exc
        except Exception as exc:  # keep loading the rest; the first problem is reported
            problem = problem or exc
    if problem is None:
        try:
            _make_client(spec)
        except Exception as exc:
            problem = exc
    for warmup in spec.warmups if problem is None else ():
        try:
            warmup()
        except Exception:
            pass  # only a warm-up: the request itself does the same work if this did not
    if problem is not None:
        raise problem


_lock = threading.Lock()
_started: dict[str, Future[None]] = {}
_running = 0
_responsive = False
_saved_interval: float | None = None
PRELOAD_SWITCH_INTERVAL_S = 0.0002
"""The GIL switch interval while a preload runs in an interactive process. Python's default (5 ms) lets an
importing thread keep the event loop waiting for the GIL after every select(), which adds up to seconds of
unanswered keys; with a short interval the loop gets the GIL back at once. Headless modes keep the default:
they have nobody typing, and frequent switches only add overhead to two threads that both compute."""


def _apply_switch_interval() -> None:
    """Called with ``_lock`` held: lower the interval while a preload runs for a responsive caller."""
    global _saved_interval
    if _running and _responsive and _saved_interval is None:
        _saved_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(_saved_interval, PRELOAD_SWITCH_INTERVAL_S))
    elif not _running and _saved_interval is not None:
        sys.setswitchinterval(_saved_interval)
        _saved_interval = None


def preload(api: str, *, responsive: bool = True) -> Future[None] | None:
    """Start loading ``api``'s SDK in the background (once per process); None for APIs with nothing to load.

    ``responsive``: an event loop must keep answering while the thread imports (a UI); the GIL is then
    handed back more often until the import is done."""
    global _running, _responsive
    spec = _SPECS.get(api)
    if spec is None:
        return None
    with _lock:
        if responsive and not _responsive:
            _responsive = True
            _apply_switch_interval()
        future = _started.get(api)
        if future is not None:
            return future
        future = Future()
        _started[api] = future
        _running += 1
        _apply_switch_interval()

    def run() -> None:
        global _running
        try:
            _load(api, spec)
        except BaseException as exc:  # a missing SDK surfaces again, clearly, on the first request
            future.set_exception(exc)
        else:
            future.set_result(None)
        finally:
            with _lock:
                _running -= 1
                _apply_switch_interval()

    try:
        threading.Thread(target=run, name=thread_name(api), daemon=True).start()
    except RuntimeError as exc:  # no threads left (or the interpreter is shutting down): load on demand
        with _lock:
            _running -= 1
            _apply_switch_interval()
        future.set_exception(exc)
    return future


def import_in_background(modules: tuple[str, ...], *, responsive: bool = True) -> Future[None]:
    """Import ``modules`` in a daemon thread (once per process for the same tuple) — a library an extension
    needs only later (the MCP SDK: over a second of imports), kept off the event loop. ``responsive`` as in
    ``preload``: the GIL is handed back often while it runs, so a UI keeps answering keys. The future holds
    the first import error, if any."""
    global _running, _responsive
    key = "modules:" + ",".join(modules)
    with _lock:
        if responsive and not _responsive:
            _responsive = True
            _apply_switch_interval()
        future = _started.get(key)
        if future is not None:
            return future
        future = Future()
        _started[key] = future
        _running += 1
        _apply_switch_interval()

    def run() -> None:
        global _running
        try:
            for name in modules:
                importlib.import_module(name)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(None)
        finally:
            with _lock:
                _running -= 1
                _apply_switch_interval()

    try:
        threading.Thread(target=run, name="preload-modules", daemon=True).start()
    except RuntimeError as exc:  # no threads left: the caller imports on demand
        with _lock:
            _running -= 1
            _apply_switch_interval()
        future.set_exception(exc)
    return future


def start_provider_preload(model: _HasApi | None, *, responsive: bool = False) -> Future[None] | None:
    """Call as soon as the model is known: its API's SDK starts importing in a background thread.

    Safe to call any number of times, with None (no model yet) or a model whose API needs no SDK."""
    if model is None:
        return None
    api = getattr(model, "api", None)
    return preload(api, responsive=responsive) if isinstance(api, str) else None


def import_later(modules: tuple[str, ...], after: Future[None] | None = None) -> None:
    """Import ``modules`` in a daemon thread once ``after`` (an SDK preload) has finished: slow imports
    that only a later step needs (the first tool call's argument validation imports ``jsonschema``, ~80
    ms), kept off the event loop without competing with the SDK import the first request waits for.
    Best effort: a module that fails here is imported (and fails) again where it is needed."""

    def run() -> None:
        if after is not None:
            try:
                after.result()
            except BaseException:
                pass  # the SDK's problem is reported by the request; these modules are independent
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # only a warm-up: where the module is needed, importing it again says why
                pass

    try:
        threading.Thread(target=run, name="preload-later", daemon=True).start()
    except RuntimeError:  # no threads left: the modules are imported where they are needed
        pass


async def wait_preloaded(api: str) -> None:
    """Wait (without blocking the event loop) until ``api``'s SDK is imported; start that if needed."""
    future = _started.get(api)
    if future is not None and future.done():
        return
    future = preload(api, responsive=False) if future is None else future
    if future is None:
        return
    try:
        await asyncio.wrap_future(future)
    except Exception:
        pass  # the request itself reports the problem


def is_preloaded(api: str) -> bool:
    future = _started.get(api)
    return future is not None and future.done()


def started(api: str) -> bool:
    """Whether a preload of ``api`` was started in this process."""
    return api in _started
