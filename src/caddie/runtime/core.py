"""The shared state of one running session, and the parts that work on it.

``SessionCore`` is the composition root behind ``AgentSession``: it holds what every part reads — the
session file, the settings, the agent loop, the extensions, the tools and system prompt, the event stream —
and builds the parts, handing each this core as the host its own Protocol describes:

- ``run``         ``RunController`` (run_controller.py): run state, one run, retries, aborts
- ``hooks``       ``LoopHooks`` (loop_hooks.py): what the agent loop calls (extensions, persistence)
- ``prompter``    ``Prompter`` (prompting.py): input, commands, steering/follow-up queues, prompt start
- ``bridge``      ``ExtensionBridge`` (extension_bridge.py): what extensions see (``ExtensionHost``, ``ctx``)
- ``navigator``   ``SessionNavigator`` (navigation.py): new/switch/fork/tree/reload
- ``user_bash``   ``UserBash`` (user_bash.py): ``!cmd``
- ``preferences`` ``Preferences`` (preferences.py): model, thinking level, queue modes, toggles, stats
- ``tools``       ``ToolsAndPrompt`` (tools_prompt.py): the active tools and the system prompt
- ``checkpoints`` ``Checkpointing`` (checkpointing.py): file checkpoints before input, restores
- ``compactor``   the engine built from ``SessionOptions.compactor`` (compaction_port.py, auto_compaction.py)

No part imports this module: each depends on its Protocol, so the parts form no import circle and each can
be built over a small stand-in. Modes never see the core; they use ``AgentSession``'s API.

For every agent event the extensions' handlers run first, then the subscribers (the modes), then the
session file is written (``message_end`` → an entry).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from caddie.agent.agent import Agent, AgentState
from caddie.ai.messages import AgentMessage, AssistantMessage
from caddie.ai.model import THINKING_LEVELS, Model, ThinkingLevel
from caddie.ai.providers.thinking import clamp_thinking_level
from caddie.ai.stream import stream as default_stream
from caddie.config.settings import Settings
from caddie.extensions.api import (
    CommandSpec,
    ExtensionUI,
    Mode,
    ModelLookup,
    NotifyLevel,
    SessionShutdownEvent,
    SessionStartEvent,
    ThinkingLevelSelectEvent,
)
from caddie.extensions.api import SessionInfoChangedEvent as SessionNameChanged
from caddie.extensions.runner import Extension, ExtensionFailure, ExtensionRunner, call_handler
from caddie.resources.discovery import ExtraPath, Resources
from caddie.runtime.checkpointing import Checkpointing
from caddie.runtime.compaction_port import Compactor, CompactorFactory, StreamFn
from caddie.runtime.event_hub import EventHub
from caddie.runtime.extension_bridge import CommandContextImpl, ExtensionBridge, ExtensionContextImpl
from caddie.runtime.loop_hooks import LoopHooks
from caddie.runtime.navigation import SessionNavigator, ShutdownReason, StartReason
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
from caddie.runtime.system_prompt import ContextFile, PromptFiles
from caddie.runtime.tool_selection import ToolSelection
from caddie.runtime.tools_prompt import ToolsAndPrompt
from caddie.runtime.ui import HeadlessUI
from caddie.runtime.ui_prompts import WatchedUI
from caddie.runtime.user_bash import UserBash
from caddie.sandbox import Sandbox
from caddie.session.context import BranchContext
from caddie.session.store import SessionStore
from caddie.tools.base import ToolDefinition

log = logging.getLogger("caddie.session")


class Lifecycle(enum.Enum):
    CREATED = "created"
    """Built; extensions not bound yet (``start`` binds them and announces ``session_start``)."""
    ACTIVE = "active"
    CLOSED = "closed"
    """``shutdown("quit")`` ran: background failures are no longer reported."""


@dataclass
class SessionOptions:
    """Everything a session is built from (see ``caddie.runtime.factory.open_session``)."""

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
    read_prompt_files: Callable[[], PromptFiles] | None = None
    """The context files and SYSTEM.md / APPEND_SYSTEM.md read again (``/reload``), as at start."""
    flags: dict[str, str | bool] = field(default_factory=dict)
    """Extension command-line flags given by the user."""
    restored: BranchContext | None = None
    """The store's context if the caller built it already (saves a second walk of a large session)."""
    resources: Resources | None = None
    """Skills and prompt templates found at start-up (``caddie.resources.discovery``)."""
    rediscover: Callable[[list[ExtraPath], list[ExtraPath]], Resources] | None = None
    """Discovery again, plus the skill and prompt paths extensions return from ``resources_discover``."""
    compactor: CompactorFactory | None = None
    """Builds the compaction engine for this session (None: no automatic or manual compaction)."""
    sandbox: Sandbox = field(default_factory=Sandbox.off)
    """Where commands run (``caddie.sandbox``): the bash tool's, ``!cmd``, ``api.exec``; closed at quit."""
    tool_selection: ToolSelection = field(default_factory=ToolSelection)
    """``--tools`` / ``--exclude-tools`` for tools extensions register after start-up."""
    model_lookup: ModelLookup | None = None
    """``ctx.model_registry`` (runtime/model_lookup.py over the factory's ``ModelRegistry``)."""


class SessionCore:
    def __init__(self, options: SessionOptions) -> None:
        self.options = options
        self.store = options.store
        self.settings = options.settings
        self.mode: Mode = options.mode
        self.ui: ExtensionUI = options.ui or HeadlessUI(self._headless_notify)
        self._watched_ui = WatchedUI(self.ui, self.emit_soon)
        self.extensions = list(options.extensions)
        self.load_errors: list[str] = []
        self.exit_code: int | None = None
        self.sandbox = options.sandbox
        self.flags = dict(options.flags)
        self.find_model = options.find_model
        self.reload_extensions = options.reload_extensions
        self.read_prompt_files = options.read_prompt_files
        self.after_reload: Callable[[], Awaitable[None]] | None = None
        """A mode's own re-reading once a reload is done, whichever path reloaded (the TUI: keys, themes)."""
        self.rediscover = options.rediscover
        self.resources: Resources = options.resources or Resources()
        self.lifecycle = Lifecycle.CREATED
        self.shutdown_requested = False
        """An extension called ``ctx.shutdown()``; the mode ends the process once the work is done."""
        self._shutdown_ready = asyncio.Event()
        """Set once a requested shutdown may happen (the session is idle)."""
        self.model_lookup = options.model_lookup
        self.generation = 0
        """Up by one when the session is replaced, reloaded or ended (extension contexts made before are
        stale: ``StaleExtensionContext``)."""
        self.available_models: Callable[[], list[Model]] = lambda: []
        """Every model with auth, for cycling without a scope and for RPC ``get_available_models``."""
        self.events = EventHub(lambda: self.lifecycle is not Lifecycle.CLOSED)
        self._announced: weakref.WeakSet[SessionStore] = weakref.WeakSet()

        self.run = RunController(self)
        self.hooks = LoopHooks(self)
        self.prompter = Prompter(self)
        self.bridge = ExtensionBridge(self)
        self.navigator = SessionNavigator(self)
        self.user_bash = UserBash(self)
        self.preferences = Preferences(self)
        self.checkpoints = Checkpointing(self)
        self.runner = ExtensionRunner(self.extensions, self.context, self.on_extension_error)
        self.tools = ToolsAndPrompt(
            self,
            options.builtin_tools,
            context_files=options.context_files,
            custom_prompt=options.custom_prompt,
            append_prompt=options.append_prompt,
            selection=options.tool_selection,
        )
        restored = options.restored or self.store.build_context()
        model = options.model
        if model is None and restored.model is not None:
            model = options.find_model(*restored.model)
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
        self.tools.set_active([*options.active_builtin, *(t.name for t in self.runner.tools())])

    # ==============================================================================================
    # Lifecycle

    async def start(self, reason: StartReason = "startup", previous_session_file: str | None = None) -> None:
        self.bridge.bind_all()
        self.lifecycle = Lifecycle.ACTIVE
        await self.announce_store_warnings()
        await self.runner.emit("session_start", SessionStartEvent(reason, previous_session_file))
        await self.bridge.discover_resources("reload" if reason == "reload" else "startup")
        self.tools.rebuild()

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
        reason: ShutdownReason = "quit",
        target_session_file: str | None = None,
        *,
        settle_timeout: float = 10.0,
    ) -> None:
        if self.run.running:
            self.abort()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait_for_idle(), settle_timeout)
        await self.runner.emit("session_shutdown", SessionShutdownEvent(reason, target_session_file))
        self.generation += 1
        await self.events.flush()
        if reason == "quit":
            self.lifecycle = Lifecycle.CLOSED
        self.events.cancel_background()
        self.bridge.unbind_all()
        if reason == "quit":
            self.store.close()  # the session file's write lock
            self.sandbox.close()

    def request_shutdown(self) -> None:
        """``ctx.shutdown()``: the mode ends the process gracefully once the current work is done (the run
        and its queued messages settle). Idempotent."""
        if self.shutdown_requested or self.lifecycle is Lifecycle.CLOSED:
            return
        self.shutdown_requested = True
        if not self.run.busy:
            asyncio.get_running_loop().call_soon(self.shutdown_if_requested)

    def shutdown_if_requested(self) -> None:
        """Let the mode's ``wait_for_shutdown_request`` return once idle (called again when a run settles)."""
        if self.shutdown_requested and not self.run.busy:
            self._shutdown_ready.set()

    async def wait_for_shutdown_request(self) -> None:
        await self._shutdown_ready.wait()

    async def wait_for_idle(self, background: bool = True) -> None:
        """Until no run is active or being prepared and (``background``) no extension-started work is pending."""
        while True:
            await self.run.wait_until_run_ends()
            pending = self.events.pending() if background else []
            if not pending:
                if self.run.settled:
                    return
                continue
            await asyncio.wait(pending)

    async def wait_until_stopped(self) -> None:
        await self.run.wait_until_stopped()

    # ==============================================================================================
    # Events

    @property
    def has_subscribers(self) -> bool:
        return self.events.has_subscribers

    async def publish_event(self, event: SessionEvent) -> None:
        await self.events.publish(event)

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
        """Make ``model`` current (no entry, no event: see ``Preferences.set_model``)."""
        self.agent.state.model = model
        self._has_model = True

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.agent.state.thinking_level

    def set_thinking_level(self, level: str) -> None:
        lvl: ThinkingLevel = next((t for t in THINKING_LEVELS if t == level), "off")
        if self._has_model:
            lvl = clamp_thinking_level(self.agent.state.model, lvl)
        previous = self.agent.state.thinking_level
        if lvl != previous:
            self.agent.state.thinking_level = lvl
            self.store.append_thinking_level_change(lvl)
            self.publish_soon(ThinkingLevelChangedEvent(lvl))
            self.emit_soon("thinking_level_select", ThinkingLevelSelectEvent(lvl, previous))

    def set_session_name(self, name: str) -> None:
        self.store.append_session_info(name)
        self.publish_soon(SessionInfoChangedEvent(self.store.session_name()))
        self.emit_soon("session_info_changed", SessionNameChanged(self.store.session_name()))

    @property
    def watched_ui(self) -> ExtensionUI:
        if self._watched_ui.inner is not self.ui:
            self._watched_ui = WatchedUI(self.ui, self.emit_soon)
        return self._watched_ui  # forwards every ExtensionUI method

    def emit_soon(self, name: str, event: Any) -> None:
        """An extension event raised from synchronous code, delivered in the background (Pi's ``void emit``);
        nothing when no handler listens or no event loop runs."""
        if not self.runner.has_handlers(name):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.spawn(self.runner.emit(name, event))

    @property
    def is_busy(self) -> bool:
        """A run is being prepared or running."""
        return self.run.busy

    @property
    def stop_requested(self) -> bool:
        """An extension asked the current run to end (``stop_after_turn``): make no further model call."""
        return self.run.stopping

    @property
    def cwd(self) -> str:
        return self.store.cwd

    @property
    def stream_fn(self) -> StreamFn:
        return self.options.stream_fn

    @property
    def project_trusted(self) -> bool:
        return self.options.project_trusted

    def api_key_for(self, model: Model) -> str | None:
        return self.options.api_key_for(model)

    def last_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None

    async def navigate_to(self, entry_id: str) -> None:
        await self.navigator.navigate_tree(entry_id)

    def abort(self) -> None:
        """Stop the current run (streaming reply ends ``aborted``, running tools get the signal)."""
        self.run.abort()

    # ==============================================================================================
    # Contexts handed to extensions

    def context(self, system_prompt: Callable[[], str] | None = None) -> ExtensionContextImpl:
        return ExtensionContextImpl(self, system_prompt)

    def command_context(self) -> CommandContextImpl:
        return CommandContextImpl(self)

    async def run_command(self, command: CommandSpec, args: str) -> None:
        try:
            await call_handler(command.handler, args, self.command_context())
        except Exception as e:
            self.on_extension_error(
                ExtensionFailure(command.source, f"command /{command.name}", str(e) or type(e).__name__)
            )


_NO_MODEL = Model(id="none", name="no model", api="faux", provider="none", context_window=0, max_tokens=0)
