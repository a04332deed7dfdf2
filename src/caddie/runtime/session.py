"""AgentSession: one conversation, running. Wires the agent loop to the session store, extensions and settings.

Data flow of a prompt (Pi's order): extension command ``/name args`` (runs at once, no model call) → ``input``
→ queue as steering/follow-up if a run is active → ``before_agent_start`` (extra messages, system prompt)
→ run: ``agent_start`` … ``agent_end`` → post-run (retry with backoff, compaction, queued continuation)
→ ``agent_settled``.

For every agent event the session first awaits the extension handlers, then tells its subscribers (the
modes), then persists (``message_end`` → a session entry). Extensions act through ``ExtensionHost`` (this
class) and see the session through a context object.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal as signals
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from caddie.agent.agent import Agent, AgentState
from caddie.agent.events import AgentEndEvent, AgentEvent, MessageEndEvent, MessageStartEvent
from caddie.agent.loop import (
    AgentContext,
    CompletedTurn,
    LoopConfig,
    NextTurn,
    ToolCallCheck,
    ToolResultOverride,
)
from caddie.ai import errors as ai_errors
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.events import AssistantMessageEvent
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ToolCall,
    UserContent,
    UserMessage,
    text_of,
)
from caddie.ai.model import THINKING_LEVELS, Context, Model, StreamOptions, ThinkingLevel
from caddie.ai.stream import stream as default_stream
from caddie.ai.tokens import context_tokens_of_usage, estimate_context_tokens
from caddie.config.settings import Settings
from caddie.extensions.api import (
    BeforeAgentStartEvent,
    CommandSpec,
    ContextUsage,
    DeliverAs,
    ExtensionUI,
    Mode,
    ModelSelectEvent,
    NotifyLevel,
    SessionShutdownEvent,
    SessionStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from caddie.extensions.runner import Extension, ExtensionError, ExtensionRunner, call_handler
from caddie.runtime.events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    ExtensionEvent,
    NoticeEvent,
    QueueUpdateEvent,
    SessionEvent,
)
from caddie.runtime.system_prompt import ContextFile, ToolLine, build_system_prompt
from caddie.runtime.ui import HeadlessUI
from caddie.session.context import SessionContext as StoredContext
from caddie.session.entries import BranchSummaryEntry, CompactionEntry, MessageEntry
from caddie.session.store import SessionStore
from caddie.tools.base import ToolDefinition, ToolResult

log = logging.getLogger("caddie.session")

Subscriber = Callable[[SessionEvent], Any]
StreamFn = Callable[[Model, Context, StreamOptions], AsyncIterator[AssistantMessageEvent]]
PromptSource = Literal["interactive", "rpc", "extension", "print"]


class SessionError(Exception):
    """A user-facing problem with a request (no model, busy without a delivery mode, ...)."""


@dataclass
class SessionOptions:
    """Everything an AgentSession is built from (see ``caddie.runtime.factory`` for the usual wiring)."""

    store: SessionStore
    settings: Settings
    model: Model | None
    builtin_tools: dict[str, ToolDefinition]
    active_builtin: list[str]
    extensions: list[Extension] = field(default_factory=list)
    extension_events: Any = None
    mode: Mode = "print"
    ui: ExtensionUI | None = None
    thinking_level: ThinkingLevel = "off"
    api_key_for: Callable[[Model], str | None] = lambda _m: None
    find_model: Callable[[str, str], Model | None] = lambda _p, _i: None
    stream_fn: StreamFn = default_stream
    context_files: list[ContextFile] = field(default_factory=list)
    custom_prompt: str | None = None
    append_prompt: str | None = None
    project_trusted: bool = False
    reload_extensions: Callable[[], Awaitable[tuple[list[Extension], list[str]]]] | None = None
    flags: dict[str, str | bool] = field(default_factory=dict)
    """Extension command-line flags given by the user."""
    restored: StoredContext | None = None
    """The store's context if the caller built it already (saves a second walk of a large session)."""


class AgentSession:
    def __init__(self, options: SessionOptions) -> None:
        self.options = options
        self.store = options.store
        self.settings = options.settings
        self.mode: Mode = options.mode
        self._notify_headless = options.ui is None
        self.ui: ExtensionUI = options.ui or HeadlessUI(self._headless_notify)
        self._builtin_tools = dict(options.builtin_tools)
        self._extensions = list(options.extensions)
        self._subscribers: list[Subscriber] = []
        self._run_active = False
        self._run_done: asyncio.Event = asyncio.Event()
        self._run_done.set()
        self._background: set[asyncio.Task[Any]] = set()
        self._next_turn: list[CustomMessage] = []
        self._steering_texts: list[str] = []
        self._follow_up_texts: list[str] = []
        self._system_prompt_override: str | None = None
        self._retry_attempt = 0
        self._retry_abort: AbortController | None = None
        self._stop_after_turn = False
        self._bound = False
        self.load_errors: list[str] = []
        self.compactor: Compactor | None = None
        self._overflow_recovery_attempted = False
        self._closing = False
        self._starting = False
        self._outbox: list[SessionEvent] = []
        self._outbox_flush: asyncio.Task[None] | None = None
        self._pending_bash: list[BashExecutionMessage] = []
        self.exit_code: int | None = None

        self.runner = ExtensionRunner(self._extensions, self.context, self._on_extension_error)
        extension_tools = [t.name for t in self.runner.tools()]
        self._active_tools: list[str] = [
            n for n in dict.fromkeys([*options.active_builtin, *extension_tools]) if n in self._tool_map()
        ]
        restored = options.restored or self.store.build_context()
        model = options.model
        if model is None and restored.model is not None:
            model = options.find_model(*restored.model)
        self._system_prompt = ""
        self.agent = Agent(
            AgentState(
                system_prompt="",
                model=model or _NO_MODEL,
                thinking_level=options.thinking_level,
                messages=restored.messages,
            ),
            self._loop_config,
            steering_mode="all" if self.settings.steering_mode == "all" else "one-at-a-time",
            follow_up_mode="all" if self.settings.follow_up_mode == "all" else "one-at-a-time",
        )
        self._has_model = model is not None
        self.agent.subscribe(self._on_agent_event)
        self._rebuild_system_prompt()

    # ==============================================================================================
    # Lifecycle

    async def start(
        self,
        reason: Literal["startup", "reload", "new", "resume", "fork"] = "startup",
        previous_session_file: str | None = None,
    ) -> None:
        """Bind extensions to this session and announce it (``session_start``)."""
        for ext in self._extensions:
            if ext.api is not None:
                ext.api.bind(self)
        self._bound = True
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_session_file))
        self._rebuild_system_prompt()

    async def shutdown(
        self,
        reason: Literal["quit", "reload", "new", "resume", "fork"] = "quit",
        target_session_file: str | None = None,
        *,
        settle_timeout: float = 10.0,
    ) -> None:
        """End the session: abort a running turn, let runs settle (so every entry is written), tell the
        extensions (``session_shutdown``), deliver pending events, and cancel whatever background work is
        still left (e.g. a timer an extension started)."""
        if self._run_active:
            self.abort()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_for_idle(), settle_timeout)
        await self.runner.emit("session_shutdown", SessionShutdownEvent(reason, target_session_file))
        await self._flush_outbox()
        self._closing = reason == "quit"
        for task in list(self._background):
            task.cancel()
        for ext in self._extensions:
            if ext.api is not None:
                ext.api.bind(None)

    # ==============================================================================================
    # Observation

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    async def _publish(self, event: SessionEvent) -> None:
        """Tell every subscriber, in order; events queued from synchronous code go out first."""
        await self._flush_outbox()
        await self._deliver(event)

    async def _deliver(self, event: SessionEvent) -> None:
        for subscriber in list(self._subscribers):
            try:
                await call_handler(subscriber, event)
            except Exception:
                log.exception("session subscriber failed on %s", getattr(event, "type", event))

    async def _flush_outbox(self) -> None:
        while self._outbox:
            await self._deliver(self._outbox.pop(0))

    def _publish_soon(self, event: SessionEvent) -> None:
        """Queue an event from synchronous code; it is delivered before the next one, or right after."""
        self._outbox.append(event)
        if self._outbox_flush is None or self._outbox_flush.done():
            self._outbox_flush = self._spawn(self._flush_outbox())

    def _headless_notify(self, message: str, level: NotifyLevel) -> None:
        self._publish_soon(NoticeEvent(message, level))

    def _on_extension_error(self, err: ExtensionError) -> None:
        log.debug("extension %s failed in %s: %s", err.extension_path, err.event, err.stack or err.error)
        self._publish_soon(ExtensionErrorEvent(err.extension_path, err.event, err.error))

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def model(self) -> Model | None:
        return self.agent.state.model if self._has_model else None

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    @property
    def is_idle(self) -> bool:
        return not self._run_active

    @property
    def is_streaming(self) -> bool:
        return self._run_active

    @property
    def system_prompt(self) -> str:
        return self._system_prompt_override or self._system_prompt

    @property
    def cwd(self) -> str:
        return self.store.cwd

    def pending_message_count(self) -> int:
        return len(self._steering_texts) + len(self._follow_up_texts)

    async def wait_for_idle(self) -> None:
        """Until no run is active and no extension-started work is pending."""
        while True:
            await self._run_done.wait()
            pending = [t for t in self._background if not t.done()]
            if not pending:
                if self._run_done.is_set():
                    return
                continue
            await asyncio.wait(pending)

    # ==============================================================================================
    # Tools and system prompt

    def _tool_map(self) -> dict[str, ToolDefinition]:
        tools = dict(self._builtin_tools)
        for tool in self.runner.tools():
            tools[tool.name] = tool
        return tools

    def all_tools(self) -> list[ToolDefinition]:
        return list(self._tool_map().values())

    def active_tools(self) -> list[ToolDefinition]:
        tools = self._tool_map()
        return [tools[n] for n in self._active_tools if n in tools]

    def _rebuild_system_prompt(self) -> None:
        lines = [ToolLine(t.name, t.prompt_snippet, t.prompt_guidelines) for t in self.active_tools()]
        self._system_prompt = build_system_prompt(
            cwd=self.cwd,
            tools=lines,
            context_files=self.options.context_files,
            custom_prompt=self.options.custom_prompt,
            append=self.options.append_prompt,
        )
        self.agent.state.system_prompt = self._system_prompt_override or self._system_prompt
        self.agent.state.tools = self.active_tools()

    # ==============================================================================================
    # ExtensionHost (what ExtensionAPI action methods do)

    def append_entry(self, custom_type: str, data: Any) -> str:
        entry_id = self.store.append_custom(custom_type, data)
        entry = self.store.get_entry(entry_id)
        if entry is not None and self._subscribers:
            self._publish_soon(EntryAppendedEvent(entry))
        return entry_id

    def send_message(self, message: CustomMessage, deliver_as: DeliverAs | None, trigger_turn: bool) -> None:
        if deliver_as == "next_turn":
            self._next_turn.append(message)
        elif self._run_active:
            (self.agent.follow_up if deliver_as == "follow_up" else self.agent.steer)(message)
        elif trigger_turn:
            self._spawn(self._run_agent_prompt([message]))
        else:
            self.agent.state.messages.append(message)
            self.store.append_custom_message(
                message.custom_type, message.content, message.display, message.details
            )
            self._publish_soon(MessageStartEvent(message))
            self._publish_soon(MessageEndEvent(message))

    def send_user_message(self, content: str | list[UserContent], deliver_as: DeliverAs | None) -> None:
        if self._run_active:
            if deliver_as not in ("steer", "follow_up"):
                raise SessionError(
                    "send_user_message while the agent is working needs deliver_as='steer' or 'follow_up'"
                )
            blocks: list[UserContent] = [TextContent(content)] if isinstance(content, str) else list(content)
            self._queue_user(UserMessage(blocks), text_of(blocks), deliver_as)
            return
        self._spawn(self._prompt_from_extension(content))

    async def _prompt_from_extension(self, content: str | list[UserContent]) -> None:
        """Like a typed prompt (``input`` with source ``extension``), minus command handling."""
        blocks: list[UserContent] = [TextContent(content)] if isinstance(content, str) else list(content)
        text = text_of(blocks)
        images = [b for b in blocks if isinstance(b, ImageContent)] or None
        if self.runner.has_handlers("input"):
            result = await self.runner.emit_input(text, images, "extension", None)
            if result.action == "handled":
                return
            if result.action == "transform" and result.text is not None:
                text, images = result.text, result.images
                blocks = [TextContent(text), *(images or [])]
        await self._start_prompt(text, images, UserMessage(blocks))

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.store.append_label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        self.store.append_session_info(name)

    def get_session_name(self) -> str | None:
        return self.store.session_name()

    def get_active_tools(self) -> list[str]:
        return list(self._active_tools)

    def get_all_tools(self) -> list[ToolDefinition]:
        return self.all_tools()

    def set_active_tools(self, names: Sequence[str]) -> None:
        known = self._tool_map()
        self._active_tools = [n for n in dict.fromkeys(names) if n in known]
        self._rebuild_system_prompt()

    def get_commands(self) -> list[CommandSpec]:
        return list(self.runner.commands().values())

    def refresh_tools(self) -> None:
        """A tool was registered after start-up: make it active and rebuild the prompt."""
        for tool in self.runner.tools():
            if tool.name not in self._active_tools and self._bound:
                self._active_tools.append(tool.name)
        self._rebuild_system_prompt()

    async def set_model(self, model: Model) -> bool:
        previous = self.model
        self.agent.state.model = model
        self._has_model = True
        self.store.append_model_change(model.provider, model.id)
        self.set_thinking_level(self.agent.state.thinking_level)
        await self.runner.emit("model_select", ModelSelectEvent(model, previous, "set"))
        return True

    def get_thinking_level(self) -> str:
        return self.agent.state.thinking_level

    def set_thinking_level(self, level: str) -> None:
        lvl: ThinkingLevel = next((t for t in THINKING_LEVELS if t == level), "off")
        if self._has_model and not self.agent.state.model.reasoning:
            lvl = "off"
        if lvl != self.agent.state.thinking_level:
            self.agent.state.thinking_level = lvl
            self.store.append_thinking_level_change(lvl)

    def publish(self, name: str, data: Any) -> None:
        self._publish_soon(ExtensionEvent(name, data))

    def stop_after_turn(self) -> None:
        self._stop_after_turn = True

    def get_flag(self, name: str) -> str | bool | None:
        return self.options.flags.get(name)

    def set_exit_code(self, code: int) -> None:
        self.exit_code = code

    # ==============================================================================================
    # Contexts handed to extensions

    def context(self) -> SessionContext:
        return SessionContext(self)

    def command_context(self) -> CommandContextImpl:
        return CommandContextImpl(self)

    def get_context_usage(self) -> ContextUsage | None:
        model = self.model
        if model is None or model.context_window <= 0:
            return None
        if self._compacted_without_usage():
            return ContextUsage(None, model.context_window, None)
        tokens = estimate_context_tokens(self.agent.state.messages)
        return ContextUsage(tokens, model.context_window, tokens / model.context_window * 100)

    def _compacted_without_usage(self) -> bool:
        """After a compaction, until a reply reports usage again, the size of the context is unknown (Pi)."""
        branch = self.store.branch()
        for entry in reversed(branch):
            if isinstance(entry, CompactionEntry):
                return True
            if (
                isinstance(entry, MessageEntry)
                and isinstance(entry.message, AssistantMessage)
                and entry.message.stop_reason not in ("error", "aborted")
                and context_tokens_of_usage(entry.message.usage) > 0
            ):
                return False
        return False

    # ==============================================================================================
    # Prompting

    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None = None,
        *,
        source: PromptSource = "interactive",
        streaming_behavior: Literal["steer", "follow_up"] | None = None,
    ) -> None:
        """Handle one line of user input; returns once the run it started has settled."""
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = self.runner.commands().get(name)
            if command is not None:
                await self.run_command(command, args.strip())
                return
        if self.runner.has_handlers("input"):
            result = await self.runner.emit_input(text, images, source, streaming_behavior)
            if result.action == "handled":
                return
            if result.action == "transform" and result.text is not None:
                text, images = result.text, result.images
        if self._run_active:
            if streaming_behavior is None:
                raise SessionError("The agent is working; send the message as a steer or a follow-up.")
            blocks: list[UserContent] = [TextContent(text), *(images or [])]
            self._queue_user(UserMessage(blocks), text, streaming_behavior)
            return
        await self._start_prompt(text, images, UserMessage([TextContent(text), *(images or [])]))

    def steer(self, text: str, images: list[ImageContent] | None = None) -> None:
        self._reject_command(text)
        self._queue_user(UserMessage([TextContent(text), *(images or [])]), text, "steer")

    def follow_up(self, text: str, images: list[ImageContent] | None = None) -> None:
        self._reject_command(text)
        self._queue_user(UserMessage([TextContent(text), *(images or [])]), text, "follow_up")

    def _reject_command(self, text: str) -> None:
        name = text[1:].partition(" ")[0] if text.startswith("/") else ""
        if name and name in self.runner.commands():
            raise SessionError(
                f"/{name} is a command: it runs at once and cannot be queued; send it as a prompt."
            )

    def _queue_user(self, message: UserMessage, text: str, how: Literal["steer", "follow_up"]) -> None:
        if how == "steer":
            self.agent.steer(message)
            self._steering_texts.append(text)
        else:
            self.agent.follow_up(message)
            self._follow_up_texts.append(text)
        self._publish_soon(QueueUpdateEvent(list(self._steering_texts), list(self._follow_up_texts)))

    def clear_queues(self) -> tuple[list[str], list[str]]:
        """Drop queued user messages (Esc restores them to the editor); returns what was queued."""
        steering, follow = list(self._steering_texts), list(self._follow_up_texts)
        self.agent.steering.clear()
        self.agent.follow_ups.clear()
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self._publish_soon(QueueUpdateEvent([], []))
        return steering, follow

    async def _start_prompt(self, text: str, images: list[ImageContent] | None, user: UserMessage) -> None:
        if not self._has_model:
            raise SessionError("No model is configured, so there is nothing to send the prompt to.")
        # From here on the session counts as busy: a second prompt arriving while extensions prepare this one
        # is queued (and shown as pending) instead of racing it.
        self._starting = True
        try:
            if self.compactor is not None:
                await self.compactor.before_prompt(self)
            self._overflow_recovery_attempted = False
            batch: list[AgentMessage] = [user, *self._next_turn]
            self._next_turn = []
            if self.runner.has_handlers("before_agent_start"):
                event = BeforeAgentStartEvent(text, images, self._system_prompt)
                extra, prompt_override = await self.runner.emit_before_agent_start(
                    event, lambda get_prompt: SessionContext(self, get_prompt)
                )
                batch.extend(extra)
                if prompt_override is not None:
                    self._system_prompt_override = prompt_override
                    self.agent.state.system_prompt = prompt_override
        except BaseException:
            self._starting = False
            raise
        await self._run_agent_prompt(batch)

    async def _run_agent_prompt(self, messages: list[AgentMessage]) -> None:
        if self._run_active:
            for message in messages:
                self.agent.follow_up(message)
            return
        self._run_active = True
        self._starting = False
        self._run_done.clear()
        self._stop_after_turn = False
        self._retry_attempt = 0
        try:
            await self.agent.prompt(messages)
            while await self._post_run():
                await self.agent.continue_()
        finally:
            self._system_prompt_override = None
            self.agent.state.system_prompt = self._system_prompt
            self._run_active = False
            await self._flush_pending_bash()
            await self.runner.emit("agent_settled", AgentSettledEvent())
            await self._publish(AgentSettledEvent())
            if not self._run_active:  # a handler above may already have started the next run
                self._run_done.set()

    def _last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    async def _post_run(self) -> bool:
        """After each low-level run: retry, compact, or continue with queued messages?"""
        last = self._last_assistant()
        context_window = self.agent.state.model.context_window
        if (
            last is not None
            and last.stop_reason == "error"
            and not ai_errors.is_context_overflow(last, context_window)
        ):
            if (
                self.settings.retry_enabled
                and ai_errors.is_retryable(last, context_window)
                and self._retry_attempt < self.settings.retry_max_retries
            ):
                self._retry_attempt += 1
                delay = ai_errors.retry_delay_ms(
                    self._retry_attempt,
                    self.settings.retry_base_delay_ms,
                    self.settings.retry_max_delay_ms,
                    last.retry_after_ms,
                )
                await self._publish(
                    AutoRetryStartEvent(
                        self._retry_attempt, self.settings.retry_max_retries, delay, last.error_message or ""
                    )
                )
                # The failed reply stays in the session file but leaves the transcript the model sees.
                if self.agent.state.messages and self.agent.state.messages[-1] is last:
                    self.agent.state.messages.pop()
                self._retry_abort = AbortController()
                try:
                    await asyncio.wait_for(self._retry_abort.signal.wait(), delay / 1000)
                    aborted = True
                except TimeoutError:
                    aborted = False
                finally:
                    self._retry_abort = None
                if aborted:
                    await self._publish(AutoRetryEndEvent(False, self._retry_attempt, "Retry aborted"))
                    self._retry_attempt = 0
                    return False
                return True
            if self._retry_attempt > 0:
                await self._publish(AutoRetryEndEvent(False, self._retry_attempt, last.error_message))
                self._retry_attempt = 0
        if self.compactor is not None and last is not None and last.stop_reason != "aborted":
            decision = await self.compactor.after_run(self, last)
            if decision == "retry":
                return True
        if self._stop_after_turn:
            return False
        return self.agent.has_queued_messages()

    def abort(self) -> None:
        """Stop the current run (streaming reply ends ``aborted``, running tools get the signal)."""
        self.agent.abort()
        if self._retry_abort is not None:
            self._retry_abort.abort()
        if self.compactor is not None:
            self.compactor.abort()

    # ==============================================================================================
    # The agent loop's hooks

    def _loop_config(self) -> LoopConfig:
        model = self.agent.state.model
        level = self.agent.state.thinking_level
        return LoopConfig(
            model=model,
            stream_fn=self.options.stream_fn,
            reasoning=None if level == "off" else level,
            stream_options=self._stream_options,
            transform_context=self._transform_context,
            before_tool_call=self._before_tool_call,
            after_tool_call=self._after_tool_call,
            prepare_next_turn=self._prepare_next_turn,
            should_stop_after_turn=self._should_stop_after_turn,
            tool_context=self.context,
        )

    def _stream_options(self, model: Model) -> StreamOptions:
        options = StreamOptions(
            api_key=self.options.api_key_for(model),
            session_id=self.store.session_id,
            timeout_s=self.settings.http_idle_timeout_ms / 1000,
            max_retry_delay_ms=self.settings.retry_max_delay_ms,
        )
        return options

    async def _transform_context(
        self, messages: list[AgentMessage], signal: AbortSignal
    ) -> list[AgentMessage]:
        return await self.runner.emit_context(messages)

    async def context_for_next_request(self) -> list[AgentMessage]:
        """Exactly what the next request would carry, after every extension's ``context`` handler."""
        return await self.runner.emit_context(list(self.agent.state.messages))

    async def _before_tool_call(
        self, message: AssistantMessage, call: ToolCall, args: Any, ctx: AgentContext
    ) -> ToolCallCheck | None:
        if not self.runner.has_handlers("tool_call"):
            return None
        try:
            result = await self.runner.emit_tool_call(ToolCallEvent(call.id, call.name, args))
        except Exception as e:
            return ToolCallCheck(block=True, reason=str(e) or type(e).__name__)
        if result is not None and result.block:
            return ToolCallCheck(block=True, reason=result.reason)
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
        if not self.runner.has_handlers("tool_result"):
            return None
        event = ToolResultEvent(
            call.id, call.name, args, list(result.content), result.details, is_error, result.usage
        )
        patch = await self.runner.emit_tool_result(event)
        if patch is None:
            return None
        return ToolResultOverride(patch.content, patch.details, patch.is_error, patch.usage)

    async def _prepare_next_turn(self, turn: CompletedTurn) -> NextTurn | None:
        tools = self.active_tools()
        prompt = self._system_prompt_override or self._system_prompt
        if self.compactor is not None:
            await self.compactor.between_turns(self, turn)
        state = self.agent.state
        # A model or thinking level changed during the run (an extension, /model) applies from the next turn.
        nxt = NextTurn(model=state.model, thinking_level=state.thinking_level)
        if prompt != turn.context.system_prompt or [t.name for t in tools] != [
            t.name for t in turn.context.tools
        ]:
            nxt.context = AgentContext(prompt, turn.context.messages, tools)
        return nxt

    async def _should_stop_after_turn(self, turn: CompletedTurn) -> bool:
        return self._stop_after_turn

    async def _on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> None:
        if isinstance(event, MessageEndEvent):
            replacement = await self.runner.emit_message_end(event.message)
            if replacement is not None and replacement is not event.message:
                # Same role means same struct type: overwrite the fields in place so the loop's context,
                # the agent state and what gets persisted all hold the replacement (as Pi does).
                for name in event.message.__struct_fields__:
                    setattr(event.message, name, getattr(replacement, name))
        elif event.type in _EXTENSION_AGENT_EVENTS:
            await self.runner.emit(event.type, event)
        if isinstance(event, MessageStartEvent) and isinstance(event.message, UserMessage):
            self._dequeue_display(event.message)
        elif isinstance(event, AgentEndEvent):
            event.will_retry = self._will_retry()
        await self._publish(event)
        if isinstance(event, MessageEndEvent):
            self._persist(event.message)
            message = event.message
            if (
                isinstance(message, AssistantMessage)
                and message.stop_reason not in ("error", "aborted")
                and self._retry_attempt > 0
            ):
                await self._publish(AutoRetryEndEvent(True, self._retry_attempt))
                self._retry_attempt = 0

    def _will_retry(self) -> bool:
        """Whether the run that just ended will be retried (the ``willRetry`` of Pi's ``agent_end``)."""
        last = self._last_assistant()
        window = self.agent.state.model.context_window
        return (
            last is not None
            and last.stop_reason == "error"
            and self.settings.retry_enabled
            and not ai_errors.is_context_overflow(last, window)
            and ai_errors.is_retryable(last, window)
            and self._retry_attempt < self.settings.retry_max_retries
        )

    def _dequeue_display(self, message: UserMessage) -> None:
        text = text_of(message.content)
        for queue in (self._steering_texts, self._follow_up_texts):
            if text in queue:
                queue.remove(text)
                self._outbox.insert(
                    0, QueueUpdateEvent(list(self._steering_texts), list(self._follow_up_texts))
                )
                return

    def _persist(self, message: AgentMessage) -> None:
        if isinstance(message, CustomMessage):
            self.store.append_custom_message(
                message.custom_type, message.content, message.display, message.details
            )
        elif message.role in ("user", "assistant", "toolResult", "bashExecution"):
            self.store.append_message(message)

    # ==============================================================================================
    # Commands and session operations

    async def run_command(self, command: CommandSpec, args: str) -> None:
        try:
            await call_handler(command.handler, args, self.command_context())
        except Exception as e:
            self._on_extension_error(
                ExtensionError(command.source, f"command /{command.name}", str(e) or type(e).__name__)
            )

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if t.cancelled() or t.exception() is None:
                return
            log.warning("background work failed: %s", t.exception())
            if not self._closing:
                self._publish_soon(NoticeEvent(f"Error: {t.exception()}", "error"))

        task.add_done_callback(done)
        return task

    def _require_idle(self, doing: str) -> None:
        if self._run_active or self._starting:
            raise SessionError(f"Wait for the agent to finish (or press Esc) before {doing}.")

    async def replace_store(
        self, store: SessionStore, reason: Literal["new", "resume", "fork"], previous_file: str | None
    ) -> None:
        """Switch to another session (``/new``, ``/resume``, ``/fork``): shutdown → swap → start.

        Nothing of the old session carries over: queued messages, retry state and exit code are reset, and
        the model and thinking level are those the new session recorded (a new one records the current ones).
        """
        self._require_idle("switching sessions")
        await self.runner.emit("session_shutdown", SessionShutdownEvent(reason, store.session_file))
        self.store = store
        self.agent.steering.clear()
        self.agent.follow_ups.clear()
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self._next_turn = []
        self._retry_attempt = 0
        self._overflow_recovery_attempted = False
        self.exit_code = None
        restored = store.build_context()
        self.agent.state.messages = restored.messages
        if restored.model is not None and (found := self.options.find_model(*restored.model)) is not None:
            self.agent.state.model = found
            self._has_model = True
        if len(store) == 0 and self._has_model:
            store.append_model_change(self.agent.state.model.provider, self.agent.state.model.id)
            if self.agent.state.thinking_level != "off":
                store.append_thinking_level_change(self.agent.state.thinking_level)
        elif len(store):
            self.agent.state.thinking_level = next(
                (t for t in THINKING_LEVELS if t == restored.thinking_level), self.agent.state.thinking_level
            )
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_file))
        self._rebuild_system_prompt()

    async def new_session(self, parent_session: str | None = None) -> bool:
        self._require_idle("starting a new session")
        previous = self.store.session_file
        directory = self.store.path.parent if self.store.path else None
        store = (
            SessionStore.create(self.cwd, directory, parent_session=parent_session)
            if directory
            else SessionStore.in_memory(self.cwd)
        )
        await self.replace_store(store, "new", previous)
        return True

    async def switch_session(self, path: str) -> bool:
        self._require_idle("switching sessions")
        previous = self.store.session_file
        await self.replace_store(SessionStore.open(path), "resume", previous)
        return True

    async def fork(self, entry_id: str) -> bool:
        """A new session from the path up to ``entry_id``; from a user message: up to just before it."""
        self._require_idle("forking")
        previous = self.store.session_file
        entry = self.store.get_entry(entry_id)
        if entry is None:
            raise SessionError(f"No entry {entry_id} in this session.")
        before_user = isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage)
        if before_user and entry.parent_id is None:  # forking before the very first message: an empty session
            directory = self.store.path.parent if self.store.path else None
            forked = (
                SessionStore.create(self.cwd, directory, parent_session=previous)
                if directory
                else SessionStore.in_memory(self.cwd)
            )
        else:
            forked = self.store.fork(entry.parent_id if before_user else entry_id)
        await self.replace_store(forked, "fork", previous)
        return True

    async def navigate_tree(self, target_id: str, summarize: bool = False) -> bool:
        """Move the leaf: to a user message's parent (its text goes back to the editor), else to the entry."""
        self._require_idle("moving in the tree")
        entry = self.store.get_entry(target_id)
        if entry is None:
            raise SessionError(f"No entry {target_id} in this session.")
        old_leaf = self.store.leaf_id
        summary_entry = None
        if self.compactor is not None and summarize:
            # Attached at the new position (a child of it); raises when cancelled, before the leaf moves.
            summary_entry = await self.compactor.summarize_branch(self, old_leaf, target_id)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
            self.store.move_leaf(entry.parent_id)
            content = entry.message.content
            self.ui.set_editor_text(text_of(content))
        else:
            self.store.move_leaf(target_id)
        if summary_entry is not None:
            self.store.move_leaf(summary_entry.id)
        self.agent.state.messages = self.store.build_context().messages
        from caddie.extensions.api import SessionTreeEvent

        await self.runner.emit("session_tree", SessionTreeEvent(self.store.leaf_id, old_leaf, summary_entry))
        return True

    async def reload(self) -> None:
        """Re-import extensions (``/reload``): shutdown → load → start."""
        if self.options.reload_extensions is None:
            return
        self._require_idle("reloading extensions")
        await self.shutdown("reload")
        extensions, errors = await self.options.reload_extensions()
        self._extensions[:] = extensions
        self.load_errors = errors
        self.runner.extensions = self._extensions
        self._active_tools = [
            n
            for n in dict.fromkeys([*self._active_tools, *(t.name for t in self.runner.tools())])
            if n in self._tool_map()
        ]
        await self.start("reload")

    async def run_user_bash(self, command: str, exclude_from_context: bool) -> BashExecutionMessage:
        """``!cmd`` / ``!!cmd``: run a shell command and record it (``!!`` keeps it out of the context).

        While a run is active the record waits until the run settles, so it never lands between a tool call
        and its result. The command's process group is killed if the caller is cancelled or times out.
        """
        proc = await asyncio.create_subprocess_shell(
            command,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = await proc.communicate()
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)
            raise
        text = out.decode("utf-8", "replace").rstrip("\n")
        message = BashExecutionMessage(
            command, text, proc.returncode, exclude_from_context=exclude_from_context or None
        )
        if self._run_active or self._starting:
            self._pending_bash.append(message)
        else:
            await self._record_bash(message)
        return message

    async def _record_bash(self, message: BashExecutionMessage) -> None:
        self.agent.state.messages.append(message)
        self.store.append_message(message)
        await self._publish(MessageStartEvent(message))
        await self._publish(MessageEndEvent(message))

    async def _flush_pending_bash(self) -> None:
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            await self._record_bash(message)


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

_NO_MODEL = Model(id="none", name="no model", api="none", provider="none", context_window=0, max_tokens=0)


class Compactor(Protocol):
    """The hooks the compaction engine plugs into (``caddie.runtime.compaction``)."""

    async def before_prompt(self, session: AgentSession) -> None: ...

    async def after_run(self, session: AgentSession, last: AssistantMessage) -> Literal["retry", "none"]: ...

    async def between_turns(self, session: AgentSession, turn: CompletedTurn) -> None: ...

    async def summarize_branch(
        self, session: AgentSession, old_leaf: str | None, target_id: str
    ) -> BranchSummaryEntry | None: ...

    async def compact(
        self,
        session: AgentSession,
        reason: Literal["manual", "threshold", "overflow"],
        custom_instructions: str | None,
    ) -> CompactionEntry | None: ...

    def abort(self) -> None: ...


# ==================================================================================================
# Contexts


class SessionContext:
    """``ctx`` for handlers and tools: a live view of the session plus the actions Pi's context offers."""

    def __init__(self, session: AgentSession, system_prompt: Callable[[], str] | None = None) -> None:
        self._session = session
        self._system_prompt = system_prompt

    @property
    def cwd(self) -> str:
        return self._session.cwd

    @property
    def session(self) -> SessionStore:
        return self._session.store

    @property
    def mode(self) -> Mode:
        return self._session.mode

    @property
    def has_ui(self) -> bool:
        return self._session.mode in ("tui", "rpc")

    @property
    def ui(self) -> ExtensionUI:
        return self._session.ui

    @property
    def model(self) -> Model | None:
        return self._session.model

    @property
    def signal(self) -> AbortSignal | None:
        return self._session.agent.signal

    def is_idle(self) -> bool:
        return self._session.is_idle

    def abort(self) -> None:
        self._session.abort()

    def has_pending_messages(self) -> bool:
        return self._session.pending_message_count() > 0

    def get_context_usage(self) -> ContextUsage | None:
        return self._session.get_context_usage()

    def compact(
        self,
        custom_instructions: str | None = None,
        on_complete: Callable[[CompactionEntry], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        compactor = self._session.compactor
        if compactor is None:
            if on_error is not None:
                on_error(RuntimeError("compaction is not available in this session"))
            return
        self._session._spawn(
            _run_manual_compaction(self._session, custom_instructions, on_complete, on_error)
        )

    def get_system_prompt(self) -> str:
        return self._system_prompt() if self._system_prompt is not None else self._session.system_prompt

    def settings(self) -> dict[str, Any]:
        import copy

        return copy.deepcopy(self._session.settings.data)

    def shutdown(self) -> None:
        pass

    def stop_after_turn(self) -> None:
        """End the current run after this turn: no further model request is made."""
        self._session.stop_after_turn()


class CommandContextImpl(SessionContext):
    async def wait_for_idle(self) -> None:
        await self._session.wait_for_idle()

    async def new_session(self, parent_session: str | None = None) -> bool:
        return await self._session.new_session(parent_session)

    async def fork(self, entry_id: str) -> bool:
        return await self._session.fork(entry_id)

    async def navigate_tree(self, target_id: str, summarize: bool = False) -> bool:
        return await self._session.navigate_tree(target_id, summarize)

    async def switch_session(self, path: str) -> bool:
        return await self._session.switch_session(path)

    async def reload(self) -> None:
        await self._session.reload()


async def _run_manual_compaction(
    session: AgentSession,
    custom_instructions: str | None,
    on_complete: Callable[[CompactionEntry], None] | None,
    on_error: Callable[[Exception], None] | None,
) -> None:
    compactor = session.compactor
    assert compactor is not None
    try:
        entry = await compactor.compact(session, "manual", custom_instructions)
    except Exception as e:
        if on_error is not None:
            on_error(e)
        return
    if on_complete is not None and entry is not None:
        on_complete(entry)
