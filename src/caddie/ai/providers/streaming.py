"""The streaming skeleton the SDK providers share: key check, payload hook, SDK stream, events, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from caddie.ai.messages import AssistantMessage, DraftAssistantMessage, freeze
from caddie.ai.model import Model, ProviderResponse, StreamOptions
from caddie.ai.providers.failures import FailureInfo, describe_failure, fail
from caddie.ai.providers.transport import (
    DEFAULT_IDLE_TIMEOUT_S,
    ClientCache,
    NoProgress,
    Stalled,
    StreamGuard,
)
from caddie.ai.secrets import safe_url
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
)
from caddie.errors import Aborted

DRAIN_S = 0.1
"""How long a stream whose final event has arrived may take to end its body."""


async def _drain(sdk_stream: Any) -> None:
    """Read the rest of a stream whose reply is complete: normally only the end of the body, already
    received. A connection read to its end goes back to the pool, so the next request skips a new TCP (and
    TLS) handshake; one closed early is dropped. A server that keeps the stream open after its final event
    gets ``DRAIN_S``, then the connection is dropped as before; whatever it still says is ignored."""
    try:
        async with asyncio.timeout(DRAIN_S):
            async for _ in sdk_stream:
                pass
    except Exception:  # late garbage, a reset, the timeout: the reply is already whole
        pass


def new_output(model: Model) -> DraftAssistantMessage:
    return DraftAssistantMessage(
        content=[], api=model.api, provider=model.provider, model=model.id, stop_reason="pending"
    )


class SdkAssembler(Protocol):
    """Turns one API's stream chunks into caddie events on ``output`` (one per provider)."""

    def apply(self, chunk: Any) -> list[AssistantMessageEvent]: ...

    def complete(self) -> bool:
        """The API said the reply is over (stop reading even if the connection stays open)."""
        ...

    def finish(self) -> list[AssistantMessageEvent]:
        """End events after the stream ended; raises ``ConnectionResetError`` when the reply is incomplete."""
        ...

    def finalize_quietly(self) -> None:
        """On failure: give tool calls the best arguments seen so far (no events)."""
        ...


def _progress_marker(output: AssistantMessage) -> tuple[object, ...]:
    """What a content-free chunk may still advance: the stop reason, the usage, the number of blocks."""
    usage = output.usage
    return (
        output.stop_reason,
        usage.input,
        usage.output,
        usage.cache_read,
        usage.cache_write,
        len(output.content),
    )


def _is_progress(event: AssistantMessageEvent) -> bool:
    """Content arrived: a non-empty delta, or a block completed."""
    if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
        return bool(event.delta)
    return isinstance(event, TextEndEvent | ThinkingEndEvent | ToolCallEndEvent)


async def stream_via_sdk(
    model: Model,
    options: StreamOptions,
    output: DraftAssistantMessage,
    assembler: SdkAssembler | Callable[[], SdkAssembler],
    *,
    headers: dict[str, str],
    api_key: str | None,
    missing_key_text: str,
    build_params: Callable[[], dict[str, Any]],
    clients: ClientCache,
    make_client: Callable[[str, dict[str, str], float], Any],
    create: Callable[[Any, dict[str, Any]], Awaitable[Any]],
    stream_flag: bool = True,
) -> AsyncIterator[AssistantMessageEvent]:
    """Key check → payload (through ``on_payload``) → SDK stream → events; failures become the final
    message, never an exception. ``create`` sends ``params`` (see ``encode_body``) and returns the SDK's
    stream of decoded events. The SDK stream is closed on every exit, so an abort closes the HTTP
    connection at once; the client itself is kept for the next request. ``assembler`` may be a function
    making it: what it raises (a tool's grammar that cannot be used) becomes the error event too."""
    idle = options.timeout_s if options.timeout_s is not None else DEFAULT_IDLE_TIMEOUT_S
    progress = options.progress_timeout_s if options.progress_timeout_s is not None else idle
    guard = StreamGuard(options.signal, idle)
    loop = asyncio.get_running_loop()
    secrets = [options.api_key]
    sdk_stream: Any = None
    started = False
    built: SdkAssembler | None = None
    try:
        built = parts = assembler() if callable(assembler) else assembler
        if not api_key:
            yield ErrorEvent(
                "error", fail(output, FailureInfo(missing_key_text), aborted=False, secrets=secrets)
            )
            return
        if options.on_headers is not None:  # as Pi: the headers are settled before the payload is built
            headers = await options.on_headers(dict(headers))
        params = build_params()
        if options.on_payload is not None:
            replaced = await options.on_payload(params)
            if replaced is not None:
                params = replaced
        if stream_flag:
            params["stream"] = True  # the providers read a stream; a hook cannot turn that off
        key = (api_key, model.base_url, options.max_retries, tuple(sorted(headers.items())), idle)
        client = await clients.get_async(key, lambda: make_client(api_key, headers, idle))
        sdk_stream = await guard.run(create(client, params))
        response = getattr(sdk_stream, "response", None)
        if options.on_response is not None and response is not None:
            await options.on_response(
                ProviderResponse(response.status_code, {str(k): str(v) for k, v in response.headers.items()})
            )
        yield StartEvent(output)
        started = True
        # The no-progress deadline: chunks that carry no content (empty deltas, pings) do not move it.
        deadline = loop.time() + progress if progress > 0 else None
        idle_chunks = 0  # chunks since the last progress
        while True:
            wait = guard.idle_timeout_s
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise NoProgress(progress) if idle_chunks else Stalled(progress)
                wait = left if wait is None else min(wait, left)
            try:
                chunk = await guard.run(sdk_stream.__anext__(), wait)
            except StopAsyncIteration:
                break
            except Stalled:
                if deadline is not None and loop.time() >= deadline:
                    # Cut by the deadline: busy without content, or plain silence since the last content.
                    raise (NoProgress(progress) if idle_chunks else Stalled(progress)) from None
                raise
            before = _progress_marker(output)
            events = parts.apply(chunk)
            for event in events:
                yield event
            if deadline is not None and (
                any(_is_progress(e) for e in events) or _progress_marker(output) != before
            ):
                deadline = loop.time() + progress
                idle_chunks = 0
            else:
                idle_chunks += 1
            if parts.complete():
                await _drain(sdk_stream)
                break
        if guard.aborted:
            raise Aborted()
        for event in parts.finish():
            yield event
        if output.stop_reason == "error":
            info = FailureInfo(output.error_message or "The provider returned an error")
            yield ErrorEvent("error", fail(output, info, aborted=False, secrets=secrets))
            return
        if output.stop_reason not in ("stop", "length", "toolUse"):
            output.stop_reason = "stop"
        yield DoneEvent(output.stop_reason, freeze(output))
    except Aborted:
        if built is not None:
            built.finalize_quietly()
        yield ErrorEvent("aborted", fail(output, FailureInfo(""), aborted=True, secrets=secrets))
    except Exception as exc:
        if built is not None:
            built.finalize_quietly()
        if isinstance(exc, ConnectionResetError):
            info = FailureInfo(
                f"Connection lost: the stream from {safe_url(model.base_url)} ended before the reply finished ({exc}). "
                "Try again."
            )
        else:
            info = describe_failure(exc, model, streaming_started=started)
        aborted = guard.aborted
        yield ErrorEvent(
            "aborted" if aborted else "error", fail(output, info, aborted=aborted, secrets=secrets)
        )
    finally:
        guard.close()
        if sdk_stream is not None:
            try:
                await sdk_stream.close()
            except Exception:  # closing a broken stream can fail; the request is over either way
                pass
