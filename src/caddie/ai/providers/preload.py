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
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future

_HTTP_STACK = ("anyio._backends._asyncio", "concurrent.futures.thread")
"""Imported by the HTTP client on its first request (anyio picks its asyncio backend lazily)."""
_MODULES: dict[str, tuple[str, ...]] = {
    "openai-completions": (
        "openai",
        "openai.resources.chat.completions",
        "openai.resources.chat.chat",
        "caddie.ai.providers.openai_completions",
        *_HTTP_STACK,
    ),
    "anthropic-messages": (
        "anthropic",
        "anthropic.resources.messages",
        "opentelemetry.propagate",  # the SDK's tracing imports it on the first request, when installed
        "caddie.ai.providers.anthropic_messages",
        *_HTTP_STACK,
    ),
}
_CLIENT_CLASSES = {"openai-completions": "AsyncOpenAI", "anthropic-messages": "AsyncAnthropic"}
_WARMUPS = ("_known_create_fields",)
"""Module-level functions of the provider modules that cache something slow on first call."""

_lock = threading.Lock()
_started: dict[str, Future[None]] = {}


def _load(api: str) -> None:
    problem: BaseException | None = None
    for name in _MODULES[api]:
        try:
            module = importlib.import_module(name)
            for warmup in _WARMUPS:
                function: Callable[[], object] | None = getattr(module, warmup, None)
                if callable(function) and name.startswith("caddie."):
                    function()
        except ModuleNotFoundError as exc:
            if not name.startswith(("opentelemetry", "anyio")):  # optional parts of the HTTP stack
                problem = problem or exc
        except Exception as exc:  # keep loading the rest; the first problem is reported
            problem = problem or exc
    try:  # a throw-away client: the SDK imports more on first construction, and sets up TLS
        sdk = importlib.import_module(_MODULES[api][0])
        client_class = getattr(sdk, _CLIENT_CLASSES[api])
        client_class(api_key="preload", base_url="http://127.0.0.1:9")
    except Exception as exc:
        problem = problem or exc
    try:
        _warm_request_types(api)
        _warm_stream_types(api)
    except Exception:
        pass  # only a warm-up: the request itself does the same work if this did not
    if problem is not None:
        raise problem


def _warm_request_types(api: str) -> None:
    """Run the OpenAI SDK's request-body transform once on a typical body: it resolves (and caches) the
    type hints of every request parameter type on first use, which would otherwise happen in the first
    request. (The Anthropic SDK has no such step.)"""
    if api != "openai-completions":
        return
    transform = importlib.import_module("openai._utils._transform")
    params = importlib.import_module("openai.types.chat.completion_create_params")
    message = {"role": "user", "content": [{"type": "text", "text": "x"}]}
    function = {"name": "t", "description": "d", "parameters": {"type": "object"}, "strict": False}
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "s"}, message],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": function}],
        "max_completion_tokens": 1,
    }
    transform.maybe_transform(body, params.CompletionCreateParamsStreaming)


def _warm_stream_types(api: str) -> None:
    """Parse one of each streamed event the way the SDK does: pydantic builds the (large) schemas of the
    event types on first use, ~0.1 s that would otherwise fall on the first streamed chunk."""
    if api == "openai-completions":
        models = importlib.import_module("openai._models")
        chunk_type = importlib.import_module("openai.types.chat").ChatCompletionChunk
        call = {"index": 0, "id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
        delta = {"role": "assistant", "content": "x", "reasoning_content": "y", "tool_calls": [call]}
        usage = {
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "total_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        }
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "usage": usage,
            "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}],
        }
        models.construct_type(type_=chunk_type, value=chunk)
    elif api == "anthropic-messages":
        models = importlib.import_module("anthropic._models")
        event_type = importlib.import_module("anthropic.types").RawMessageStreamEvent
        message: dict[str, object] = {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        events: list[dict[str, object]] = [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
            {"type": "message_stop"},
        ]
        for event in events:
            models.construct_type(type_=event_type, value=event)


_busy = 0
_saved_interval: float | None = None
PRELOAD_SWITCH_INTERVAL_S = 0.0002
"""The GIL switch interval while a preload runs. Python's default (5 ms) lets an importing thread keep the
event loop waiting for the GIL after every select(), which adds up to seconds of unanswered keys; with a
short interval the loop gets the GIL back at once."""


def _begin_background_work() -> None:
    global _busy, _saved_interval
    with _lock:
        if _busy == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, PRELOAD_SWITCH_INTERVAL_S))
        _busy += 1


def _end_background_work() -> None:
    global _busy, _saved_interval
    with _lock:
        _busy -= 1
        if _busy == 0 and _saved_interval is not None:
            sys.setswitchinterval(_saved_interval)
            _saved_interval = None


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
        _begin_background_work()
        try:
            _load(api)
        except BaseException as exc:  # a missing SDK surfaces again, clearly, on the first request
            future.set_exception(exc)
        else:
            future.set_result(None)
        finally:
            _end_background_work()

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
