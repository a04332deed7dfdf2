"""AgentSession: a running session — the one API every mode (and ``caddie.sdk``) drives and observes.

It implements ``caddie.runtime.session_api.Session`` over a ``SessionCore`` (core.py), which holds the state
and the parts that do the work. Each call here is the documented way to do one thing; a mode never reaches
past it (docs/architecture.md#the-session-api). ``caddie.runtime.factory.open_session`` builds one for every
mode; ``caddie.sdk.create_session`` for programs embedding caddie.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from caddie.ai.messages import AgentMessage, BashExecutionMessage, ImageContent
from caddie.ai.model import Model, ThinkingLevel
from caddie.config.settings import Settings
from caddie.errors import Aborted, UsageError
from caddie.extensions.api import ContextUsage
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.core import SessionCore, SessionOptions
from caddie.runtime.session_api import (
    AbortTarget,
    ModelCycle,
    PromptSource,
    QueueMode,
    SessionCheckpoints,
    SessionState,
    SessionStats,
    ShutdownReason,
    SlashCommand,
    StartReason,
    StreamingBehavior,
    Subscriber,
)
from caddie.session.compaction import CompactionResult
from caddie.session.store import SessionStore


class AgentSession:
    """See ``Session`` (session_api.py) for what each call does."""

    def __init__(self, options: SessionOptions) -> None:
        self.core = SessionCore(options)
        """The state and the parts behind the API: for tests and the factory, never for modes."""

    # -- lifecycle and events ---------------------------------------------------------------------------
    async def start(self, reason: StartReason = "startup", previous_session_file: str | None = None) -> None:
        await self.core.start(reason, previous_session_file)

    async def shutdown(
        self,
        reason: ShutdownReason = "quit",
        target_session_file: str | None = None,
        *,
        settle_timeout: float = 10.0,
    ) -> None:
        await self.core.shutdown(reason, target_session_file, settle_timeout=settle_timeout)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        return self.core.events.subscribe(subscriber)

    async def flush_events(self) -> None:
        await self.core.events.flush()

    async def wait_for_idle(self, *, background: bool = True) -> None:
        await self.core.wait_for_idle(background)

    async def wait_for_shutdown_request(self) -> None:
        await self.core.wait_for_shutdown_request()

    # -- input --------------------------------------------------------------------------------------------
    async def prompt(
        self,
        text: str,
        images: list[ImageContent] | None = None,
        *,
        source: PromptSource = "interactive",
        streaming_behavior: StreamingBehavior | None = None,
        preflight: Callable[[bool], None] | None = None,
    ) -> None:
        await self.core.prompter.prompt(text, images, source, streaming_behavior, preflight)

    def steer(self, text: str, images: list[ImageContent] | None = None) -> None:
        self.core.prompter.steer_or_follow(text, images, "steer")

    def follow_up(self, text: str, images: list[ImageContent] | None = None) -> None:
        self.core.prompter.steer_or_follow(text, images, "follow_up")

    def clear_queues(self) -> tuple[list[str], list[str]]:
        return self.core.prompter.clear_queues()

    def abort(self, target: AbortTarget = "run") -> None:
        if target == "run":
            self.core.abort()
        elif target == "retry":
            self.core.run.abort_retry()
        else:
            self.core.user_bash.abort()

    # -- model and thinking -------------------------------------------------------------------------------
    async def set_model(self, model: Model) -> None:
        await self.core.preferences.set_model(model)

    async def cycle_model(self, direction: Literal["forward", "backward"] = "forward") -> ModelCycle | None:
        return await self.core.preferences.cycle_model(direction)

    def set_thinking_level(self, level: str) -> None:
        self.core.set_thinking_level(level)

    def cycle_thinking_level(self) -> ThinkingLevel | None:
        return self.core.preferences.cycle_thinking_level()

    def available_models(self) -> list[Model]:
        return self.core.available_models()

    # -- work ---------------------------------------------------------------------------------------------
    async def compact(self, custom_instructions: str | None = None) -> CompactionResult:
        compactor = self.core.compactor
        if compactor is None:
            raise UsageError("Compaction is not available in this session.")
        done = await compactor.compact(custom_instructions)
        if done is None:
            raise Aborted("Compaction cancelled")
        return done.result

    async def run_bash(
        self,
        command: str,
        *,
        exclude_from_context: bool = False,
        request_id: str | None = None,
        announce: bool = True,
    ) -> BashExecutionMessage:
        return await self.core.user_bash.run(
            command, exclude_from_context, request_id=request_id, announce=announce
        )

    def configure(
        self,
        *,
        steering_mode: QueueMode | None = None,
        follow_up_mode: QueueMode | None = None,
        auto_compaction: bool | None = None,
        auto_retry: bool | None = None,
        scoped_models: Sequence[Model] | None = None,
        after_reload: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``after_reload`` runs at the end of every reload (``/reload``, an extension's ``ctx.reload()``):
        a mode's own files read again (the TUI: keybindings, shortcuts, themes)."""
        if after_reload is not None:
            self.core.after_reload = after_reload
        preferences = self.core.preferences
        if steering_mode is not None:
            preferences.set_queue_mode("steering", steering_mode)
        if follow_up_mode is not None:
            preferences.set_queue_mode("follow_up", follow_up_mode)
        if auto_compaction is not None:
            preferences.save_setting({"compaction": {"enabled": auto_compaction}})
        if auto_retry is not None:
            preferences.save_setting({"retry": {"enabled": auto_retry}})
        if scoped_models is not None:  # a pattern's thinking level stays with its model
            levels = {(m.provider, m.id): level for m, level in preferences.scoped_models}
            preferences.scoped_models = [(m, levels.get((m.provider, m.id))) for m in scoped_models]

    # -- moving between sessions --------------------------------------------------------------------------
    async def new_session(self, parent_session: str | None = None, *, abort_running: bool = False) -> bool:
        return await self.core.navigator.new_session(parent_session, abort_running=abort_running)

    async def switch_session(self, path: str, *, abort_running: bool = False) -> bool:
        return await self.core.navigator.switch_session(path, abort_running=abort_running)

    async def fork(
        self,
        entry_id: str,
        *,
        position: Literal["before", "at"] | None = None,
        abort_running: bool = False,
    ) -> bool:
        return await self.core.navigator.fork(entry_id, position=position, abort_running=abort_running)

    async def navigate_tree(
        self, target_id: str, *, summarize: bool = False, custom_instructions: str | None = None
    ) -> bool:
        return await self.core.navigator.navigate_tree(
            target_id, summarize, custom_instructions=custom_instructions
        )

    async def reload(self) -> None:
        await self.core.navigator.reload()

    def set_session_name(self, name: str) -> None:
        self.core.set_session_name(name)

    def set_label(self, entry_id: str, label: str | None) -> None:
        self.core.store.append_label(entry_id, label)

    checkpoints = property(lambda self: _checkpoints_of(self), doc="See ``Session.checkpoints``.")

    # -- reading ------------------------------------------------------------------------------------------
    @property
    def model(self) -> Model | None:
        return self.core.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self.core.thinking_level

    @property
    def is_streaming(self) -> bool:
        return self.core.run.running

    @property
    def messages(self) -> list[AgentMessage]:
        return self.core.messages

    @property
    def store(self) -> SessionStore:
        return self.core.store

    @property
    def cwd(self) -> str:
        return self.core.cwd

    @property
    def settings(self) -> Settings:
        return self.core.settings

    @property
    def extensions(self) -> ExtensionRunner:
        return self.core.runner

    def state(self) -> SessionState:
        core = self.core
        store = core.store
        compactor = core.compactor
        return SessionState(
            model=core.model,
            thinking_level=core.thinking_level,
            thinking_levels=core.preferences.available_thinking_levels(),
            is_streaming=core.run.running,
            is_compacting=compactor is not None and compactor.is_compacting,
            steering_mode=core.agent.steering.mode,
            follow_up_mode=core.agent.follow_ups.mode,
            auto_compaction=core.settings.compaction_enabled,
            auto_retry=core.settings.retry_enabled,
            session_file=store.session_file,
            session_id=store.session_id,
            session_name=store.session_name(),
            message_count=len(core.messages),
            pending_message_count=core.prompter.pending_count(),
            background_work=bool(core.events.pending()),
            shutdown_requested=core.shutdown_requested,
            system_prompt=core.tools.system_prompt,
            tools=core.tools.active(),
            project_trusted=core.options.project_trusted,
            load_errors=list(core.load_errors),
            exit_code=core.exit_code,
            sandbox=core.sandbox,
            context_files=[f.path for f in core.tools.context_files],
            scoped_models=[model for model, _ in core.preferences.scoped_models],
            theme_paths=[
                os.path.join(core.cwd, os.path.expanduser(extra.path)) for extra in core.resources.theme_paths
            ],
        )

    def stats(self) -> SessionStats:
        return self.core.preferences.session_stats()

    def context_usage(self) -> ContextUsage | None:
        return self.core.preferences.context_usage()

    def commands(self, *, every_skill: bool = False) -> list[SlashCommand]:
        return self.core.prompter.slash_commands(every_skill)

    async def context_for_next_request(self) -> list[AgentMessage]:
        core = self.core
        return await core.runner.emit_context(list(core.messages))


def _checkpoints_of(session: AgentSession) -> SessionCheckpoints:
    return session.core.checkpoints
