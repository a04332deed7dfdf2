"""POST one more body to an SDK client's endpoint without the SDK's per-request assembly.

A session sends a request per turn to the same endpoint, with the same headers; only the body changes. The
``openai`` and ``anthropic`` clients rebuild everything on every call: request options models, headers
(auth, platform telemetry, timeouts), URL merging, the middleware and tracing hooks, the retry loop. That is
~0.3–0.6 ms per request on a 2-core machine, as much as the rest of a short turn's own work.

``post_stream`` sends the first request to a (client, path) through the SDK (``client.post``) and keeps
what the SDK put on the wire: the URL and the headers of the request the response answers. Later requests to
the same client and path send their body with those headers through the client's own ``httpx`` client, and
fail the way the SDK fails: ``APITimeoutError`` / ``APIConnectionError`` for transport errors, and for a
reply that is not 2xx its body is read and the SDK's own status error raised
(``client._make_status_error_from_response``: ``AuthenticationError``, ``RateLimitError``, …). Either way
the result is the SDK's ``AsyncStream`` over the response, decoding SSE as the SDK does.

Only for requests that need nothing computed per request: a client of exactly the SDK's ``AsyncOpenAI`` /
``AsyncAnthropic`` class (Azure, Bedrock and Vertex clients sign or refresh credentials per request), with
the SDK's retries off (caddie retries at the session level; a client with ``max_retries`` keeps the SDK's
loop), no custom auth, no middleware, and no OpenTelemetry tracer provider configured (the SDK then records a
span, and propagates its ``traceparent``, per request). Anything else always goes through ``client.post``.
"""

from __future__ import annotations

import weakref
from types import ModuleType
from typing import Any

_prepared: weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, Any]]] = weakref.WeakKeyDictionary()
"""client -> path -> (URL, headers) of the SDK's first request there."""

_PER_REQUEST_HEADERS = ("content-length", "idempotency-key", "traceparent", "tracestate", "baggage")
"""Headers that belong to one request only: never repeated."""


def _repeatable(client: Any, sdk: ModuleType, client_class: str) -> bool:
    return (
        type(client) is getattr(sdk, client_class)
        and client.max_retries == 0
        and getattr(client, "custom_auth", None) is None
        and not getattr(client, "_middleware", ())
        and not _traced(client)
        and getattr(client, "_idempotency_header", None) is None
    )


def _traced(client: Any) -> bool:
    """The SDK would record an OpenTelemetry span (and propagate its context) for each request: it has a
    tracer and a tracer provider has been configured (without one, OpenTelemetry's spans are no-ops)."""
    if getattr(client, "_tracer", None) is None:
        return False
    try:
        from opentelemetry import trace
    except ImportError:  # a tracer without OpenTelemetry: take the SDK's way
        return True
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


async def post_stream(client: Any, path: str, body: bytes, sdk: ModuleType, client_class: str) -> Any:
    """The SDK's ``AsyncStream[object]`` of the reply to ``POST path`` with ``body`` (see the module
    docstring); ``sdk`` is the SDK package (``openai`` or ``anthropic``), ``client_class`` its client's
    class name (``AsyncOpenAI``, ``AsyncAnthropic``)."""
    stream_cls = sdk.AsyncStream[object]
    repeatable = _repeatable(client, sdk, client_class)
    prepared = _prepared.get(client, {}).get(path) if repeatable else None
    if prepared is None:
        stream = await client.post(path, cast_to=object, content=body, stream=True, stream_cls=stream_cls)
        if repeatable:
            request = stream.response.request
            headers = request.headers.copy()
            for name in _PER_REQUEST_HEADERS:
                headers.pop(name, None)
            _prepared.setdefault(client, {})[path] = (request.url, headers)
        return stream
    url, headers = prepared
    http = client._client
    request = http.build_request("POST", url, headers=headers, content=body)
    try:
        response = await http.send(request, stream=True)
    except sdk.APIError:
        raise
    except Exception as exc:
        if _is_timeout(exc):
            raise sdk.APITimeoutError(request=request) from exc
        raise sdk.APIConnectionError(request=request) from exc
    if not response.is_success:
        await response.aread()
        raise client._make_status_error_from_response(response) from None
    return stream_cls(cast_to=object, response=response, client=client)


def _is_timeout(exc: Exception) -> bool:
    """An ``httpx`` timeout, from whichever ``httpx`` package the SDK is built on (``httpx`` or ``httpx2``)."""
    return any(
        cls.__name__ == "TimeoutException" and cls.__module__.startswith("httpx") for cls in type(exc).__mro__
    )


def forget(client: Any) -> None:
    """Drop what was kept for ``client`` (tests)."""
    _prepared.pop(client, None)
