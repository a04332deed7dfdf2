"""Import a model API's SDK in a worker thread, before the first request needs it.

The provider modules import their SDK (``openai``, ``anthropic``) inside ``stream`` so that starting caddie
does not pay for SDKs it will not call. Imported on the event loop, that first import freezes an
interactive UI for a second or two. ``preload(api)`` does the same imports (plus the SDK's HTTP stack and
the provider's one-off signature inspection) in a daemon thread as soon as the model is known;
``await wait_preloaded(api)`` lets the first request wait for it without blocking the loop.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable
from concurrent.futures import Future

_MODULES: dict[str, tuple[str, ...]] = {
    "openai-completions": (
        "httpx",
        "openai",
        "openai.resources.chat.completions",
        "caddie.ai.providers.openai_completions",
    ),
    "anthropic-messages": (
        "httpx",
        "anthropic",
        "anthropic.resources.messages",
        "caddie.ai.providers.anthropic_messages",
    ),
}
_WARMUPS = ("_known_create_fields",)
"""Module-level functions of the provider modules that cache something slow on first call."""

_lock = threading.Lock()
_started: dict[str, Future[None]] = {}


def _load(api: str) -> None:
    for name in _MODULES[api]:
        module = importlib.import_module(name)
        for warmup in _WARMUPS:
            function: Callable[[], object] | None = getattr(module, warmup, None)
            if callable(function) and name.startswith("caddie."):
                function()
    import ssl

    ssl.create_default_context()  # OpenSSL's one-time initialisation, paid by the first HTTPS client


def preload(api: str) -> Future[None] | None:
    """Start loading ``api``'s SDK in the background (once per process); None for APIs with nothing to load."""
    if api not in _MODULES:
        return None
    with _lock:
        future = _started.get(api)
        if future is not None:
            return future
        future = Future()
        _started[api] = future

    def run() -> None:
        try:
            _load(api)
        except BaseException as exc:  # a missing SDK surfaces again, clearly, on the first request
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=run, name=f"preload-{api}", daemon=True).start()
    return future


async def wait_preloaded(api: str) -> None:
    """Wait (without blocking the event loop) until ``api``'s SDK is imported; start that if needed."""
    future = preload(api)
    if future is None:
        return
    try:
        await asyncio.wrap_future(future)
    except Exception:
        pass  # the request itself reports the problem


def is_preloaded(api: str) -> bool:
    future = _started.get(api)
    return future is not None and future.done()
