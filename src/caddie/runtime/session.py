"""AgentSession: one conversation, running — the hub the modes drive and observe.

It owns the conversation's state (store, agent transcript, model, tools, system prompt, extensions) and the
event stream the modes subscribe to; the work is done by parts, each in its own module:

- ``run``        — ``RunController`` (run_controller.py): the run state enum, one run, retries, aborts
- ``hooks``      — ``LoopHooks`` (loop_hooks.py): what the agent loop calls (extensions, persistence)
- ``prompter``   — ``Prompter`` (prompting.py): input, commands, steering/follow-up queues, prompt start
- ``bridge``     — ``ExtensionBridge`` (extension_bridge.py): what extensions see (``ExtensionHost``, ``ctx``)
- ``navigator``  — ``SessionNavigator`` (navigation.py): new/switch/fork/tree/reload
- ``user_bash``  — ``UserBash`` (user_bash.py): ``!cmd``
- ``preferences``— ``Preferences`` (preferences.py): model, thinking level, queue modes, toggles, stats
- ``compactor``  — the engine built from ``SessionOptions.compactor`` (compaction_port.py, auto_compaction.py)

For every agent event the session first awaits the extension handlers, then tells its subscribers (the
modes), then persists (``message_end`` → a session entry). ``caddie.runtime.factory.open_session`` builds
one for every mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from caddie.agent.agent import Agent, AgentState
from caddie.ai.messages import AgentMessage, AssistantMessage, BashExecutionMessage, ImageContent
from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.providers.thinking import clamp_thinking_level
from caddie.ai.stream import stream as default_stream
from caddie.config.settings import Settings
from caddie.errors import UsageError
from caddie.extensions.api import (
    CommandSpec,
    ContextUsage,
    ExtensionUI,
    Mode,
    NotifyLevel,
    SessionShutdownEvent,
    SessionStartEvent,
)
from caddie.extensions.runner import Extension, ExtensionFailure, ExtensionRunner, call_handler
from caddie.resources.discovery import ExtraPath, Resources
from caddie.runtime.compaction_port import Compactor, CompactorFactory, StreamFn
from caddie.runtime.event_hub import EventHub, Subscriber
from caddie.runtime.extension_bridge import CommandContextImpl, ExtensionBridge, ExtensionContextImpl
from caddie.runtime.loop_hooks import LoopHooks
from caddie.runtime.navigation import SessionNavigator
from caddie.runtime.preferences import Preferences
from caddie.runtime.prompting import Prompter
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_events import (
    ExtensionErrorEvent,
    NoticeEvent,
    SessionEvent,
    SessionInfoChangedEvent,
    ThinkingLevelChangedEvent,
)
from caddie.runtime.system_prompt import ContextFile, ToolLine, build_system_prompt
from caddie.runtime.ui import HeadlessUI
from caddie.runtime.user_bash import UserBash
from caddie.session.context import SessionContext as StoredContext
from caddie.session.store import SessionStore
from caddie.tools.base import ToolDefinition

log = logging.getLogger("caddie.session")

PromptSource = Literal["interactive", "rpc", "extension", "print"]


class SessionError(UsageError):
    """A user-facing problem with a request (no model, busy without a delivery mode, ...)."""


class Lifecycle(enum.Enum):
    CREATED = "created"
    """Built; extensions not bound yet (``start`` binds them and announces ``session_start``)."""
    ACTIVE = "active"
    CLOSED = "closed"
    """``shutdown("quit")`` ran: background failures are no longer reported."""


@dataclass
class SessionOptions:
    """Everything an AgentSession is built from (see ``caddie.runtime.factory.open_session``)."""

    store: SessionStore
    settings: Settings
    model: Model | None
    builtin_tools: dict[str, ToolDefinition]
    active_builtin: list[str]
    extensions: list[Extension] = field(default_factory=list)
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
    compactor: CompactorFactory | None = None
    """Builds the compaction engine for this session (None: no automatic or manual compaction)."""


class AgentSession:
    def __init__(self, options: SessionOptions) -> None:
        self.options = options
        self.store = options.store
        self.settings = options.settings
        self.mode: Mode = options.mode
        self.ui: ExtensionUI = options.ui or HeadlessUI(self._headless_notify)
        self.extensions = list(options.extensions)
        self.load_errors: list[str] = []
        self.exit_code: int | None = None
        self.lifecycle = Lifecycle.CREATED
        self.shutdown_requested = False
        """An extension called ``ctx.shutdown()``; the mode ends the process once the work is done."""
        self.on_shutdown: Callable[[], Any] | None = None
        """Set by the mode: ends the process gracefully. Called once, when a shutdown was requested and the
        session is idle (the run and its queued messages settled)."""
        self.available_models: Callable[[], list[Model]] = lambda: []
        """Every model with auth, for cycling without a scope and for RPC ``get_available_models``."""
        self._builtin_tools = dict(options.builtin_tools)
        self.events = EventHub(lambda: self.lifecycle is not Lifecycle.CLOSED)
        self._announced: weakref.WeakSet[SessionStore] = weakref.WeakSet()
        self._system_prompt = ""
        self._system_prompt_override: str | None = None

        self.run = RunController(self)
        self.hooks = LoopHooks(self)
        self.prompter = Prompter(self)
        self.bridge = ExtensionBridge(self)
        self.navigator = SessionNavigator(self)
        self.user_bash = UserBash(self)
        self.preferences = Preferences(self)
        self.runner = ExtensionRunner(self.extensions, self.context, self.on_extension_error)
        extension_tools = [t.name for t in self.runner.tools()]
        self._active_tools: list[str] = [
            n for n in dict.fromkeys([*options.active_builtin, *extension_tools]) if n in self._tool_map()
        ]
        restored = options.restored or self.store.build_context()
        model = options.model
        if model is None and restored.model is not None:
            model = options.find_model(*restored.model)
        self.resources: Resources = options.resources or Resources()
        self.agent = Agent(
            AgentState(
                system_prompt="",
                model=model or _NO_MODEL,
                thinking_level=options.thinking_level,
                messages=restored.messages,
            ),
            self.hooks.config,
            steering_mode="all" if self.settings.steering_mode == "all" else "one-at-a-time",
            follow_up_mode="all" if self.settings.follow_up_mode == "all" else "one-at-a-time",
        )
        self._has_model = model is not None
        self.agent.subscribe(self.hooks.on_agent_event)
        self.compactor: Compactor | None = options.compactor(self) if options.compactor else None
        self.rebuild_system_prompt()

    # ==============================================================================================
    # Lifecycle

    async def start(
        self,
        reason: Literal["startup", "reload", "new", "resume", "fork"] = "startup",
        previous_session_file: str | None = None,
    ) -> None:
        """Bind extensions to this session and announce it (``session_start``)."""
        self.bridge.bind_all()
        self.lifecycle = Lifecycle.ACTIVE
        await self.announce_store_warnings()
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_session_file))
        await self.bridge.discover_resources("reload" if reason == "reload" else "startup")
        self.rebuild_system_prompt()

    def take_store_warnings(self) -> list[str]:
        """What the store found wrong with its file (a torn line, duplicate ids, a failed repair), once per
        store: a mode that shows them itself (print and json: stderr) takes them before ``start``."""
        if self.store in self._announced:
            return []
        self._announced.add(self.store)
        return list(self.store.warnings)

    async def announce_store_warnings(self) -> None:
        """Every mode renders ``NoticeEvent`` (rpc: a ``notice`` event, the TUI: a line in the conversation)."""
        for warning in self.take_store_warnings():
            await self.publish_event(NoticeEvent(warning, "warning"))

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
        if self.run.running:
            self.abort()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_for_idle(), settle_timeout)
        await self.runner.emit("session_shutdown", SessionShutdownEvent(reason, target_session_file))
        await self.events.flush()
        if reason == "quit":
            self.lifecycle = Lifecycle.CLOSED
        self.events.cancel_background()
        self.bridge.unbind_all()
        if reason == "quit":
            self.store.close()  # the session file's write lock

    def request_shutdown(self) -> None:
        """``ctx.shutdown()``: the mode ends the process gracefully once the current work is done (the run
        and its queued messages settle; the mode then runs ``shutdown``: ``session_shutdown``, the file
        closed). Idempotent. Print and json modes check ``shutdown_requested`` between prompts instead."""
        if self.shutdown_requested or self.lifecycle is Lifecycle.CLOSED:
            return
        self.shutdown_requested = True
        if not self.run.busy:
            asyncio.get_running_loop().call_soon(self.shutdown_if_requested)

    def shutdown_if_requested(self) -> None:
        """Hand a requested shutdown to the mode once idle (called again when a run settles)."""
        if self.shutdown_requested and not self.run.busy and self.on_shutdown is not None:
            callback, self.on_shutdown = self.on_shutdown, None
            callback()

    @property
    def has_background_work(self) -> bool:
        """Work an extension started (a timer, a triggered turn) is still pending."""
        return bool(self.events.pending())

    # ==============================================================================================
    # Observation (``EventHub``)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        return self.events.subscribe(subscriber)

    @property
    def has_subscribers(self) -> bool:
        return self.events.has_subscribers

    async def publish_event(self, event: SessionEvent) -> None:
        await self.events.publish(event)

    async def flush_events(self) -> None:
        """Deliver the events queued from synchronous code now (before answering the command that caused
        them)."""
        await self.events.flush()

    def publish_soon(self, event: SessionEvent) -> None:
        self.events.publish_soon(event)

    def publish_first(self, event: SessionEvent) -> None:
        self.events.publish_first(event)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        return self.events.spawn(coro)

    def _headless_notify(self, message: str, level: NotifyLevel) -> None:
        self.publish_soon(NoticeEvent(message, level))

    def on_extension_error(self, err: ExtensionFailure) -> None:
        log.debug("extension %s failed in %s: %s", err.extension_path, err.event, err.stack or err.error)
        self.publish_soon(ExtensionErrorEvent(err.extension_path, err.event, err.error))

    # ==============================================================================================
    # State

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    def replace_messages(self, messages: list[AgentMessage]) -> None:
        self.agent.state.messages = messages

    @property
    def model(self) -> Model | None:
        return self.agent.state.model if self._has_model else None

    def use_model(self, model: Model) -> None:
        """Make ``model`` current (no entry, no event: see ``set_model``)."""
        self.agent.state.model = model
        self._has_model = True

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    @property
    def is_idle(self) -> bool:
        return not self.run.running

    @property
    def is_streaming(self) -> bool:
        return self.run.running

    @property
    def stop_requested(self) -> bool:
        """An extension asked the current run to end (``stop_after_turn``): make no further model call."""
        return self.run.stopping

    @property
    def is_compacting(self) -> bool:
        return self.compactor is not None and self.compactor.is_compacting

    @property
    def system_prompt(self) -> str:
        return self._system_prompt_override or self._system_prompt

    @property
    def base_system_prompt(self) -> str:
        """The system prompt without a ``before_agent_start`` override."""
        return self._system_prompt

    @property
    def cwd(self) -> str:
        return self.store.cwd

    @property
    def stream_fn(self) -> StreamFn:
        return self.options.stream_fn

    def api_key_for(self, model: Model) -> str | None:
        return self.options.api_key_for(model)

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    def pending_message_count(self) -> int:
        return self.prompter.pending_count()

    async def wait_for_idle(self) -> None:
        """Until no run is active and no extension-started work is pending."""
        while True:
            await self.run.wait_done()
            pending = self.events.pending()
            if not pending:
                if self.run.done:
                    return
                continue
            await asyncio.wait(pending)

    def get_context_usage(self) -> ContextUsage | None:
        return self.preferences.context_usage()

    def set_session_name(self, name: str) -> None:
        self.store.append_session_info(name)
        self.publish_soon(SessionInfoChangedEvent(self.store.session_name()))

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.store.append_label(entry_id, label)

    def set_thinking_level(self, level: str) -> None:
        lvl: ThinkingLevel = next((t for t in THINKING_LEVELS if t == level), "off")
        if self._has_model:
            lvl = clamp_thinking_level(self.agent.state.model, lvl)
        if lvl != self.agent.state.thinking_level:
            self.agent.state.thinking_level = lvl
            self.store.append_thinking_level_change(lvl)
            self.publish_soon(ThinkingLevelChangedEvent(lvl))

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

    def get_active_tools(self) -> list[str]:
        return list(self._active_tools)

    def set_active_tools(self, names: Sequence[str]) -> None:
        known = self._tool_map()
        self._active_tools = [n for n in dict.fromkeys(names) if n in known]
        self.rebuild_system_prompt()

    def activate_new_tools(self, add: bool) -> None:
        """Extension tools not active yet become active (``add``); names no longer known are dropped."""
        names = [*self._active_tools, *(t.name for t in self.runner.tools())] if add else self._active_tools
        known = self._tool_map()
        self._active_tools = [n for n in dict.fromkeys(names) if n in known]
        self.rebuild_system_prompt()

    def get_commands(self) -> list[CommandSpec]:
        return list(self.runner.commands().values())

    def rebuild_system_prompt(self) -> None:
        lines = [ToolLine(t.name, t.prompt_snippet, t.prompt_guidelines) for t in self.active_tools()]
        self._system_prompt = build_system_prompt(
            cwd=self.cwd,
            tools=lines,
            context_files=self.options.context_files,
            custom_prompt=self.options.custom_prompt,
            append=self.options.append_prompt,
            skills=self.resources.skills,
        )
        self.agent.state.system_prompt = self.system_prompt
        self.agent.state.tools = self.active_tools()

    def override_system_prompt(self, prompt: str) -> None:
        """For the run about to start (a ``before_agent_start`` result)."""
        self._system_prompt_override = prompt
        self.agent.state.system_prompt = prompt

    def end_prompt_override(self) -> None:
        self._system_prompt_override = None
        self.agent.state.system_prompt = self._system_prompt

    # ==============================================================================================
    # Contexts handed to extensions

    def context(self, system_prompt: Callable[[], str] | None = None) -> ExtensionContextImpl:
        return ExtensionContextImpl(self, system_prompt)

    def command_context(self) -> CommandContextImpl:
        return CommandContextImpl(self)

    async def context_for_next_request(self) -> list[AgentMessage]:
        """Exactly what the next request would carry, after every extension's ``context`` handler."""
        return await self.runner.emit_context(list(self.agent.state.messages))

    async def run_command(self, command: CommandSpec, args: str) -> None:
        try:
            await call_handler(command.handler, args, self.command_context())
        except Exception as e:
            self.on_extension_error(
                ExtensionFailure(command.source, f"command /{command.name}", str(e) or type(e).__name__)
            )

    # ==============================================================================================
    # What the modes call (each delegates to the part that does it)

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
        await self.prompter.prompt(text, images, source, streaming_behavior, preflight)

    def expand_text(self, text: str) -> str:
        return self.prompter.expand_text(text)

    def resource_commands(self) -> list[tuple[str, str, str]]:
        return self.prompter.resource_commands()

    def steer(self, text: str, images: list[ImageContent] | None = None) -> None:
        self.prompter.steer_or_follow(text, images, "steer")

    def follow_up(self, text: str, images: list[ImageContent] | None = None) -> None:
        self.prompter.steer_or_follow(text, images, "follow_up")

    def clear_queues(self) -> tuple[list[str], list[str]]:
        return self.prompter.clear_queues()

    def abort(self) -> None:
        """Stop the current run (streaming reply ends ``aborted``, running tools get the signal)."""
        self.run.abort()

    def abort_retry(self) -> None:
        self.run.abort_retry()

    async def wait_until_run_ends(self) -> None:
        await self.run.wait_until_run_ends()

    async def abort_and_wait(self) -> None:
        """Pi's ``abort()``: stop the run and return once it has ended."""
        self.abort()
        await self.wait_until_run_ends()

    async def run_user_bash(
        self,
        command: str,
        exclude_from_context: bool,
        *,
        request_id: str | None = None,
        announce: bool = True,
    ) -> BashExecutionMessage:
        return await self.user_bash.run(
            command, exclude_from_context, request_id=request_id, announce=announce
        )

    def abort_bash(self) -> None:
        self.user_bash.abort()

    async def new_session(self, parent_session: str | None = None, *, abort_running: bool = False) -> bool:
        return await self.navigator.new_session(parent_session, abort_running=abort_running)

    async def switch_session(self, path: str, *, abort_running: bool = False) -> bool:
        return await self.navigator.switch_session(path, abort_running=abort_running)

    async def fork(
        self, entry_id: str, *, position: Literal["before", "at"] | None = None, abort_running: bool = False
    ) -> bool:
        return await self.navigator.fork(entry_id, position=position, abort_running=abort_running)

    async def navigate_tree(self, target_id: str, summarize: bool = False) -> bool:
        return await self.navigator.navigate_tree(target_id, summarize)

    async def reload(self) -> None:
        await self.navigator.reload()

    async def set_model(self, model: Model) -> bool:
        return await self.preferences.set_model(model)

    async def cycle_model(
        self, direction: Literal["forward", "backward"] = "forward"
    ) -> tuple[Model, ThinkingLevel, bool] | None:
        return await self.preferences.cycle_model(direction)

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        return self.preferences.cycle_thinking_level()

    def available_thinking_levels(self) -> list[ThinkingLevel]:
        return self.preferences.available_thinking_levels()

    @property
    def scoped_models(self) -> list[tuple[Model, ThinkingLevel | None]]:
        return self.preferences.scoped_models

    @property
    def steering_mode(self) -> str:
        return self.agent.steering.mode

    @property
    def follow_up_mode(self) -> str:
        return self.agent.follow_ups.mode

    def set_steering_mode(self, mode: str) -> None:
        """``all`` or ``one-at-a-time`` (kept for this process; settings ``steeringMode`` sets the default)."""
        self.preferences.set_queue_mode("steering", mode)

    def set_follow_up_mode(self, mode: str) -> None:
        self.preferences.set_queue_mode("follow_up", mode)

    @property
    def auto_compaction_enabled(self) -> bool:
        return self.settings.compaction_enabled

    def set_auto_compaction_enabled(self, enabled: bool) -> None:
        self.preferences.save_setting({"compaction": {"enabled": enabled}})

    @property
    def auto_retry_enabled(self) -> bool:
        return self.settings.retry_enabled

    def set_auto_retry_enabled(self, enabled: bool) -> None:
        self.preferences.save_setting({"retry": {"enabled": enabled}})

    def session_stats(self) -> dict[str, Any]:
        return self.preferences.session_stats()

    def user_messages_for_forking(self) -> list[tuple[str, str]]:
        return self.navigator.user_messages_for_forking()


_NO_MODEL = Model(id="none", name="no model", api="faux", provider="none", context_window=0, max_tokens=0)
