"""The agent loop as a plain function: turns, tool execution, steering and follow-ups, events.

``run_agent_loop(prompts, context, config, emit, signal)`` appends ``prompts`` and runs turns until the model
stops asking for tools and no queued message is left. A turn is one model response plus the execution of
its tool calls. Everything observable is an event passed to ``emit`` (awaited, in order), exactly as Pi's
``runAgentLoop`` does; the loop itself keeps no state between runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from caddie.agent.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from caddie.ai import secrets
from caddie.ai.abort import AbortSignal
from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    convert_to_llm,
    now_ms,
    replace,
)
from caddie.ai.model import Context, Model, StreamOptions, ThinkingLevel
from caddie.ai.stream_events import AssistantMessageEvent, DoneEvent, ErrorEvent, StartEvent
from caddie.tools.base import ToolDefinition, ToolResult
from caddie.tools.validation import validate_arguments
from caddie.untrusted import clean_text

# Texts the loop gives the model as tool results (pi-agent-core's agent-loop.ts), byte for byte.
TOOL_NOT_FOUND = "Tool {name} not found"
"""Result text for a call to an unknown tool: ``TOOL_NOT_FOUND.format(name=...)``."""
TOOL_BLOCKED = "Tool execution was blocked"
"""Result text when a ``tool_call`` handler blocks without giving a reason."""
OPERATION_ABORTED = "Operation aborted"
"""Result text when the run is aborted before a prepared call executes (and what tools raise on abort)."""
OUTPUT_TOKEN_LIMIT = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments may be '
    "truncated. Re-issue the tool call with complete arguments."
)
"""Result text for every tool call of an assistant message that stopped at the output token limit."""

YIELD_EVERY_S = 0.01
"""A stream that arrives faster than it is handled (a fast server, buffered chunks) never waits on the
network, so nothing else on the event loop would run until it ends; after this long handling it, the loop
lets the rest run (the interactive UI draws what came so far)."""

INCOMPLETE_ARGUMENTS = (
    "The {name} call was not run: its arguments are not one complete JSON object ({error}). "
    "The reply may have been cut off. Send the call again with complete arguments."
)
"""caddie's result text for a call whose streamed arguments did not parse (Pi repairs and runs them)."""

StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]
Emit = Callable[[AgentEvent], Awaitable[None]]


@dataclass(slots=True)
class ToolCallCheck:
    """What ``before_tool_call`` may decide: block the call (the reason goes to the model)."""

    block: bool = False
    reason: str | None = None
    terminate: bool = False


@dataclass(slots=True)
class ToolResultOverride:
    """What ``after_tool_call`` may change; ``None`` fields keep the tool's value."""

    content: list[Any] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Any = None
    terminate: bool | None = None


@dataclass(slots=True)
class CompletedTurn:
    message: AssistantMessage
    tool_results: list[ToolResultMessage]
    context: AgentContext
    new_messages: list[AgentMessage]


@dataclass(slots=True)
class NextTurn:
    """``prepare_next_turn``'s answer: a replacement context, model or thinking level for the next turn."""

    context: AgentContext | None = None
    model: Model | None = None
    thinking_level: ThinkingLevel | None = None


@dataclass(slots=True)
class AgentContext:
    system_prompt: str
    messages: list[AgentMessage]
    tools: list[ToolDefinition] = field(default_factory=list)


@dataclass(slots=True)
class LoopConfig:
    model: Model
    stream_fn: StreamFn
    reasoning: ThinkingLevel | None = None
    stream_options: Callable[[Model], StreamOptions] = lambda _model: StreamOptions()
    """Builds the per-request options (api key, session id, payload hook...); the loop adds the signal."""
    convert_to_llm: Callable[[list[AgentMessage]], list[LlmMessage]] = convert_to_llm
    transform_context: Callable[[list[AgentMessage], AbortSignal], Awaitable[list[AgentMessage]]] | None = (
        None
    )
    before_tool_call: (
        Callable[[AssistantMessage, ToolCall, Any, AgentContext], Awaitable[ToolCallCheck | None]] | None
    ) = None
    after_tool_call: (
        Callable[
            [AssistantMessage, ToolCall, Any, ToolResult, bool, AgentContext],
            Awaitable[ToolResultOverride | None],
        ]
        | None
    ) = None
    get_steering_messages: Callable[[], Awaitable[list[AgentMessage]]] | None = None
    get_follow_up_messages: Callable[[], Awaitable[list[AgentMessage]]] | None = None
    prepare_next_turn: Callable[[CompletedTurn], Awaitable[NextTurn | None]] | None = None
    should_stop_after_turn: Callable[[CompletedTurn], Awaitable[bool]] | None = None
    tool_context: Callable[[], Any] = lambda: None
    """The ``ctx`` handed to tool ``execute`` (the extension context)."""
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    conversion_cache: ConversionCache | None = None
    """Handed to the provider with each request (``Context.conversion_cache``); only sound when
    ``transform_context`` returns messages nobody changes in place (the runtime's checked copies)."""


async def run_agent_loop(
    prompts: list[AgentMessage],
    context: AgentContext,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
) -> list[AgentMessage]:
    """Start a run with new prompt messages. Returns every message the run produced."""
    new_messages = list(prompts)
    current = AgentContext(context.system_prompt, [*context.messages, *prompts], list(context.tools))
    await emit(AgentStartEvent())
    await emit(TurnStartEvent(0, now_ms()))
    for i, prompt in enumerate(prompts):
        await emit(MessageStartEvent(prompt))
        ended = await _end(prompt, emit)
        if ended is not prompt:  # a message_end handler replaced it
            new_messages[i] = current.messages[len(context.messages) + i] = ended
    await _run_loop(current, new_messages, config, emit, signal)
    return new_messages


async def run_agent_loop_continue(
    context: AgentContext, config: LoopConfig, emit: Emit, signal: AbortSignal
) -> list[AgentMessage]:
    """Continue from the current context (the last message must be a user-side one or a tool result)."""
    if not context.messages:
        raise ValueError("Cannot continue: no messages in context")
    if isinstance(context.messages[-1], AssistantMessage):
        raise ValueError("Cannot continue from message role: assistant")
    new_messages: list[AgentMessage] = []
    current = AgentContext(context.system_prompt, list(context.messages), list(context.tools))
    await emit(AgentStartEvent())
    await emit(TurnStartEvent(0, now_ms()))
    await _run_loop(current, new_messages, config, emit, signal)
    return new_messages


async def _poll(source: Callable[[], Awaitable[list[AgentMessage]]] | None) -> list[AgentMessage]:
    return list(await source()) if source is not None else []


async def _run_loop(
    current: AgentContext,
    new_messages: list[AgentMessage],
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
) -> None:
    turn_index = 0
    last_turn: CompletedTurn | None = None
    pending = await _poll(config.get_steering_messages)
    while True:
        more_tool_calls = True
        while more_tool_calls or pending:
            if last_turn is not None:
                if config.prepare_next_turn is not None:
                    nxt = await config.prepare_next_turn(last_turn)
                    if nxt is not None:
                        current = nxt.context or current
                        if nxt.model is not None:
                            config.model = nxt.model
                        if nxt.thinking_level is not None:
                            config.reasoning = None if nxt.thinking_level == "off" else nxt.thinking_level
                if not pending:  # preparation may take long; pick up steering typed meanwhile
                    pending = await _poll(config.get_steering_messages)
                turn_index += 1
                await emit(TurnStartEvent(turn_index, now_ms()))
            for message in pending:
                await emit(MessageStartEvent(message))
                ended = await _end(message, emit)
                current.messages.append(ended)
                new_messages.append(ended)
            pending = []

            message = await _stream_assistant_response(current, config, emit, signal)
            new_messages.append(message)
            if message.stop_reason in ("error", "aborted"):
                await emit(TurnEndEvent(turn_index, message, []))
                await emit(AgentEndEvent(new_messages))
                return

            tool_calls = message.tool_calls()
            tool_results: list[ToolResultMessage] = []
            more_tool_calls = False
            if tool_calls:
                if message.stop_reason == "length":
                    tool_results, terminate = await _fail_truncated_calls(tool_calls, emit), False
                else:
                    tool_results, terminate = await _execute_tool_calls(
                        current, message, config, emit, signal
                    )
                more_tool_calls = not terminate
                current.messages.extend(tool_results)
                new_messages.extend(tool_results)
            await emit(TurnEndEvent(turn_index, message, tool_results))
            last_turn = CompletedTurn(message, tool_results, current, new_messages)
            if config.should_stop_after_turn is not None and await config.should_stop_after_turn(last_turn):
                await emit(AgentEndEvent(new_messages))
                return
            pending = await _poll(config.get_steering_messages)

        follow_ups = await _poll(config.get_follow_up_messages)
        if not follow_ups:
            break
        pending = follow_ups
    await emit(AgentEndEvent(new_messages))


_LLM_PROJECTION = ("convert_to_llm",)
"""The ``ConversionCache`` key of the default ``convert_to_llm``'s checkpoint."""


def _llm_messages(config: LoopConfig, messages: list[AgentMessage]) -> list[LlmMessage]:
    """``config.convert_to_llm(messages)``; with the runtime's conversion cache and the default projection,
    only the messages after last turn's (the very same objects) are projected, and the messages projected
    from host roles keep their identity from turn to turn (so the provider's per-message caches hit)."""
    cache = config.conversion_cache
    if cache is None or config.convert_to_llm is not convert_to_llm:
        return config.convert_to_llm(messages)
    resumed = cache.resume(_LLM_PROJECTION, messages)
    cache.scope(_LLM_PROJECTION, keep=True)  # (keeps the key alive: a checkpoint lives with its key)
    if resumed is None:
        projected: tuple[LlmMessage, ...] = tuple(convert_to_llm(messages))
    else:
        start, done = resumed
        projected = done + tuple(convert_to_llm(messages[start:])) if start < len(messages) else done
    cache.checkpoint(_LLM_PROJECTION, messages, projected)
    return list(projected)


async def _stream_assistant_response(
    current: AgentContext, config: LoopConfig, emit: Emit, signal: AbortSignal
) -> AssistantMessage:
    messages = current.messages
    if config.transform_context is not None:
        messages = await config.transform_context(messages, signal)
    llm_context = Context(
        current.system_prompt,
        _llm_messages(config, messages),
        [t.as_provider_tool() for t in current.tools] or None,
        config.conversion_cache,
    )
    options = config.stream_options(config.model)
    options.signal = signal
    options.reasoning = config.reasoning

    started = False
    final: AssistantMessage | None = None
    if signal.aborted:  # aborted between turns: do not send another request
        stream = _no_stream()
    else:
        stream = config.stream_fn(config.model, llm_context, options)
    loop = asyncio.get_running_loop()
    handled_since = loop.time()
    try:
        async for event in stream:
            if loop.time() - handled_since > YIELD_EVERY_S:
                await asyncio.sleep(0)
                handled_since = loop.time()
            if isinstance(event, StartEvent):
                current.messages.append(event.partial)
                started = True
                await emit(MessageStartEvent(replace(event.partial)))
            elif isinstance(event, DoneEvent | ErrorEvent):
                final = event.message if isinstance(event, DoneEvent) else event.error
                break
            elif started:
                partial = event.partial
                current.messages[-1] = partial
                await emit(MessageUpdateEvent(replace(partial), event))
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if final is None:
        final = AssistantMessage(
            [],
            config.model.api,
            config.model.provider,
            config.model.id,
            stop_reason="aborted" if signal.aborted else "error",
            error_message="Request was aborted"
            if signal.aborted
            else "The provider stream ended without a result",
        )
    if started:
        current.messages[-1] = final
    else:
        current.messages.append(final)
        await emit(MessageStartEvent(replace(final)))
    ended = await _end(final, emit)
    if ended is not final:  # a message_end handler replaced it (same role)
        assert isinstance(ended, AssistantMessage)
        current.messages[-1] = final = ended
    return final


def _invalid_result(result: object) -> str | None:
    """Why a tool's return value cannot become a tool result (it must survive the session file), or None."""
    if not isinstance(result, ToolResult):
        return f"{type(result).__name__}, not a ToolResult"
    if not isinstance(result.content, list) or not all(
        isinstance(b, TextContent | ImageContent) for b in result.content
    ):
        return "content must be a list of TextContent/ImageContent blocks"
    try:
        msgspec.json.encode(result.details)
    except (TypeError, msgspec.EncodeError) as e:
        return f"details cannot be saved as JSON ({e})"
    return None


async def _no_stream() -> AsyncIterator[AssistantMessageEvent]:
    return
    yield  # pragma: no cover - makes this an async generator


def _error_result(text: str) -> ToolResult:
    return ToolResult([TextContent(text)], {})


def tool_output_text(text: str) -> str:
    """Tool output as the model, the session file and every view get it: lone surrogates (a file name
    that is not UTF-8) as U+FFFD, and every secret value caddie knows as ``[redacted]``, so
    ``cat ~/.caddie/agent/auth.json`` shows no key (docs/reliability.md)."""
    return secrets.redact_known(clean_text(text))


def _outward(result: ToolResult) -> ToolResult:
    """``result`` with ``tool_output_text`` applied to its text blocks (the same object when unchanged)."""
    content = result.content
    cleaned = [
        replace(b, text=text)
        if isinstance(b, TextContent) and (text := tool_output_text(b.text)) != b.text
        else b
        for b in content
    ]
    if all(a is b for a, b in zip(cleaned, content, strict=True)):
        return result
    return dataclasses.replace(result, content=cleaned)


def _result_message(call: ToolCall, result: ToolResult, is_error: bool) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=list(result.content or []),
        is_error=is_error,
        details=result.details,
        usage=result.usage,
        added_tool_names=result.added_tool_names or None,
    )


async def _end(message: AgentMessage, emit: Emit) -> AgentMessage:
    """``message_end`` for ``message``; returns what was stored (a handler may have replaced it)."""
    event = MessageEndEvent(message)
    await emit(event)
    return event.message


async def _emit_result(message: ToolResultMessage, emit: Emit) -> ToolResultMessage:
    await emit(MessageStartEvent(message))
    ended = await _end(message, emit)
    return ended if isinstance(ended, ToolResultMessage) else message


async def _fail_truncated_calls(calls: list[ToolCall], emit: Emit) -> list[ToolResultMessage]:
    out: list[ToolResultMessage] = []
    for call in calls:
        await emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
        result = _error_result(OUTPUT_TOKEN_LIMIT.format(name=call.name))
        await emit(ToolExecutionEndEvent(call.id, call.name, result, True))
        message = await _emit_result(_result_message(call, result, True), emit)
        out.append(message)
    return out


@dataclass(slots=True)
class _Finalized:
    call: ToolCall
    result: ToolResult
    is_error: bool


@dataclass(slots=True)
class _Prepared:
    call: ToolCall
    tool: ToolDefinition
    args: Any


async def _prepare(
    current: AgentContext, message: AssistantMessage, call: ToolCall, config: LoopConfig, signal: AbortSignal
) -> _Prepared | _Finalized:
    tool = next((t for t in current.tools if t.name == call.name), None)
    if tool is None:
        return _Finalized(call, _error_result(TOOL_NOT_FOUND.format(name=call.name)), True)
    if call.arguments_error is not None:  # never run a guess at what a cut-off call meant
        text = INCOMPLETE_ARGUMENTS.format(name=call.name, error=call.arguments_error)
        return _Finalized(call, _error_result(text), True)
    try:
        args = validate_arguments(tool, call.arguments)  # runs the tool's prepare_arguments first
        if config.before_tool_call is not None:
            check = await config.before_tool_call(message, call, args, current)
            if signal.aborted:
                return _Finalized(call, _error_result(OPERATION_ABORTED), True)
            if check is not None and check.block:
                result = _error_result(check.reason or TOOL_BLOCKED)
                result.terminate = check.terminate
                return _Finalized(call, result, True)
        if signal.aborted:
            return _Finalized(call, _error_result(OPERATION_ABORTED), True)
        return _Prepared(call, tool, args)
    except Exception as e:  # validation and hook failures become the model's error text
        return _Finalized(call, _error_result(str(e)), True)


async def _execute(
    prepared: _Prepared, config: LoopConfig, emit: Emit, signal: AbortSignal
) -> tuple[ToolResult, bool]:
    updates: list[asyncio.Task[None]] = []
    accepting = True

    def on_update(partial: ToolResult) -> None:
        if accepting:
            event = ToolExecutionUpdateEvent(
                prepared.call.id, prepared.call.name, prepared.call.arguments, partial
            )
            updates.append(asyncio.ensure_future(emit(event)))

    try:
        outcome = prepared.tool.execute(
            prepared.call.id, prepared.args, signal, on_update, config.tool_context()
        )
        result = await outcome if inspect.isawaitable(outcome) else outcome
        problem = _invalid_result(result)
        if problem is not None:
            raise TypeError(f"tool {prepared.call.name!r} returned an invalid result: {problem}")
        return _outward(result), False
    except Exception as e:
        text = str(e) or type(e).__name__
        return _error_result(tool_output_text(text)), True
    finally:
        accepting = False
        if updates:
            await asyncio.gather(*updates, return_exceptions=True)


async def _finalize(
    current: AgentContext,
    message: AssistantMessage,
    prepared: _Prepared,
    result: ToolResult,
    is_error: bool,
    config: LoopConfig,
) -> _Finalized:
    if config.after_tool_call is not None:
        try:
            override = await config.after_tool_call(
                message, prepared.call, prepared.args, result, is_error, current
            )
        except Exception as e:
            return _Finalized(prepared.call, _error_result(str(e)), True)
        if override is not None:
            result = ToolResult(
                content=_outward(ToolResult(override.content)).content
                if override.content is not None
                else result.content,
                details=override.details if override.details is not None else result.details,
                usage=override.usage if override.usage is not None else result.usage,
                added_tool_names=result.added_tool_names,
                terminate=override.terminate if override.terminate is not None else result.terminate,
            )
            if override.is_error is not None:
                is_error = override.is_error
    return _Finalized(prepared.call, result, is_error)


async def _execute_tool_calls(
    current: AgentContext, message: AssistantMessage, config: LoopConfig, emit: Emit, signal: AbortSignal
) -> tuple[list[ToolResultMessage], bool]:
    calls = message.tool_calls()
    sequential = config.tool_execution == "sequential" or any(
        t.execution_mode == "sequential" for c in calls for t in current.tools if t.name == c.name
    )
    finalized: list[_Finalized] = []
    results: list[ToolResultMessage] = []

    async def run(prepared: _Prepared) -> _Finalized:
        result, is_error = await _execute(prepared, config, emit, signal)
        done = await _finalize(current, message, prepared, result, is_error, config)
        await emit(ToolExecutionEndEvent(done.call.id, done.call.name, done.result, done.is_error))
        return done

    if sequential:
        for call in calls:
            await emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
            prep = await _prepare(current, message, call, config, signal)
            if isinstance(prep, _Finalized):
                done = prep
                await emit(ToolExecutionEndEvent(call.id, call.name, done.result, done.is_error))
            else:
                done = await run(prep)
            result_message = await _emit_result(_result_message(done.call, done.result, done.is_error), emit)
            finalized.append(done)
            results.append(result_message)
            if signal.aborted:
                break
    else:
        slots: list[_Finalized | asyncio.Task[_Finalized]] = []
        for call in calls:
            await emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))
            prep = await _prepare(current, message, call, config, signal)
            if isinstance(prep, _Finalized):
                await emit(ToolExecutionEndEvent(call.id, call.name, prep.result, prep.is_error))
                slots.append(prep)
            else:
                slots.append(asyncio.ensure_future(run(prep)))
            if signal.aborted:
                break
        for slot in slots:
            finalized.append(await slot if isinstance(slot, asyncio.Task) else slot)
        for done in finalized:
            result_message = await _emit_result(_result_message(done.call, done.result, done.is_error), emit)
            results.append(result_message)
    terminate = bool(finalized) and all(f.result.terminate for f in finalized)
    return results, terminate
