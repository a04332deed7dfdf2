"""What extensions see of a running session: the ``ExtensionHost`` behind ``ExtensionAPI``'s action methods,
and the ``ctx`` objects handed to handlers, tools and commands.

``ExtensionBridge`` is what ``ExtensionAPI.bind`` gets; ``ExtensionContextImpl`` is ``ctx`` (implements the
API's ``ExtensionContext``), ``CommandContextImpl`` adds the session-changing operations commands may use.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

from caddie.agent.agent import Agent
from caddie.agent.events import MessageEndEvent, MessageStartEvent
from caddie.ai.abort import AbortSignal
from caddie.ai.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    UserContent,
    UserMessage,
    text_of,
)
from caddie.ai.model import Context, Model, StreamOptions, ThinkingLevel
from caddie.ai.stream import error_message_for
from caddie.ai.stream_events import final_message
from caddie.checkpoints.restore import RestoreReport
from caddie.config.paths import agent_dir
from caddie.config.settings import Settings, settings_files
from caddie.errors import UsageError
from caddie.extensions.api import (
    ConfigScope,
    ContextUsage,
    DeliverAs,
    ExtensionUI,
    Mode,
    ModelLookup,
    ReplacedSessionContext,
    ResourcesDiscoverEvent,
    ResourcesDiscoverResult,
    SlashCommandInfo,
    StaleExtensionContext,
    SummaryUsageEvent,
    SystemPromptOptions,
)
from caddie.extensions.runner import Extension, ExtensionFailure, ExtensionRunner, call_handler
from caddie.resources.discovery import ExtraPath, Resources
from caddie.runtime.checkpointing import Checkpointing
from caddie.runtime.compaction_port import Compactor, StreamFn
from caddie.runtime.preferences import Preferences
from caddie.runtime.prompting import Prompter
from caddie.runtime.run_controller import RunController
from caddie.runtime.session_events import (
    EntryAppendedEvent,
    ExtensionEvent,
    NoticeEvent,
    SessionEvent,
)
from caddie.runtime.tools_prompt import ToolsAndPrompt
from caddie.sandbox import Sandbox
from caddie.session.entries import CompactionEntry, new_session_id
from caddie.session.store import SessionStore
from caddie.tools.base import ToolDefinition

log = logging.getLogger("caddie.session")


class SessionSwitching(Protocol):
    """The session-changing operations command handlers may use (``SessionNavigator``)."""

    async def new_session(
        self, parent_session: str | None = None, *, setup: Callable[[SessionStore], Any] | None = None
    ) -> bool: ...

    async def fork(self, entry_id: str, *, position: Literal["before", "at"] = "before") -> bool: ...

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        *,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool: ...

    async def switch_session(self, path: str) -> bool: ...

    async def reload(self) -> None: ...


class ContextHost(Protocol):
    """What ``ctx`` reads and does."""

    @property
    def checkpoints(self) -> Checkpointing: ...

    @property
    def store(self) -> SessionStore: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def run(self) -> RunController: ...

    @property
    def compactor(self) -> Compactor | None: ...

    @property
    def navigator(self) -> SessionSwitching: ...

    @property
    def cwd(self) -> str: ...

    @property
    def mode(self) -> Mode: ...

    @property
    def ui(self) -> ExtensionUI: ...

    @property
    def watched_ui(self) -> ExtensionUI:
        """``ui`` as extensions get it: its dialogs announce ``ui_prompt_start`` / ``ui_prompt_end``."""
        ...

    @property
    def model(self) -> Model | None: ...

    @property
    def tools(self) -> ToolsAndPrompt: ...

    @property
    def prompter(self) -> Prompter: ...

    @property
    def preferences(self) -> Preferences: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def stream_fn(self) -> StreamFn: ...

    @property
    def project_trusted(self) -> bool: ...

    find_model: Callable[[str, str], Model | None]
    available_models: Callable[[], list[Model]]
    model_lookup: ModelLookup | None
    generation: int
    """Goes up when the session is replaced, reloaded or ended: contexts made before are stale."""

    @property
    def bridge(self) -> ExtensionBridge: ...

    def api_key_for(self, model: Model) -> str | None: ...

    @property
    def sandbox(self) -> Sandbox: ...

    def abort(self) -> None: ...

    def request_shutdown(self) -> None: ...

    async def wait_for_idle(self) -> None: ...

    def spawn(self, coro: Awaitable[Any]) -> Any: ...


class BridgeHost(ContextHost, Protocol):
    """What extension action methods (``api.send_message``, ``api.set_model``, …) need of the session."""

    extensions: list[Extension]
    resources: Resources
    exit_code: int | None
    flags: dict[str, str | bool]
    rediscover: Callable[[list[ExtraPath], list[ExtraPath]], Resources] | None

    @property
    def thinking_level(self) -> ThinkingLevel: ...

    @property
    def has_subscribers(self) -> bool: ...

    def context(self, system_prompt: Callable[[], str] | None = None) -> ExtensionContextImpl: ...

    def set_thinking_level(self, level: str) -> None: ...

    def set_session_name(self, name: str) -> None: ...

    def on_extension_error(self, err: ExtensionFailure) -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...


class ExtensionBridge:
    """``ExtensionHost``: the session as extension action methods reach it."""

    def __init__(self, session: BridgeHost) -> None:
        self._session = session
        self.bound = False
        """Extensions are bound (``start`` ran): tools registered from now on become active at once."""

    def bind_all(self) -> None:
        for ext in self._session.extensions:
            if ext.api is not None:
                ext.api.bind(self)
        self.bound = True

    def unbind_all(self) -> None:
        """Detach every extension's ``api``: the session ends, is replaced or reloads (Pi's invalidate)."""
        for ext in self._session.extensions:
            if ext.api is not None:
                ext.api.bind(None, stale=True)

    # -- ExtensionHost --------------------------------------------------------------------------------
    def append_entry(self, custom_type: str, data: Any) -> str:
        session = self._session
        entry_id = session.store.append_custom(custom_type, data)
        entry = session.store.get_entry(entry_id)
        if entry is not None and session.has_subscribers:
            session.publish_soon(EntryAppendedEvent(entry))
        return entry_id

    def send_message(self, message: CustomMessage, deliver_as: DeliverAs | None, trigger_turn: bool) -> None:
        session = self._session
        agent = session.agent
        if deliver_as == "next_turn":
            session.prompter.next_turn.append(message)
        elif session.run.running:
            (agent.follow_up if deliver_as == "follow_up" else agent.steer)(message)
        elif trigger_turn:
            session.spawn(session.run.run([message]))
        else:
            agent.state.messages.append(message)
            session.store.append_custom_message(
                message.custom_type, message.content, message.display, message.details
            )
            session.publish_soon(MessageStartEvent(message))
            session.publish_soon(MessageEndEvent(message))

    def send_user_message(
        self, content: str | list[UserContent], deliver_as: DeliverAs | None, expand: bool = False
    ) -> None:
        session = self._session
        blocks: list[UserContent] = [TextContent(content)] if isinstance(content, str) else list(content)
        if expand:  # as typed: commands run, skills and templates expand (Pi's expandPromptTemplates)
            images = [b for b in blocks if isinstance(b, ImageContent)] or None
            behavior = deliver_as if session.run.running and deliver_as in ("steer", "follow_up") else None
            session.spawn(session.prompter.prompt(text_of(blocks), images, "extension", behavior, None))
            return
        if session.run.running:
            if deliver_as not in ("steer", "follow_up"):
                raise UsageError(
                    "send_user_message while the agent is working needs deliver_as='steer' or 'follow_up'"
                )
            session.prompter.queue_user(UserMessage(blocks), text_of(blocks), deliver_as)
            return
        session.spawn(session.prompter.prompt_from_extension(content))

    def set_label(self, entry_id: str, label: str | None) -> None:
        self._session.store.append_label(entry_id, label)

    def set_session_name(self, name: str) -> None:
        self._session.set_session_name(name)

    def get_session_name(self) -> str | None:
        return self._session.store.session_name()

    def get_active_tools(self) -> list[str]:
        return self._session.tools.active_names()

    def get_all_tools(self) -> list[ToolDefinition]:
        return self._session.tools.all()

    def set_active_tools(self, names: Sequence[str]) -> None:
        self._session.tools.set_active(names)

    def get_commands(self) -> list[SlashCommandInfo]:
        return [
            SlashCommandInfo(c.name, c.description, c.kind, c.path, c.scope, c.source_info)
            for c in self._session.prompter.slash_commands(every_skill=True)
        ]

    def refresh_tools(self) -> None:
        """A tool was registered after start-up: make it active and rebuild the prompt."""
        self._session.tools.activate_new(self.bound)

    async def set_model(self, model: Model) -> bool:
        return await self._session.preferences.set_model(model)

    def get_thinking_level(self) -> str:
        return self._session.thinking_level

    def set_thinking_level(self, level: str) -> None:
        self._session.set_thinking_level(level)

    def publish(self, name: str, data: Any) -> None:
        self._session.publish_soon(ExtensionEvent(name, data))

    def get_flag(self, name: str) -> str | bool | None:
        return self._session.flags.get(name)

    def set_exit_code(self, code: int) -> None:
        self._session.exit_code = code

    @property
    def sandbox(self) -> Sandbox:
        return self._session.sandbox

    # -- resources_discover ---------------------------------------------------------------------------
    async def discover_resources(self, reason: Any) -> None:
        """``resources_discover``: skill and prompt paths from extensions join the discovered ones; theme
        paths are kept in ``resources.theme_paths`` for the interactive UI.

        On ``/reload`` the folders are searched again too (skills added or edited since start-up)."""
        session = self._session
        rediscover = session.rediscover
        if rediscover is None:
            return
        if reason == "reload":
            session.resources = rediscover([], [])
        if not session.runner.has_handlers("resources_discover"):
            return
        skills: list[ExtraPath] = []
        prompts: list[ExtraPath] = []
        themes: list[ExtraPath] = []
        ctx = session.context()
        for ext in session.extensions:
            for handler in ext.handlers.get("resources_discover", ()):
                try:
                    value = await call_handler(handler, ResourcesDiscoverEvent(session.cwd, reason), ctx)
                except Exception as e:
                    session.on_extension_error(
                        ExtensionFailure(ext.path, "resources_discover", str(e) or type(e).__name__)
                    )
                    continue
                if value is None:
                    continue
                if not isinstance(value, ResourcesDiscoverResult):
                    session.on_extension_error(
                        ExtensionFailure(
                            ext.path,
                            "resources_discover",
                            f"resources_discover handler returned {type(value).__name__}; "
                            "expected ResourcesDiscoverResult or None",
                        )
                    )
                    continue
                where = os.path.dirname(ext.path) if os.path.isabs(ext.path) else None  # Pi's baseDir
                skills += [
                    ExtraPath(p, ext.name, where) for p in value.skill_paths or () if isinstance(p, str)
                ]
                prompts += [
                    ExtraPath(p, ext.name, where) for p in value.prompt_paths or () if isinstance(p, str)
                ]
                themes += [ExtraPath(p, ext.name) for p in value.theme_paths or () if isinstance(p, str)]
        if not skills and not prompts:
            session.resources.theme_paths = themes
            return
        known = set(session.resources.warnings)
        session.resources = rediscover(skills, prompts)
        session.resources.theme_paths = themes
        for warning in session.resources.warnings:
            if warning not in known:
                log.debug("%s", warning)  # said by the notice
                session.publish_soon(NoticeEvent(warning, "warning"))


class ExtensionContextImpl:
    """``ctx`` for handlers and tools (Pi's ``ExtensionContext``): a live view of the session plus the
    actions Pi's context offers."""

    def __init__(self, session: ContextHost, system_prompt: Callable[[], str] | None = None) -> None:
        self._live_session = session
        self._generation = session.generation
        self._system_prompt = system_prompt

    @property
    def _session(self) -> ContextHost:
        """The session, while this context is current; a context kept past a session replacement (new,
        fork, switch), a reload or the end raises ``StaleExtensionContext``, as Pi's does."""
        if self._live_session.generation != self._generation:
            raise StaleExtensionContext()
        return self._live_session

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
        return self._session.watched_ui

    @property
    def model(self) -> Model | None:
        return self._session.model

    @property
    def signal(self) -> AbortSignal | None:
        return self._session.agent.signal

    @property
    def thinking_level(self) -> str:
        return self._session.agent.state.thinking_level

    @property
    def model_registry(self) -> ModelLookup:
        lookup = self._session.model_lookup
        if lookup is None:
            raise UsageError("This session has no model registry (it was not built by caddie's factory).")
        return lookup

    @property
    def scoped_models(self) -> list[Model]:
        return [model for model, _level in self._session.preferences.scoped_models]

    def is_project_trusted(self) -> bool:
        return self._session.project_trusted

    def is_idle(self) -> bool:
        return not self._session.run.running

    def abort(self) -> None:
        self._session.abort()

    def has_pending_messages(self) -> bool:
        return self._session.prompter.pending_count() > 0

    def get_context_usage(self) -> ContextUsage | None:
        return self._session.preferences.context_usage()

    def compact(
        self,
        custom_instructions: str | None = None,
        on_complete: Callable[[CompactionEntry], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        session = self._session
        if session.compactor is None:
            if on_error is not None:
                on_error(RuntimeError("compaction is not available in this session"))
            return
        session.spawn(_run_manual_compaction(session, custom_instructions, on_complete, on_error))

    def get_system_prompt(self) -> str:
        return self._system_prompt() if self._system_prompt is not None else self._session.tools.system_prompt

    def settings(self) -> dict[str, Any]:
        return copy.deepcopy(self._session.settings.data)

    def config_scope(self) -> ConfigScope:
        user, project = settings_files(self._session.cwd)
        return ConfigScope(self._session.cwd, self._session.project_trusted, user, project, str(agent_dir()))

    async def restore_files(self, entry_id: str) -> RestoreReport | None:
        return await self._session.checkpoints.restore_span(entry_id)

    async def complete(
        self,
        messages: Sequence[UserMessage | AssistantMessage],
        system_prompt: str = "",
        max_tokens: int | None = None,
        signal: AbortSignal | None = None,
    ) -> AssistantMessage:
        """One request with the session's model outside the conversation; its cost goes to ``summary_usage``."""
        session = self._session
        model = session.model
        if model is None:
            raise RuntimeError("no model is selected; pick one with /model or --model")
        options = StreamOptions(
            signal=signal,
            api_key=session.api_key_for(model),
            max_tokens=max_tokens,
            session_id=new_session_id(),
            cache_retention="none",
            timeout_s=session.settings.http_idle_timeout_ms / 1000,
        )
        reply: AssistantMessage | None = None
        stream = session.stream_fn(model, Context(system_prompt, list(messages)), options)
        try:
            async for event in stream:
                reply = final_message(event) or reply
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        reply = reply or error_message_for(model, "The provider stream ended without a result")
        usage = SummaryUsageEvent("extension", reply.usage, model.provider, model.id, reply.stop_reason)
        await session.runner.emit("summary_usage", usage)
        return reply

    def shutdown(self) -> None:
        """Ask the mode to end the process gracefully once the current work is done (Pi's
        ``ctx.shutdown()``; ``AgentSession.request_shutdown``)."""
        self._session.request_shutdown()

    def stop_after_turn(self) -> None:
        """End the current run after this turn: no further model request is made."""
        self._session.run.stop_after_turn()

    @property
    def sandbox(self) -> Sandbox:
        return self._session.sandbox


class CommandContextImpl(ExtensionContextImpl):
    def get_system_prompt_options(self) -> SystemPromptOptions:
        return self._session.tools.prompt_options()

    async def wait_for_idle(self) -> None:
        await self._session.wait_for_idle()

    async def new_session(
        self,
        parent_session: str | None = None,
        setup: Callable[[SessionStore], Any] | None = None,
        with_session: Callable[[ReplacedSessionContext], Any] | None = None,
    ) -> bool:
        done = await self._session.navigator.new_session(parent_session, setup=setup)
        return await self._then(done, with_session)

    async def fork(
        self,
        entry_id: str,
        position: Literal["before", "at"] = "before",
        with_session: Callable[[ReplacedSessionContext], Any] | None = None,
    ) -> bool:
        done = await self._session.navigator.fork(entry_id, position=position)
        return await self._then(done, with_session)

    async def _then(self, done: bool, with_session: Callable[[ReplacedSessionContext], Any] | None) -> bool:
        """Pi's ``withSession``: once the session was replaced, work on the new one with a fresh context
        (the extension instances that registered the command were replaced with it)."""
        if done and with_session is not None:
            await call_handler(with_session, ReplacedSessionContextImpl(self._live_session))
        return done

    async def navigate_tree(
        self,
        target_id: str,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> bool:
        return await self._session.navigator.navigate_tree(
            target_id,
            summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    async def switch_session(
        self, path: str, with_session: Callable[[ReplacedSessionContext], Any] | None = None
    ) -> bool:
        done = await self._session.navigator.switch_session(path)
        return await self._then(done, with_session)

    async def reload(self) -> None:
        await self._session.navigator.reload()


class ReplacedSessionContextImpl(CommandContextImpl):
    """The context ``with_session`` gets: the new session's, plus the two message actions (the old
    extension instance's ``api`` no longer acts once its session was replaced)."""

    def send_message(
        self,
        custom_type: str,
        content: str | list[UserContent],
        display: bool = True,
        details: Any = None,
        deliver_as: DeliverAs | None = None,
        trigger_turn: bool = False,
    ) -> None:
        message = CustomMessage(custom_type, content, display, details)
        self._session.bridge.send_message(message, deliver_as, trigger_turn)

    def send_user_message(
        self, content: str | list[UserContent], deliver_as: DeliverAs | None = None
    ) -> None:
        self._session.bridge.send_user_message(content, deliver_as)


async def _run_manual_compaction(
    session: ContextHost,
    custom_instructions: str | None,
    on_complete: Callable[[CompactionEntry], None] | None,
    on_error: Callable[[Exception], None] | None,
) -> None:
    compactor = session.compactor
    assert compactor is not None
    try:
        done = await compactor.compact(custom_instructions)
    except Exception as e:
        if on_error is not None:
            on_error(e)
        return
    if on_complete is not None and done is not None:
        on_complete(done.entry)
