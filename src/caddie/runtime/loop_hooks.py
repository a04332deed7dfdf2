"""The agent loop's hooks, as the session answers them.

The loop (``caddie.agent``) knows nothing of extensions, the session file or compaction; it calls these
hooks: the ``context`` handlers before a request, ``tool_call``/``tool_result`` around a tool, compaction
between turns, and every agent event (extensions first, then the modes, then the session file).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

import msgspec

from caddie.agent.agent import Agent
from caddie.agent.events import AgentEndEvent, AgentEvent, MessageEndEvent, MessageStartEvent
from caddie.agent.loop import (
    AgentContext,
    CompletedTurn,
    LoopConfig,
    NextTurn,
    ToolCallCheck,
    ToolResultOverride,
)
from caddie.ai.abort import AbortSignal
from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    convert_to_llm,
    freeze,
)
from caddie.ai.model import Model, ProviderResponse, StreamOptions
from caddie.config.environment import cache_retention
from caddie.config.settings import Settings
from caddie.extensions.api import (
    AfterProviderResponseEvent,
    ExtensionContext,
    ToolCallEvent,
    ToolResultEvent,
)
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.checkpointing import Checkpointing
from caddie.runtime.compaction_port import Compactor, StreamFn
from caddie.runtime.prompting import Prompter
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_events import SessionEvent
from caddie.runtime.tools_prompt import ToolsAndPrompt
from caddie.session.store import SessionStore
from caddie.tools.base import ToolResult

_EXTENSION_AGENT_EVENTS = frozenset(
    {
        "agent_start",
        "agent_end",
        "turn_start",
        "turn_end",
        "message_start",
        "message_update",
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    }
)


IMAGES_BLOCKED = "Image reading is disabled."
"""What an image becomes with settings ``images.blockImages`` (Pi's words)."""


def without_images(messages: list[AgentMessage]) -> list[LlmMessage]:
    """``convert_to_llm`` with every image of user messages and tool results replaced by one line saying
    image reading is disabled (consecutive ones once), as Pi does for ``images.blockImages``."""
    out: list[LlmMessage] = []
    for message in convert_to_llm(messages):
        blocks = message.content if isinstance(message, UserMessage | ToolResultMessage) else None
        if isinstance(blocks, list) and any(isinstance(b, ImageContent) for b in blocks):
            content: list[UserContent] = []
            for block in blocks:
                if not isinstance(block, ImageContent):
                    content.append(block)
                elif not (content and _is_blocked_line(content[-1])):
                    content.append(TextContent(IMAGES_BLOCKED))
            message = msgspec.structs.replace(message, content=content)
        out.append(message)
    return out


def _is_blocked_line(block: UserContent) -> bool:
    return isinstance(block, TextContent) and block.text == IMAGES_BLOCKED


class LoopHooksHost(Protocol):
    """What the agent loop's hooks need of the session."""

    @property
    def agent(self) -> Agent: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def run(self) -> RunController: ...

    @property
    def prompter(self) -> Prompter: ...

    @property
    def compactor(self) -> Compactor | None: ...

    @property
    def stream_fn(self) -> StreamFn: ...

    @property
    def tools(self) -> ToolsAndPrompt: ...

    def api_key_for(self, model: Model) -> str | None: ...

    def context(self, system_prompt: Callable[[], str] | None = None) -> ExtensionContext: ...

    async def publish_event(self, event: SessionEvent) -> None: ...

    @property
    def checkpoints(self) -> Checkpointing: ...

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]: ...


class LoopHooks:
    def __init__(self, session: LoopHooksHost) -> None:
        self._session = session
        self._compacted_after: CompletedTurn | None = None
        self._conversions = ConversionCache()
        """The providers' per-message conversions, kept across turns (sound: messages are frozen)."""

    def config(self) -> LoopConfig:
        session = self._session
        state = session.agent.state
        level = state.thinking_level
        return LoopConfig(
            model=state.model,
            stream_fn=session.stream_fn,
            reasoning=None if level == "off" else level,
            stream_options=self._stream_options,
            convert_to_llm=without_images if session.settings.block_images else convert_to_llm,
            transform_context=self._transform_context,
            before_tool_call=self._before_tool_call,
            after_tool_call=self._after_tool_call,
            prepare_next_turn=self._prepare_next_turn,
            should_stop_after_turn=self._should_stop_after_turn,
            tool_context=session.context,
            conversion_cache=self._conversions,
        )

    def _stream_options(self, model: Model) -> StreamOptions:
        session = self._session
        settings = session.settings
        timeout_ms = settings.provider_timeout_ms
        runner = session.runner
        return StreamOptions(
            api_key=session.api_key_for(model),
            session_id=session.store.session_id,
            timeout_s=(settings.http_idle_timeout_ms if timeout_ms is None else timeout_ms) / 1000,
            max_retry_delay_ms=settings.retry_max_delay_ms,
            max_retries=settings.provider_max_retries,
            thinking_budgets=settings.thinking_budgets or None,
            cache_retention=cache_retention(),
            # The provider hooks only when a handler listens (a payload hook costs the conversion cache).
            on_payload=runner.emit_before_provider_request
            if runner.has_handlers("before_provider_request")
            else None,
            on_headers=runner.emit_before_provider_headers
            if runner.has_handlers("before_provider_headers")
            else None,
            on_response=self._after_provider_response
            if runner.has_handlers("after_provider_response")
            else None,
            transport=_transport(settings.get("transport")),
        )

    async def _after_provider_response(self, response: ProviderResponse) -> None:
        headers = {k.lower(): v for k, v in response.headers.items()}
        await self._session.runner.emit(
            "after_provider_response", AfterProviderResponseEvent(response.status, headers)
        )

    async def _transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal
    ) -> list[AgentMessage]:
        """The ``context`` handlers' output; an abort never waits on them (``RunController.unless_aborted``):
        the run then ends as aborted without a request."""
        session = self._session
        runner = session.runner
        if not runner.has_handlers("context"):
            return messages
        result = await session.run.unless_aborted(runner.emit_context(messages), signal, "context")
        return messages if result is None else result

    async def _before_tool_call(
        self, message: AssistantMessage, call: ToolCall, args: Any, ctx: AgentContext
    ) -> ToolCallCheck | None:
        runner = self._session.runner
        if not runner.has_handlers("tool_call"):
            return None
        try:
            result = await runner.emit_tool_call(ToolCallEvent(call.id, call.name, args))
        except Exception as e:
            return ToolCallCheck(block=True, reason=str(e) or type(e).__name__)
        if result is not None and result.block:
            return ToolCallCheck(block=True, reason=result.reason, terminate=result.terminate)
        return None

    async def _after_tool_call(
        self,
        message: AssistantMessage,
        call: ToolCall,
        args: Any,
        result: ToolResult,
        is_error: bool,
        ctx: AgentContext,
    ) -> ToolResultOverride | None:
        runner = self._session.runner
        if not runner.has_handlers("tool_result"):
            return None
        event = ToolResultEvent(
            call.id, call.name, args, list(result.content), result.details, is_error, result.usage
        )
        patch = await runner.emit_tool_result(event)
        if patch is None:
            return None
        return ToolResultOverride(patch.content, patch.details, patch.is_error, patch.usage)

    async def _prepare_next_turn(self, turn: CompletedTurn) -> NextTurn | None:
        session = self._session
        tools = session.tools.active()
        prompt = session.tools.system_prompt
        if session.compactor is not None and self._compacted_after is not turn:
            await session.compactor.between_turns(turn)
        state = session.agent.state
        # A model or thinking level changed during the run (an extension, /model) applies from the next turn.
        nxt = NextTurn(model=state.model, thinking_level=state.thinking_level)
        if prompt != turn.context.system_prompt or [t.name for t in tools] != [
            t.name for t in turn.context.tools
        ]:
            nxt.context = AgentContext(prompt, turn.context.messages, tools)
        return nxt

    async def _should_stop_after_turn(self, turn: CompletedTurn) -> bool:
        # A turn the loop will follow with another (tool results, queued messages) is compacted here, before
        # the loop decides to go on: a summary that ends the run (a goal budget) then stops it in time.
        session = self._session
        if (
            session.compactor is not None
            and not session.run.stopping
            and (turn.tool_results or session.agent.has_queued_messages())
        ):
            self._compacted_after = turn
            await session.compactor.between_turns(turn)
        return session.run.stopping

    async def on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Extensions first, then the modes, then the session file (``message_end`` → an entry)."""
        session = self._session
        runner = session.runner
        if isinstance(event, MessageEndEvent):
            replacement = await runner.emit_message_end(event.message)
            if replacement is not None and replacement is not event.message:
                # Messages do not change: the replacement (same role) takes the original's place in the
                # event, so the loop's context, the agent state and what gets persisted all hold it.
                event.message = (
                    freeze(replacement) if isinstance(replacement, AssistantMessage) else replacement
                )
        elif event.type in _EXTENSION_AGENT_EVENTS:
            await runner.emit(event.type, event)
        if isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage):
            session.prompter.dequeue_display(event.message)
        elif isinstance(event, AgentEndEvent):
            event.will_retry = session.run.will_retry()
            session.checkpoints.run_ended(session.spawn)
        await session.publish_event(event)
        if isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage | CustomMessage):
            # The files as they were before this input: shown at once, saved before its entry is written.
            await session.checkpoints.before_input()
        if isinstance(event, MessageEndEvent):
            self._persist(event.message)
            if isinstance(event.message, AssistantMessage):
                session.checkpoints.after_reply()
                await session.run.reply_succeeded(event.message)

    def _persist(self, message: AgentMessage) -> None:
        store = self._session.store
        if isinstance(message, CustomMessage):
            store.append_custom_message(
                message.custom_type, message.content, message.display, message.details
            )
        elif message.role in ("user", "assistant", "toolResult", "bashExecution"):
            store.append_message(message)


def _transport(value: object) -> Literal["auto", "sse", "websocket", "websocket-cached"] | None:
    """Settings ``transport`` (Pi's key: how the Codex API connects); anything else means the default."""
    if value == "auto" or value == "sse" or value == "websocket" or value == "websocket-cached":
        return value
    return None
