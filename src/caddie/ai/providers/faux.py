"""The ``faux`` API: a scripted, offline model for tests and demos (like Pi's faux provider).

In Python tests, build a ``FauxProvider``, queue steps and point the agent at one of its models::

    faux = FauxProvider()
    faux.set_responses([faux_message([faux_tool_call("read", {"path": "a.py"})]), faux_message("Done.")])
    register_api("faux", faux)            # caddie.ai.stream.register_api
    model = faux.get_model()              # faux/faux-1

A step is an ``AssistantMessage`` (build it with ``faux_message`` from ``faux_text``, ``faux_thinking``,
``faux_tool_call`` blocks) or a factory ``(context, options, call_index, model) -> AssistantMessage``
(may be async) for replies that depend on the request. Steps are consumed first in, first out; an empty
queue answers with the error ``No more faux responses queued``. Replies stream as real ones do
(``start``, deltas per chunk, tool-call argument JSON in pieces, ``done``/``error``), honour the abort
signal (``aborted``, ``Request was aborted``) and report usage estimated at one token per four characters
of the serialised context, unless the step sets its own usage. Every call's context is kept in
``requests``.

From the command line, ``--model faux/<name>`` uses the shared ``PROVIDER``:

- ``faux/echo`` answers with the text of the last user message;
- any other name plays the script named by ``CADDIE_FAUX_SCRIPT``: a JSON list of steps, loaded on first
  use. A step is a string (a text reply) or an object with any of ``thinking``, ``text``, ``toolCalls``
  (``[{"name", "arguments", "id"?}]``), ``error`` (with optional ``status`` and ``retryAfterMs``),
  ``usage`` (``{"input", "output", "cacheRead", "cacheWrite"}``), ``stopReason`` and ``delayMs`` (pause
  between streamed chunks). ``CADDIE_FAUX_LOG``, when set, names a JSONL file that gets one line per
  request (system prompt, messages, tool names) so an end-to-end test can inspect what was sent.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    Cost,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    LlmMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    UserMessage,
    freeze,
    message_to_json,
    replace,
)
from caddie.ai.model import Api, Context, Model, ModelCost, ProviderResponse, StreamOptions
from caddie.ai.providers.blocks import StreamBuffer
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from caddie.errors import ConfigurationError

API: Api = "faux"
PROVIDER_NAME = "faux"
DEFAULT_MODEL_ID = "faux-1"
ECHO_MODEL_ID = "echo"
SCRIPT_ENV = "CADDIE_FAUX_SCRIPT"
LOG_ENV = "CADDIE_FAUX_LOG"
NO_MORE_RESPONSES = "No more faux responses queued"
ABORTED_TEXT = "Request was aborted"

FauxFactory: TypeAlias = Callable[
    [Context, StreamOptions, int, Model], "AssistantMessage | Awaitable[AssistantMessage]"
]
FauxStep: TypeAlias = "AssistantMessage | FauxFactory | PacedStep"

_ids = itertools.count(1)


# --------------------------------------------------------------------------------------------------
# Step helpers


def faux_text(text: str) -> TextContent:
    return TextContent(text)


def faux_thinking(thinking: str) -> ThinkingContent:
    return ThinkingContent(thinking)


def faux_tool_call(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    """A tool call block; without ``id`` one is made up (``faux_call_<n>``)."""
    return ToolCall(id=id or f"faux_call_{next(_ids)}", name=name, arguments=dict(arguments or {}))


def faux_message(
    content: str | AssistantContent | Sequence[AssistantContent],
    *,
    stop_reason: StopReason | None = None,
    error_message: str | None = None,
    usage: Usage | None = None,
    response_id: str | None = None,
    error_status: int | None = None,
    retry_after_ms: int | None = None,
) -> AssistantMessage:
    """A scripted reply. ``stop_reason`` defaults to ``toolUse`` when it holds tool calls, ``error`` when
    ``error_message`` is given, else ``stop``. ``usage`` replaces the chars/4 estimate."""
    if isinstance(content, str):
        blocks: list[AssistantContent] = [TextContent(content)] if content else []
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = list(content)
    if stop_reason is None:
        if error_message is not None:
            stop_reason = "error"
        elif any(isinstance(b, ToolCall) for b in blocks):
            stop_reason = "toolUse"
        else:
            stop_reason = "stop"
    message = AssistantMessage(
        content=blocks,
        api=API,
        provider=PROVIDER_NAME,
        model=DEFAULT_MODEL_ID,
        stop_reason=stop_reason,
        error_message=error_message,
        response_id=response_id,
        error_status=error_status,
        retry_after_ms=retry_after_ms,
    )
    return message if usage is None else replace(message, usage=usage)


@dataclass(frozen=True, slots=True)
class PacedStep:
    """A step streamed slowly: ``delay_ms`` between chunks (for abort and UI tests)."""

    step: AssistantMessage | FauxFactory
    delay_ms: float


# --------------------------------------------------------------------------------------------------
# Script files (CADDIE_FAUX_SCRIPT)


class FauxScriptError(ConfigurationError, ValueError):
    """A faux script that cannot be used; the message names the file and the problem."""


def _usage_from_json(data: Any, where: str) -> Usage:
    if not isinstance(data, dict):
        raise FauxScriptError(f"{where}: usage must be an object")

    def number(key: str) -> int:
        value = data.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise FauxScriptError(f"{where}: usage.{key} must be a non-negative integer")
        return value

    tokens = (number("input"), number("output"), number("cacheRead"), number("cacheWrite"))
    return Usage(*tokens, total_tokens=sum(tokens))


def step_from_json(data: Any, where: str = "step") -> AssistantMessage | PacedStep:
    """One script step (see the module docstring for the format)."""
    if isinstance(data, str):
        return faux_message(data)
    if not isinstance(data, dict):
        raise FauxScriptError(f"{where}: a step must be a string or an object")
    known = {
        "text",
        "thinking",
        "toolCalls",
        "error",
        "status",
        "retryAfterMs",
        "usage",
        "stopReason",
        "delayMs",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise FauxScriptError(f"{where}: unknown field {unknown[0]!r} (allowed: {', '.join(sorted(known))})")
    blocks: list[AssistantContent] = []
    if "thinking" in data:
        if not isinstance(data["thinking"], str):
            raise FauxScriptError(f"{where}: thinking must be a string")
        blocks.append(faux_thinking(data["thinking"]))
    if "text" in data:
        if not isinstance(data["text"], str):
            raise FauxScriptError(f"{where}: text must be a string")
        blocks.append(faux_text(data["text"]))
    calls = data.get("toolCalls", [])
    if not isinstance(calls, list):
        raise FauxScriptError(f"{where}: toolCalls must be a list")
    for n, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise FauxScriptError(f"{where}: toolCalls[{n}] needs a string name")
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise FauxScriptError(f"{where}: toolCalls[{n}].arguments must be an object")
        call_id = call.get("id")
        blocks.append(faux_tool_call(call["name"], args, call_id if isinstance(call_id, str) else None))
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        raise FauxScriptError(f"{where}: error must be a string")
    stop = data.get("stopReason")
    if stop is not None and stop not in ("stop", "length", "toolUse", "error", "aborted"):
        raise FauxScriptError(f"{where}: stopReason must be stop, length, toolUse, error or aborted")
    status = data.get("status")
    retry_after = data.get("retryAfterMs")
    message = faux_message(
        blocks,
        stop_reason=stop,
        error_message=error,
        usage=_usage_from_json(data["usage"], where) if "usage" in data else None,
        error_status=status if isinstance(status, int) else None,
        retry_after_ms=retry_after if isinstance(retry_after, int) else None,
    )
    delay = data.get("delayMs")
    if delay is not None:
        if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
            raise FauxScriptError(f"{where}: delayMs must be a non-negative number")
        return PacedStep(message, float(delay))
    return message


def load_script(path: str | Path) -> list[AssistantMessage | PacedStep]:
    """The steps of a faux script file; ``FauxScriptError`` (one clear line) when it is unusable."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise FauxScriptError(f"faux script {p}: cannot read it ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise FauxScriptError(
            f"faux script {p}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("steps"), list):
        data = data["steps"]
    if not isinstance(data, list):
        raise FauxScriptError(f"faux script {p}: must be a JSON list of steps")
    return [step_from_json(step, f"faux script {p}: step {n + 1}") for n, step in enumerate(data)]


# --------------------------------------------------------------------------------------------------
# Usage estimate


def _content_text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for b in content:
        if isinstance(b, TextContent):
            parts.append(b.text)
        elif isinstance(b, ImageContent):
            parts.append(f"[image:{b.mime_type}:{len(b.data)}]")
    return "\n".join(parts)


def _assistant_text(content: list[AssistantContent]) -> str:
    parts: list[str] = []
    for b in content:
        if isinstance(b, TextContent):
            parts.append(b.text)
        elif isinstance(b, ThinkingContent):
            parts.append(b.thinking)
        else:
            parts.append(f"{b.name}:{json.dumps(b.arguments)}")
    return "\n".join(parts)


def _message_text(m: LlmMessage) -> str:
    if isinstance(m, UserMessage):
        return _content_text(m.content)
    if isinstance(m, AssistantMessage):
        return _assistant_text(m.content)
    return "\n".join([m.tool_name, _content_text(m.content)])


def serialize_context(context: Context) -> str:
    """The text the usage estimate counts: system prompt, every message, tool definitions."""
    parts: list[str] = []
    if context.system_prompt:
        parts.append(f"system:{context.system_prompt}")
    for m in context.messages:
        parts.append(f"{m.role}:{_message_text(m)}")
    if context.tools:
        tools = [
            {"name": t.name, "description": t.description, "parameters": t.parameters} for t in context.tools
        ]
        parts.append(f"tools:{json.dumps(tools)}")
    return "\n\n".join(parts)


def _common_prefix_length(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on slice equality: fast for long prompts
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _has_usage(usage: Usage) -> bool:
    return bool(usage.input or usage.output or usage.cache_read or usage.cache_write or usage.total_tokens)


# --------------------------------------------------------------------------------------------------
# The provider


def _copy_message(message: AssistantMessage) -> AssistantMessage:
    blocks: list[AssistantContent] = []
    for b in message.content:
        if isinstance(b, TextContent):
            blocks.append(TextContent(b.text, b.text_signature))
        elif isinstance(b, ThinkingContent):
            blocks.append(ThinkingContent(b.thinking, b.thinking_signature, b.redacted))
        else:
            blocks.append(ToolCall(b.id, b.name, json.loads(json.dumps(b.arguments)), b.thought_signature))
    u = message.usage
    usage = Usage(
        u.input, u.output, u.cache_read, u.cache_write, u.total_tokens, Cost(), u.cache_write_1h, u.reasoning
    )
    return AssistantMessage(
        content=blocks,
        api=message.api,
        provider=message.provider,
        model=message.model,
        usage=usage,
        stop_reason=message.stop_reason,
        error_message=message.error_message,
        response_id=message.response_id,
        diagnostics=message.diagnostics,
        error_status=message.error_status,
        retry_after_ms=message.retry_after_ms,
    )


def faux_model(
    model_id: str = DEFAULT_MODEL_ID,
    *,
    name: str | None = None,
    reasoning: bool = False,
    input: list[str] | None = None,
    context_window: int = 128_000,
    max_tokens: int = 16_384,
    api: Api = API,
    provider: str = PROVIDER_NAME,
) -> Model:
    """A ``Model`` served by a faux provider (no key, no cost)."""
    return Model(
        id=model_id,
        name=name or ("Faux Echo" if model_id == ECHO_MODEL_ID else f"Faux {model_id}"),
        api=api,
        provider=provider,
        base_url="http://localhost:0",
        reasoning=reasoning,
        input=list(input or ["text", "image"]),
        cost=ModelCost(),
        context_window=context_window,
        max_tokens=max_tokens,
    )


class FauxProvider:
    """A scripted ``ApiProvider``. See the module docstring."""

    def __init__(
        self,
        *,
        api: Api = API,
        provider: str = PROVIDER_NAME,
        models: list[Model] | None = None,
        chunk_chars: int = 12,
        tokens_per_second: float | None = None,
        script_path: str | Path | None = None,
        script_from_env: bool = False,
    ) -> None:
        self.api = api
        self.provider = provider
        self.models: list[Model] = models or [faux_model(api=api, provider=provider)]
        self.chunk_chars = max(1, chunk_chars)
        self.tokens_per_second = tokens_per_second
        self.script_path = script_path
        self.script_from_env = script_from_env
        self._script_loaded = False
        self._pending: list[FauxStep] = []
        self.call_count = 0
        self.requests: list[Context] = []
        """The context of every call, in order (what the model was asked)."""
        self.request_options: list[StreamOptions] = []
        self.payloads: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        """The HTTP headers each request would send, after ``on_headers`` (only recorded with a hook)."""
        self._prompt_cache: dict[str, str] = {}

    # -- script -----------------------------------------------------------------------------------
    def set_responses(self, steps: Sequence[FauxStep]) -> None:
        self._pending = list(steps)

    def append_responses(self, steps: Sequence[FauxStep]) -> None:
        self._pending.extend(steps)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def get_model(self, model_id: str | None = None) -> Model | None:
        if model_id is None:
            return self.models[0]
        return next((m for m in self.models if m.id == model_id), None)

    def _load_script_once(self) -> str | None:
        if self._script_loaded:
            return None
        self._script_loaded = True
        path = self.script_path or (os.environ.get(SCRIPT_ENV) if self.script_from_env else None)
        if not path:
            return None
        try:
            self._pending.extend(load_script(path))
        except FauxScriptError as e:
            return f"{e}. Fix the file named by {SCRIPT_ENV}."
        return None

    # -- streaming --------------------------------------------------------------------------------
    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.call_count += 1
        call_index = self.call_count
        self.requests.append(context)
        self.request_options.append(options)
        if options.on_headers is not None:
            self.headers.append(await options.on_headers(dict(options.headers or {})))
        payload = _payload(model, context)
        if options.on_payload is not None:
            replaced = await options.on_payload(payload)
            if replaced is not None:
                payload = replaced
        self.payloads.append(payload)
        _log_request(payload)
        if options.on_response is not None:
            await options.on_response(ProviderResponse(200, {}))
        delay_ms: float | None = None
        failed = False  # the provider itself failed (no step, bad script, factory raised): no stream starts
        try:
            resolved = await self._resolve(model, context, options, call_index)
            if isinstance(resolved, str):
                message, failed = self._error(model, resolved), True
            else:
                message, delay_ms = resolved
        except Exception as exc:
            message, failed = self._error(model, f"{type(exc).__name__}: {exc}"), True
        message = replace(message, api=model.api, provider=model.provider, model=model.id)
        if not _has_usage(message.usage):
            message = replace(message, usage=self._estimate_usage(message, context, options))
        if failed:
            yield ErrorEvent("error", message)
            return
        async for event in self._play(message, options, delay_ms):
            yield event

    def _error(self, model: Model, text: str) -> AssistantMessage:
        return AssistantMessage(
            content=[],
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="error",
            error_message=text,
        )

    async def _resolve(
        self, model: Model, context: Context, options: StreamOptions, call_index: int
    ) -> tuple[AssistantMessage, float | None] | str:
        """The reply and its pacing, or the text of why there is none."""
        if model.id == ECHO_MODEL_ID and not self._pending:
            return faux_message(_last_user_text(context.messages) or "(nothing to echo)"), None
        problem = self._load_script_once()
        if problem is not None:
            return problem
        if not self._pending:
            return NO_MORE_RESPONSES
        queued = self._pending.pop(0)
        delay_ms: float | None = None
        step: AssistantMessage | FauxFactory
        if isinstance(queued, PacedStep):
            step, delay_ms = queued.step, queued.delay_ms
        else:
            step = queued
        if isinstance(step, AssistantMessage):
            return _copy_message(step), delay_ms
        result = step(context, options, call_index, model)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, AssistantMessage):
            raise TypeError(f"a faux factory must return an AssistantMessage, not {type(result).__name__}")
        return _copy_message(result), delay_ms

    def _estimate_usage(self, message: AssistantMessage, context: Context, options: StreamOptions) -> Usage:
        prompt = serialize_context(context)
        prompt_tokens = estimate_tokens(prompt)
        output = estimate_tokens(_assistant_text(message.content))
        input_tokens, cache_read, cache_write = prompt_tokens, 0, 0
        if options.session_id and options.cache_retention != "none":
            previous = self._prompt_cache.get(options.session_id)
            if previous is not None:
                common = _common_prefix_length(previous, prompt)
                cache_read = estimate_tokens(previous[:common])
                cache_write = estimate_tokens(prompt[common:])
                input_tokens = max(0, prompt_tokens - cache_read)
            else:
                cache_write = prompt_tokens
            self._prompt_cache[options.session_id] = prompt
        return Usage(
            input=input_tokens,
            output=output,
            cache_read=cache_read,
            cache_write=cache_write,
            total_tokens=input_tokens + output + cache_read + cache_write,
        )

    def _chunks(self, text: str) -> list[str]:
        n = self.chunk_chars
        return [text[i : i + n] for i in range(0, len(text), n)] or [""]

    async def _pause(self, chunk: str, delay_ms: float | None) -> None:
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        elif self.tokens_per_second:
            await asyncio.sleep(estimate_tokens(chunk) / self.tokens_per_second)
        else:
            await asyncio.sleep(0)

    async def _play(
        self, message: AssistantMessage, options: StreamOptions, delay_ms: float | None
    ) -> AsyncIterator[AssistantMessageEvent]:
        signal = options.signal
        partial = DraftAssistantMessage(
            content=[],
            api=message.api,
            provider=message.provider,
            model=message.model,
            usage=message.usage,
            stop_reason="pending",
            response_id=message.response_id,
        )

        def aborted() -> ErrorEvent:
            partial.stop_reason = "aborted"
            partial.error_message = ABORTED_TEXT
            return ErrorEvent("aborted", freeze(partial))

        if signal is not None and signal.aborted:
            yield aborted()
            return
        yield StartEvent(partial)
        for index, block in enumerate(message.content):
            if signal is not None and signal.aborted:
                yield aborted()
                return
            if isinstance(block, ThinkingContent):
                live_thinking = DraftThinkingContent("", block.thinking_signature, block.redacted)
                partial.content.append(live_thinking)
                yield ThinkingStartEvent(index, partial)
                buffer = StreamBuffer()  # linear assembly, as the HTTP providers do
                for chunk in self._chunks(block.thinking):
                    await self._pause(chunk, delay_ms)
                    if signal is not None and signal.aborted:
                        live_thinking.thinking = buffer.text()
                        yield aborted()
                        return
                    if buffer.add(chunk):
                        live_thinking.thinking = buffer.text()
                    yield ThinkingDeltaEvent(index, chunk, partial)
                live_thinking.thinking = block.thinking
                yield ThinkingEndEvent(index, block.thinking, partial)
            elif isinstance(block, TextContent):
                live_text = DraftTextContent("")
                partial.content.append(live_text)
                yield TextStartEvent(index, partial)
                buffer = StreamBuffer()
                for chunk in self._chunks(block.text):
                    await self._pause(chunk, delay_ms)
                    if signal is not None and signal.aborted:
                        live_text.text = buffer.text()
                        yield aborted()
                        return
                    if buffer.add(chunk):
                        live_text.text = buffer.text()
                    yield TextDeltaEvent(index, chunk, partial)
                live_text.text = block.text
                yield TextEndEvent(index, block.text, partial)
            else:
                live_call = DraftToolCall(block.id, block.name, {}, block.thought_signature)
                partial.content.append(live_call)
                yield ToolCallStartEvent(index, partial)
                for chunk in self._chunks(json.dumps(block.arguments)):
                    await self._pause(chunk, delay_ms)
                    if signal is not None and signal.aborted:
                        yield aborted()
                        return
                    yield ToolCallDeltaEvent(index, chunk, partial)
                live_call.arguments = block.arguments
                yield ToolCallEndEvent(index, live_call, partial)
        partial.stop_reason = message.stop_reason
        partial.error_message = message.error_message
        partial.error_status = message.error_status
        partial.retry_after_ms = message.retry_after_ms
        if message.stop_reason in ("error", "aborted"):
            yield ErrorEvent("aborted" if message.stop_reason == "aborted" else "error", freeze(partial))
            return
        reason = message.stop_reason if message.stop_reason in ("stop", "length", "toolUse") else "stop"
        partial.stop_reason = reason
        yield DoneEvent(reason, freeze(partial))


def _last_user_text(messages: list[LlmMessage]) -> str:
    for m in reversed(messages):
        if isinstance(m, UserMessage):
            return (
                _content_text(m.content)
                if isinstance(m.content, str)
                else "\n".join(b.text for b in m.content if isinstance(b, TextContent))
            )
    return ""


def _payload(model: Model, context: Context) -> dict[str, Any]:
    return {
        "model": model.id,
        "systemPrompt": context.system_prompt,
        "messages": [message_to_json(m) for m in context.messages],
        "tools": [t.name for t in context.tools or []],
    }


def _log_request(payload: dict[str, Any]) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(payload) + "\n")
    except OSError:
        pass  # a log for tests must never break a run


PROVIDER = FauxProvider(script_from_env=True, models=[faux_model(), faux_model(ECHO_MODEL_ID)])
"""The shared instance behind ``--model faux/<name>`` (loads ``CADDIE_FAUX_SCRIPT`` on first use)."""


__all__ = [
    "ECHO_MODEL_ID",
    "NO_MORE_RESPONSES",
    "PROVIDER",
    "FauxFactory",
    "FauxProvider",
    "FauxScriptError",
    "FauxStep",
    "PacedStep",
    "faux_message",
    "faux_model",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
    "load_script",
    "serialize_context",
    "step_from_json",
]
