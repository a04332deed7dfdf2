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
import codecs
import contextlib
import logging
import os
import re
import signal as signals
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

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
    ResourcesDiscoverEvent,
    ResourcesDiscoverResult,
    SessionBeforeForkEvent,
    SessionBeforeSwitchEvent,
    SessionShutdownEvent,
    SessionStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from caddie.extensions.runner import Extension, ExtensionError, ExtensionRunner, call_handler
from caddie.resources.discovery import ExtraPath, Resources
from caddie.resources.prompts import expand_prompt_template
from caddie.resources.skills import SkillExpansionError, expand_skill_command
from caddie.runtime.events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BashExecutionUpdateEvent,
    EntryAppendedEvent,
    ExtensionErrorEvent,
    ExtensionEvent,
    NoticeEvent,
    QueueUpdateEvent,
    SessionEvent,
    SessionInfoChangedEvent,
    ThinkingLevelChangedEvent,
)
from caddie.runtime.system_prompt import ContextFile, ToolLine, build_system_prompt
from caddie.runtime.ui import HeadlessUI
from caddie.session.context import SessionContext as StoredContext
from caddie.session.entries import BranchSummaryEntry, CompactionEntry, MessageEntry
from caddie.session.store import SessionFileError, SessionStore
from caddie.tools.base import ToolDefinition, ToolResult
from caddie.tools.bash import EnvPolicy

log = logging.getLogger("caddie.session")
T = TypeVar("T")

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
    resources: Resources | None = None
    """Skills and prompt templates found at start-up (``caddie.resources.discovery``)."""
    rediscover: Callable[[list[ExtraPath], list[ExtraPath]], Resources] | None = None
    """Discovery again, plus the skill and prompt paths extensions return from ``resources_discover``."""


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
        self.scoped_models: list[tuple[Model, ThinkingLevel | None]] = []
        """The models ``cycle_model`` walks (``--models`` / settings ``enabledModels``); empty: all available."""
        self.available_models: Callable[[], list[Model]] = lambda: []
        """Every model with auth, for cycling without a scope and for RPC ``get_available_models``."""
        self.context_abandon_grace_s = 1.0
        """How long an aborted run waits for a cancelled ``context`` handler before abandoning it."""
        self._bash_aborts: set[AbortController] = set()
        self._abandoned: set[asyncio.Future[Any]] = set()
        self._silent_bash: set[int] = set()
        self._start_abort: AbortController | None = None
        self._announced: weakref.WeakSet[SessionStore] = weakref.WeakSet()
        self._compacted_after: CompletedTurn | None = None

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
        self.resources: Resources = options.resources or Resources()
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
        await self._announce_store_warnings()
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_session_file))
        await self._discover_extension_resources("reload" if reason == "reload" else "startup")
        self._rebuild_system_prompt()

    async def _discover_extension_resources(self, reason: Literal["startup", "reload"]) -> None:
        """``resources_discover``: skill and prompt paths from extensions join the discovered ones.

        On ``/reload`` the folders are searched again too (skills added or edited since start-up)."""
        if self.options.rediscover is None:
            return
        if reason == "reload":
            self.resources = self.options.rediscover([], [])
        if not self.runner.has_handlers("resources_discover"):
            return
        skills: list[ExtraPath] = []
        prompts: list[ExtraPath] = []
        ctx = self.context()
        for ext in self._extensions:
            for handler in ext.handlers.get("resources_discover", ()):
                try:
                    value = await call_handler(handler, ResourcesDiscoverEvent(self.cwd, reason), ctx)
                except Exception as e:
                    self._on_extension_error(
                        ExtensionError(ext.path, "resources_discover", str(e) or type(e).__name__)
                    )
                    continue
                if value is None:
                    continue
                if not isinstance(value, ResourcesDiscoverResult):
                    self._on_extension_error(
                        ExtensionError(
                            ext.path,
                            "resources_discover",
                            f"resources_discover handler returned {type(value).__name__}; "
                            "expected ResourcesDiscoverResult or None",
                        )
                    )
                    continue
                skills += [ExtraPath(p, ext.name) for p in value.skill_paths or () if isinstance(p, str)]
                prompts += [ExtraPath(p, ext.name) for p in value.prompt_paths or () if isinstance(p, str)]
        if not skills and not prompts:
            return
        known = set(self.resources.warnings)
        self.resources = self.options.rediscover(skills, prompts)
        for warning in self.resources.warnings:
            if warning not in known:
                log.warning("%s", warning)
                self._publish_soon(NoticeEvent(warning, "warning"))

    def take_store_warnings(self) -> list[str]:
        """What the store found wrong with its file (a torn line, duplicate ids, a failed repair), once per
        store: a mode that shows them itself (print and json: stderr) takes them before ``start``."""
        if self.store in self._announced:
            return []
        self._announced.add(self.store)
        return list(self.store.warnings)

    async def _announce_store_warnings(self) -> None:
        """Every mode renders ``NoticeEvent`` (rpc: a ``notice`` event, the TUI: a line in the conversation)."""
        for warning in self.take_store_warnings():
            await self._publish(NoticeEvent(warning, "warning"))

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
        if self._closing:
            self.store.close()  # the session file's write lock

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

    async def flush_events(self) -> None:
        """Deliver the events queued from synchronous code now (before answering the command that caused
        them)."""
        await self._flush_outbox()

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
            skills=self.resources.skills,
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
        self._publish_soon(SessionInfoChangedEvent(self.store.session_name()))

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
        if self._has_model:
            lvl = clamp_thinking_level(self.agent.state.model, lvl)
        if lvl != self.agent.state.thinking_level:
            self.agent.state.thinking_level = lvl
            self.store.append_thinking_level_change(lvl)
            self._publish_soon(ThinkingLevelChangedEvent(lvl))

    def publish(self, name: str, data: Any) -> None:
        self._publish_soon(ExtensionEvent(name, data))

    def stop_after_turn(self) -> None:
        if self._run_active:
            self._stop_after_turn = True

    @property
    def stop_requested(self) -> bool:
        """An extension asked the current run to end (``stop_after_turn``): make no further model call."""
        return self._run_active and self._stop_after_turn

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
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        """Handle one line of user input; returns once the run it started has settled.

        ``preflight`` (Pi's ``preflightResult``) is told True once the input was accepted (a command ran, an
        extension handled it, it was queued, or the run is about to start) and False when it was refused
        (the error is raised as well). It may raise to veto a run that is about to start."""
        if text.startswith("/"):
            name, _, args = text[1:].partition(" ")
            command = self.runner.commands().get(name)
            if command is not None:
                await self.run_command(command, args.strip())
                if preflight is not None:
                    preflight(True)
                return
        try:
            if self.runner.has_handlers("input"):
                result = await self.runner.emit_input(text, images, source, streaming_behavior)
                if result.action == "handled":
                    if preflight is not None:
                        preflight(True)
                    return
                if result.action == "transform" and result.text is not None:
                    text, images = result.text, result.images
            text = self.expand_text(text)
            if self._run_active or (self._starting and preflight is not None):
                if streaming_behavior is None:
                    raise SessionError(
                        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') "
                        "to queue the message."
                        if preflight is not None
                        else "The agent is working; send the message as a steer or a follow-up."
                    )
                blocks: list[UserContent] = [TextContent(text), *(images or [])]
                self._queue_user(UserMessage(blocks), text, streaming_behavior)
                if preflight is not None:
                    preflight(True)
                return
        except BaseException:
            if preflight is not None:
                preflight(False)
            raise
        await self._start_prompt(text, images, UserMessage([TextContent(text), *(images or [])]), preflight)

    def expand_text(self, text: str) -> str:
        """``/skill:name args`` and ``/template args`` become the text the model gets (Pi's order)."""
        if not text.startswith("/"):
            return text
        try:
            if self.settings.get("enableSkillCommands", True) is not False:
                text = expand_skill_command(text, self.resources.skills)
        except SkillExpansionError as e:
            raise SessionError(str(e)) from None
        return expand_prompt_template(text, self.resources.prompts)

    def resource_commands(self) -> list[tuple[str, str, str]]:
        """``(name, description, source)`` of every prompt template and ``skill:`` command, for menus."""
        out = [
            (
                t.name,
                f"{t.argument_hint} — {t.description}" if t.argument_hint else t.description,
                f"prompt · {t.source}",
            )
            for t in self.resources.prompts
        ]
        if self.settings.get("enableSkillCommands", True) is not False:
            out += [(f"skill:{s.name}", s.description, f"skill · {s.source}") for s in self.resources.skills]
        return out

    def steer(self, text: str, images: list[ImageContent] | None = None) -> None:
        self._reject_command(text)
        text = self.expand_text(text)
        self._queue_user(UserMessage([TextContent(text), *(images or [])]), text, "steer")

    def follow_up(self, text: str, images: list[ImageContent] | None = None) -> None:
        self._reject_command(text)
        text = self.expand_text(text)
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

    async def _start_prompt(
        self,
        text: str,
        images: list[ImageContent] | None,
        user: UserMessage,
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        if not self._has_model:
            if preflight is not None:
                preflight(False)
            raise SessionError("No model is configured, so there is nothing to send the prompt to.")
        # From here on the session counts as busy: a second prompt arriving while extensions prepare this one
        # is queued (and shown as pending) instead of racing it.
        self._starting = True
        self._start_abort = AbortController()
        try:
            if self.compactor is not None:
                await self.compactor.before_prompt(self)
            self._overflow_recovery_attempted = False
            batch: list[AgentMessage] = [user, *self._next_turn]
            self._next_turn = []
            if self.runner.has_handlers("before_agent_start"):
                event = BeforeAgentStartEvent(text, images, self._system_prompt)
                started = await self._unless_aborted(
                    self.runner.emit_before_agent_start(
                        event, lambda get_prompt: SessionContext(self, get_prompt)
                    ),
                    self._start_abort.signal,
                    "before_agent_start",
                )
                if started is None:
                    raise SessionError("The prompt was aborted before its run started.")
                extra, prompt_override = started
                batch.extend(extra)
                if prompt_override is not None:
                    self._system_prompt_override = prompt_override
                    self.agent.state.system_prompt = prompt_override
        except BaseException:
            self._starting = False
            self._start_abort = None
            if preflight is not None:
                preflight(False)
            raise
        self._start_abort = None
        if preflight is not None:
            try:
                preflight(True)  # may veto the run (an RPC client that has gone away)
            except BaseException:
                self._starting = False
                self._system_prompt_override = None
                self.agent.state.system_prompt = self._system_prompt
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
            self._stop_after_turn = False
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
                and not self._stop_after_turn
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
            if decision == "retry" and not self._stop_after_turn:
                return True
        if self._stop_after_turn:
            self._drop_extension_messages()
            return False
        return self.agent.has_queued_messages()

    def _drop_extension_messages(self) -> None:
        """A stopped run takes the messages extensions queued for it along (a goal's continuation queued
        before a compaction used up its budget); the user's own queued messages stay queued."""
        for queue in (self.agent.steering, self.agent.follow_ups):
            queue.messages = [m for m in queue.messages if not isinstance(m, CustomMessage)]

    def abort(self) -> None:
        """Stop the current run (streaming reply ends ``aborted``, running tools get the signal)."""
        self.agent.abort()
        if self._retry_abort is not None:
            self._retry_abort.abort()
        if self._start_abort is not None:
            self._start_abort.abort()
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
        """The ``context`` handlers' output; an abort never waits on them (see ``_unless_aborted``): the run
        then ends as aborted without a request."""
        if not self.runner.has_handlers("context"):
            return messages
        result = await self._unless_aborted(self.runner.emit_context(messages), signal, "context")
        return messages if result is None else result

    async def _unless_aborted(self, work: Awaitable[T], signal: AbortSignal, event: str) -> T | None:
        """``work`` (extension handlers for ``event``), or None once ``signal`` fires first. The handlers
        are cancelled then; one that does not end within ``context_abandon_grace_s`` is abandoned. Either
        way it is reported as an ``extension_error``, so an abort always ends in bounded time."""
        task = asyncio.ensure_future(work)
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.wait({task}, timeout=self.context_abandon_grace_s)
        if not task.done():
            self._abandoned.add(task)  # keep a reference; it may still end some day
            task.add_done_callback(self._abandoned.discard)
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        paths = ", ".join(e.path for e in self._extensions if e.handlers.get(event)) or "extension"
        what = "cancelled" if task.done() else "abandoned"
        self._publish_soon(
            ExtensionErrorEvent(
                paths, event, f"{event} handler did not finish before the run was aborted; {what}"
            )
        )
        return None

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
        if self.compactor is not None and self._compacted_after is not turn:
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
        # A turn the loop will follow with another (tool results, queued messages) is compacted here, before
        # the loop decides to go on: a summary that ends the run (a goal budget) then stops it in time.
        if (
            self.compactor is not None
            and not self._stop_after_turn
            and (turn.tool_results or self.agent.has_queued_messages())
        ):
            self._compacted_after = turn
            await self.compactor.between_turns(self, turn)
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
            and not self._stop_after_turn
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
        if store is not self.store:
            self.store.close()  # the old file's write lock (shared, so reopening the same file keeps it)
        self.store = store
        self.agent.steering.clear()
        self.agent.follow_ups.clear()
        self._steering_texts.clear()
        self._follow_up_texts.clear()
        self._next_turn = []
        self._retry_attempt = 0
        self._overflow_recovery_attempted = False
        self.exit_code = None
        await self._recreate_extensions()
        restored = store.build_context()
        self.agent.state.messages = restored.messages
        if restored.model is not None and (found := self.options.find_model(*restored.model)) is not None:
            self.agent.state.model = found
            self._has_model = True
        if len(store) == 0:
            if self._has_model:
                store.append_model_change(self.agent.state.model.provider, self.agent.state.model.id)
            store.append_thinking_level_change(self.agent.state.thinking_level)
        else:
            self.agent.state.thinking_level = next(
                (t for t in THINKING_LEVELS if t == restored.thinking_level), self.agent.state.thinking_level
            )
        await self._announce_store_warnings()
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_file))
        self._rebuild_system_prompt()

    async def _recreate_extensions(self) -> None:
        """A session switch starts the extensions afresh (as Pi re-creates its runtime): the old instances
        are detached and the extensions are loaded again (when they were loaded from files)."""
        if self.options.reload_extensions is None:
            return
        for ext in self._extensions:
            if ext.api is not None:
                ext.api.bind(None)
        extensions, errors = await self.options.reload_extensions()
        self._extensions[:] = extensions
        self.load_errors = errors
        for error in errors:  # e.g. an extension file that is gone or broken now
            self._publish_soon(NoticeEvent(error, "warning"))
        self.runner.extensions = self._extensions
        self._active_tools = [
            n
            for n in dict.fromkeys([*self._active_tools, *(t.name for t in self.runner.tools())])
            if n in self._tool_map()
        ]
        for ext in self._extensions:
            if ext.api is not None:
                ext.api.bind(self)

    async def _before_switch(self, reason: Literal["new", "resume"], target: str | None) -> bool:
        """``session_before_switch``: True when an extension cancelled."""
        if not self.runner.has_handlers("session_before_switch"):
            return False
        return _cancelled(
            await self.runner.emit("session_before_switch", SessionBeforeSwitchEvent(reason, target))
        )

    async def _before_fork(self, entry_id: str, position: Literal["before", "at"]) -> bool:
        """``session_before_fork``: True when an extension cancelled."""
        if not self.runner.has_handlers("session_before_fork"):
            return False
        return _cancelled(
            await self.runner.emit("session_before_fork", SessionBeforeForkEvent(entry_id, position))
        )

    async def _settle_before_switch(self, abort_running: bool, doing: str) -> None:
        if abort_running and (self._run_active or self._starting):
            self.abort()
            await self.wait_until_run_ends()
        self._require_idle(doing)

    async def new_session(self, parent_session: str | None = None, *, abort_running: bool = False) -> bool:
        """A fresh session (``/new``); False when a ``session_before_switch`` handler cancelled it.
        ``abort_running`` (RPC, as Pi): a running turn is aborted first instead of refusing."""
        if not abort_running:
            self._require_idle("starting a new session")
        if await self._before_switch("new", None):
            return False
        await self._settle_before_switch(abort_running, "starting a new session")
        previous = self.store.session_file
        directory = self.store.path.parent if self.store.path else None
        store = (
            SessionStore.create(self.cwd, directory, parent_session=parent_session)
            if directory
            else SessionStore.in_memory(self.cwd)
        )
        await self.replace_store(store, "new", previous)
        return True

    async def switch_session(self, path: str, *, abort_running: bool = False) -> bool:
        """Open another session file; a path with no file yet starts a new session there (as Pi does).
        False when a ``session_before_switch`` handler cancelled."""
        if not abort_running:
            self._require_idle("switching sessions")
        target = Path(path).expanduser().resolve()
        if await self._before_switch("resume", str(target)):
            return False
        await self._settle_before_switch(abort_running, "switching sessions")
        previous = self.store.session_file
        if target.exists():
            try:
                store = SessionStore.open(target)
            except SessionFileError as e:  # e.g. another process writes it: one line for the user
                raise SessionError(str(e)) from None
        else:
            store = SessionStore.create(self.cwd, target.parent)
            store.path = target
        await self.replace_store(store, "resume", previous)
        return True

    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] | None = None,
        abort_running: bool = False,
    ) -> bool:
        """A new session from the path up to ``entry_id``; from a user message: up to just before it
        (``position="at"``, a clone: up to and including the entry). False when a ``session_before_fork``
        handler cancelled."""
        if not abort_running:
            self._require_idle("forking")
        entry = self.store.get_entry(entry_id)
        if entry is None:
            raise SessionError(f"No entry {entry_id} in this session.")
        before_user = (
            isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage) and position != "at"
        )
        if await self._before_fork(entry_id, "before" if before_user else "at"):
            return False
        if (
            (not before_user or entry.parent_id is not None)
            and self.store.path is not None
            and not self.store.file_exists
        ):
            raise SessionError(
                "This session has not been saved yet. Wait for the first assistant response before cloning "
                "or forking it."
            )
        await self._settle_before_switch(abort_running, "forking")
        previous = self.store.session_file
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

    async def run_user_bash(
        self,
        command: str,
        exclude_from_context: bool,
        *,
        request_id: str | None = None,
        announce: bool = True,
    ) -> BashExecutionMessage:
        """``!cmd`` / ``!!cmd`` / RPC ``bash``: run a shell command and record it (``!!`` keeps it out of the
        context). Output streams as ``bash_execution_update`` events; the result keeps the output as the
        command printed it (tail-truncated like the bash tool, the whole of it in a temp file then).

        While a run is active the record waits until the run settles, so it never lands between a tool call
        and its result. ``abort_bash`` (or cancelling the caller) kills the command's process group; the
        record then says ``cancelled``. ``announce=False`` (RPC, as Pi): the record is added without
        ``message_start``/``message_end`` events."""
        from caddie.tools.bash import command_env, get_shell_config
        from caddie.tools.output import temp_output_path
        from caddie.tools.truncate import DEFAULT_MAX_BYTES, truncate_tail

        controller = AbortController()
        self._bash_aborts.add(controller)
        prefix = self.settings.shell_command_prefix
        shell = get_shell_config(self.settings.shell_path)
        chunks: list[str] = []
        kept = 0
        total = 0
        spill_path: str | None = None
        spill: Any = None
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def take(data: bytes, final: bool = False) -> None:
            nonlocal kept, total, spill_path, spill
            total += len(data)
            text = _sanitize_output(decoder.decode(data, final))
            if not text:
                return
            if total > DEFAULT_MAX_BYTES and spill is None:
                spill_path = temp_output_path("caddie-bash")
                spill = open(  # noqa: SIM115 - closed below
                    os.open(spill_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8"
                )
                spill.write("".join(chunks))
            if spill is not None:
                spill.write(text)
            chunks.append(text)
            kept += len(text)
            while kept > DEFAULT_MAX_BYTES * 2 and len(chunks) > 1:
                kept -= len(chunks.pop(0))
            self._publish_soon(BashExecutionUpdateEvent(request_id, text))

        proc = await asyncio.create_subprocess_exec(
            shell.shell,
            *shell.args,
            f"{prefix}\n{command}" if prefix else command,
            cwd=self.cwd,
            env=command_env({}, EnvPolicy.of(*self.settings.shell_env)),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )

        def kill() -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signals.SIGKILL)

        remove = controller.signal.add_listener(kill)
        try:
            assert proc.stdout is not None
            while data := await proc.stdout.read(65536):
                take(data)
            take(b"", final=True)
            code = await proc.wait()
        except BaseException:
            kill()
            raise
        finally:
            remove()
            self._bash_aborts.discard(controller)
            if spill is not None:
                spill.close()
        cancelled = controller.signal.aborted
        full = "".join(chunks)
        truncation = truncate_tail(full)
        if truncation.truncated and spill_path is None:
            spill_path = temp_output_path("caddie-bash")
            fd = os.open(spill_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(fd, "w", encoding="utf-8") as f:
                f.write(full)
        message = BashExecutionMessage(
            command,
            truncation.content if truncation.truncated else full,
            None if cancelled or code < 0 else code,
            cancelled=cancelled,
            truncated=truncation.truncated,
            full_output_path=spill_path,
            exclude_from_context=exclude_from_context or None,
        )
        if not announce:
            self._silent_bash.add(id(message))
        if self._run_active or self._starting:
            self._pending_bash.append(message)
        else:
            await self._record_bash(message)
        return message

    def abort_bash(self) -> None:
        """Kill every running user shell command (``!cmd``, RPC ``bash``)."""
        for controller in list(self._bash_aborts):
            controller.abort()

    # ==============================================================================================
    # Pi's session operations beyond prompting (RPC commands, keybindings)

    @property
    def is_compacting(self) -> bool:
        return bool(self.compactor is not None and getattr(self.compactor, "is_compacting", False))

    @property
    def steering_mode(self) -> str:
        return self.agent.steering.mode

    @property
    def follow_up_mode(self) -> str:
        return self.agent.follow_ups.mode

    def set_steering_mode(self, mode: str) -> None:
        """``all`` or ``one-at-a-time`` (kept for this process; settings ``steeringMode`` sets the default)."""
        if mode not in ("all", "one-at-a-time"):
            raise SessionError(f"Unknown steering mode {mode!r}; use 'all' or 'one-at-a-time'.")
        self.agent.steering.mode = "all" if mode == "all" else "one-at-a-time"
        self._save_setting({"steeringMode": mode})

    def set_follow_up_mode(self, mode: str) -> None:
        if mode not in ("all", "one-at-a-time"):
            raise SessionError(f"Unknown follow-up mode {mode!r}; use 'all' or 'one-at-a-time'.")
        self.agent.follow_ups.mode = "all" if mode == "all" else "one-at-a-time"
        self._save_setting({"followUpMode": mode})

    @property
    def auto_compaction_enabled(self) -> bool:
        return self.settings.compaction_enabled

    def set_auto_compaction_enabled(self, enabled: bool) -> None:
        self._save_setting({"compaction": {"enabled": enabled}})

    @property
    def auto_retry_enabled(self) -> bool:
        return self.settings.retry_enabled

    def set_auto_retry_enabled(self, enabled: bool) -> None:
        self._save_setting({"retry": {"enabled": enabled}})

    def _save_setting(self, updates: dict[str, Any]) -> None:
        """A choice made in the session applies now and is saved as the global default, as Pi saves it."""
        try:
            self.settings.save_global(updates)
        except (OSError, ValueError) as e:
            log.warning("could not save %s to settings: %s", ", ".join(updates), e)
            self._publish_soon(NoticeEvent(f"Could not save the setting: {e}", "warning"))

    def abort_retry(self) -> None:
        """Cancel the wait before an automatic retry (the run then ends with the error)."""
        if self._retry_abort is not None:
            self._retry_abort.abort()

    async def wait_until_run_ends(self) -> None:
        """Until the current run (if any) has settled; unlike ``wait_for_idle`` it ignores extension work."""
        while self._run_active or self._starting:
            await self._run_done.wait()
            if self._starting and self._run_done.is_set():
                await asyncio.sleep(0.005)

    async def abort_and_wait(self) -> None:
        """Pi's ``abort()``: stop the run and return once it has ended."""
        self.abort()
        await self.wait_until_run_ends()

    def available_thinking_levels(self) -> list[ThinkingLevel]:
        """The levels the current model supports (``["off"]`` without reasoning); all without a model."""
        if not self._has_model:
            return list(THINKING_LEVELS)
        return supported_thinking_levels(self.agent.state.model)

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        """The next supported level (wrapping); None when the model does not reason."""
        if not self._has_model or not self.agent.state.model.reasoning:
            return None
        levels = self.available_thinking_levels()
        current = self.thinking_level
        index = levels.index(current) if current in levels else -1
        self.set_thinking_level(levels[(index + 1) % len(levels)])
        return self.thinking_level

    async def cycle_model(
        self, direction: Literal["forward", "backward"] = "forward"
    ) -> tuple[Model, ThinkingLevel, bool] | None:
        """Switch to the next (or previous) model: among the scoped models (``--models``, settings
        ``enabledModels``) if there are any, else among every available one. Returns (model, thinking level,
        scoped), or None when there is nothing to cycle to."""
        available = self.available_models()
        keys = {(m.provider, m.id) for m in available}
        scoped = [(m, t) for m, t in self.scoped_models if (m.provider, m.id) in keys]
        candidates: list[tuple[Model, ThinkingLevel | None]] = scoped or (
            [] if self.scoped_models else [(m, None) for m in available]
        )
        if len(candidates) <= 1:
            return None
        current = self.model
        index = next(
            (
                i
                for i, (m, _) in enumerate(candidates)
                if current is not None and (m.provider, m.id) == (current.provider, current.id)
            ),
            0,
        )
        step = 1 if direction == "forward" else -1
        model, level = candidates[(index + step) % len(candidates)]
        previous = self.model
        self.agent.state.model = model
        self._has_model = True
        self.store.append_model_change(model.provider, model.id)
        self.set_thinking_level(level if level is not None else self._thinking_for_switch())
        if previous is None or (previous.provider, previous.id) != (model.provider, model.id):
            await self.runner.emit("model_select", ModelSelectEvent(model, previous, "cycle"))
        return model, self.thinking_level, bool(scoped)

    def _thinking_for_switch(self) -> str:
        default = self.settings.default_thinking_level
        return default if default in THINKING_LEVELS else self.thinking_level

    def user_messages_for_forking(self) -> list[tuple[str, str]]:
        """(entry id, text) of every user message in the session, in order (Pi's fork selector)."""
        out: list[tuple[str, str]] = []
        for entry in self.store.entries():
            if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
                text = text_of(entry.message.content)
                if text:
                    out.append((entry.id, text))
        return out

    def session_stats(self) -> dict[str, Any]:
        """Pi's ``getSessionStats``: counts and token/cost totals over every entry of the session (history
        that was compacted away and abandoned branches included), plus the current context usage."""
        user = assistant = tool_results = total = tool_calls = 0
        tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost = 0.0

        def add(usage: Any) -> None:
            nonlocal cost
            if usage is None:
                return
            tokens["input"] += usage.input
            tokens["output"] += usage.output
            tokens["cacheRead"] += usage.cache_read
            tokens["cacheWrite"] += usage.cache_write
            cost += usage.cost.total

        for entry in self.store.entries():
            if isinstance(entry, BranchSummaryEntry | CompactionEntry):
                add(getattr(entry, "usage", None))
            if not isinstance(entry, MessageEntry):
                continue
            total += 1
            message = entry.message
            if isinstance(message, UserMessage):
                user += 1
            elif isinstance(message, AssistantMessage):
                assistant += 1
                tool_calls += sum(1 for block in message.content if isinstance(block, ToolCall))
                add(message.usage)
            elif message.role == "toolResult":
                tool_results += 1
                add(getattr(message, "usage", None))
        out: dict[str, Any] = {
            "sessionFile": self.store.session_file,
            "sessionId": self.store.session_id,
            "userMessages": user,
            "assistantMessages": assistant,
            "toolCalls": tool_calls,
            "toolResults": tool_results,
            "totalMessages": total,
            "tokens": {**tokens, "total": sum(tokens.values())},
            "cost": cost,
        }
        usage = self.get_context_usage()
        if usage is not None:
            out["contextUsage"] = {
                "tokens": usage.tokens,
                "contextWindow": usage.context_window,
                "percent": usage.percent,
            }
        return out

    async def _record_bash(self, message: BashExecutionMessage) -> None:
        self.agent.state.messages.append(message)
        self.store.append_message(message)
        if id(message) in self._silent_bash:
            self._silent_bash.discard(id(message))
            return
        await self._publish(MessageStartEvent(message))
        await self._publish(MessageEndEvent(message))

    async def _flush_pending_bash(self) -> None:
        pending, self._pending_bash = self._pending_bash, []
        for message in pending:
            await self._record_bash(message)


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """Pi's ``getSupportedThinkingLevels``: ``off`` only without reasoning; ``xhigh``/``max`` only when the
    model's ``thinking_level_map`` names them; a level mapped to None is unsupported."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    out: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        out.append(level)
    return out


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """The supported level nearest to ``level``: the next higher one, else the next lower one."""
    levels = supported_thinking_levels(model)
    if level in levels:
        return level
    index = THINKING_LEVELS.index(level)
    for candidate in (*THINKING_LEVELS[index:], *reversed(THINKING_LEVELS[:index])):
        if candidate in levels:
            return candidate
    return levels[0] if levels else "off"


def _cancelled(result: Any) -> bool:
    if isinstance(result, dict):
        return result.get("cancel") is True
    return getattr(result, "cancel", False) is True


def _sanitize_output(text: str) -> str:
    """What Pi shows of command output: no ANSI escapes, no carriage returns, no control bytes."""
    text = _ANSI.sub("", text).replace("\r", "")
    return "".join(c for c in text if c in "\n\t" or c >= " " or c == "\x1b")


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")

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

_NO_MODEL = Model(id="none", name="no model", api="faux", provider="none", context_window=0, max_tokens=0)


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
