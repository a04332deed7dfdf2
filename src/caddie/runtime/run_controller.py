"""The run controller: whether the session is working, and one run from its first request to ``agent_settled``.

A *run* is what one prompt (or an extension message that triggers a turn) sets off: ``agent_start`` …
``agent_end``, then the post-run decisions (retry with backoff, compaction, queued continuation) that may
start the loop again, and finally ``agent_settled``. ``RunState`` says where the session is:

``IDLE`` → ``STARTING`` (a prompt is being prepared: ``before_agent_start`` handlers) → ``RUNNING`` →
(``STOPPING``: an extension called ``stop_after_turn``; no further model request) → ``IDLE``.

While ``STARTING`` a second prompt is queued instead of racing the first; while ``RUNNING``/``STOPPING`` the
session is streaming (``is_streaming``) and user input is steering or follow-up.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from caddie.agent.agent import Agent
from caddie.ai import errors as ai_errors
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.messages import AgentMessage, AssistantMessage, CustomMessage
from caddie.config.settings import Settings
from caddie.extensions.runner import ExtensionRunner
from caddie.runtime.compaction_port import Compactor
from caddie.runtime.session_events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    ExtensionErrorEvent,
    SessionEvent,
)
from caddie.runtime.tools_prompt import ToolsAndPrompt

T = TypeVar("T")


class SettleWork(Protocol):
    async def flush_pending(self) -> None:
        """Record what finished while the run was active (user shell commands)."""
        ...


class RunHost(Protocol):
    """What a run needs of the session."""

    @property
    def agent(self) -> Agent: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def compactor(self) -> Compactor | None: ...

    @property
    def user_bash(self) -> SettleWork: ...

    def last_assistant(self) -> AssistantMessage | None: ...

    @property
    def tools(self) -> ToolsAndPrompt:
        """A ``before_agent_start`` system prompt lasts one run (``end_override``)."""
        ...

    def shutdown_if_requested(self) -> None: ...

    async def publish_event(self, event: SessionEvent) -> None: ...

    def publish_soon(self, event: SessionEvent) -> None: ...


class RunState(enum.Enum):
    IDLE = "idle"
    STARTING = "starting"
    """A prompt is being prepared (``before_agent_start``); the loop has not started yet."""
    RUNNING = "running"
    STOPPING = "stopping"
    """Running, but an extension asked to end the run after this turn (``ctx.stop_after_turn()``)."""


class RunController:
    """Owns the run state, retries and the aborts of everything a run waits on."""

    def __init__(self, session: RunHost) -> None:
        self._session = session
        self._state = RunState.IDLE
        self._settled = asyncio.Event()
        """Set while idle with the last run fully settled (``agent_settled`` delivered)."""
        self._settled.set()
        self._stopped = asyncio.Event()
        """Set while the loop is not running (idle, or a prompt is being prepared)."""
        self._stopped.set()
        self.retry_attempt = 0
        self._retry_abort: AbortController | None = None
        self._start_abort: AbortController | None = None
        self._abandoned: set[asyncio.Future[Any]] = set()
        self.context_abandon_grace_s = 1.0
        """How long an aborted run waits for a cancelled ``context`` handler before abandoning it."""

    # -- state ----------------------------------------------------------------------------------------
    @property
    def state(self) -> RunState:
        return self._state

    @state.setter
    def state(self, state: RunState) -> None:
        self._state = state
        if state in (RunState.RUNNING, RunState.STOPPING):
            self._stopped.clear()
        else:
            self._stopped.set()

    @property
    def running(self) -> bool:
        """The agent loop is running (streaming, tools, post-run decisions)."""
        return self.state in (RunState.RUNNING, RunState.STOPPING)

    @property
    def busy(self) -> bool:
        """Running, or a prompt is being prepared."""
        return self.state is not RunState.IDLE

    @property
    def stopping(self) -> bool:
        return self.state is RunState.STOPPING

    def stop_after_turn(self) -> None:
        if self.running:
            self.state = RunState.STOPPING

    def begin_start(self) -> AbortSignal:
        """A prompt is being prepared: from here on the session counts as busy."""
        if self.state is RunState.IDLE:
            self.state = RunState.STARTING
            self._settled.clear()
        self._start_abort = AbortController()
        return self._start_abort.signal

    def start_prepared(self) -> None:
        self._start_abort = None

    def start_failed(self) -> None:
        self._start_abort = None
        if self.state is RunState.STARTING:
            self.state = RunState.IDLE
            self._settled.set()
            self._session.shutdown_if_requested()

    async def wait_until_run_ends(self) -> None:
        """Until no run is being prepared or running, and the last one has settled (extension work started
        from it is not waited for: see ``AgentSession.wait_for_idle``)."""
        while not self._settled.is_set():
            await self._settled.wait()

    async def wait_until_stopped(self) -> None:
        """Until the loop is not running (an aborted run has wound down; a prompt may be in preparation)."""
        while self.running:
            await self._stopped.wait()

    @property
    def settled(self) -> bool:
        return self._settled.is_set()

    # -- aborting -------------------------------------------------------------------------------------
    def abort(self) -> None:
        """Stop the current run (streaming reply ends ``aborted``, running tools get the signal)."""
        session = self._session
        session.agent.abort()
        if self._retry_abort is not None:
            self._retry_abort.abort()
        if self._start_abort is not None:
            self._start_abort.abort()
        if session.compactor is not None:
            session.compactor.abort()

    def abort_retry(self) -> None:
        """Cancel the wait before an automatic retry (the run then ends with the error)."""
        if self._retry_abort is not None:
            self._retry_abort.abort()

    async def unless_aborted(self, work: Awaitable[T], signal: AbortSignal, event: str) -> T | None:
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
        session = self._session
        paths = ", ".join(e.path for e in session.runner.extensions if e.handlers.get(event)) or "extension"
        what = "cancelled" if task.done() else "abandoned"
        session.publish_soon(
            ExtensionErrorEvent(
                paths, event, f"{event} handler did not finish before the run was aborted; {what}"
            )
        )
        return None

    # -- one run --------------------------------------------------------------------------------------
    async def run(self, messages: list[AgentMessage]) -> None:
        """Run the loop with ``messages``; if a run is active they become follow-ups of it instead."""
        session = self._session
        if self.running:
            for message in messages:
                session.agent.follow_up(message)
            return
        self.state = RunState.RUNNING
        self._settled.clear()
        self.retry_attempt = 0
        try:
            await session.agent.prompt(messages)
            while await self._post_run():
                await session.agent.continue_()
        finally:
            session.tools.end_override()
            self.state = RunState.IDLE
            await session.user_bash.flush_pending()
            await session.runner.emit("agent_settled", AgentSettledEvent())
            await session.publish_event(AgentSettledEvent())
            if self.state is RunState.IDLE:  # a handler above may already have started the next run
                self._settled.set()
                session.shutdown_if_requested()

    async def _post_run(self) -> bool:
        """After each low-level run: retry, compact, or continue with queued messages?"""
        session = self._session
        settings = session.settings
        last = session.last_assistant()
        context_window = session.agent.state.model.context_window
        if (
            last is not None
            and last.stop_reason == "error"
            and not ai_errors.is_context_overflow(last, context_window)
        ):
            if (
                settings.retry_enabled
                and ai_errors.is_retryable(last, context_window)
                and self.retry_attempt < settings.retry_max_retries
                and not self.stopping
            ):
                self.retry_attempt += 1
                delay = ai_errors.retry_delay_ms(
                    self.retry_attempt,
                    settings.retry_base_delay_ms,
                    settings.retry_max_delay_ms,
                    last.retry_after_ms,
                )
                await session.publish_event(
                    AutoRetryStartEvent(
                        self.retry_attempt, settings.retry_max_retries, delay, last.error_message or ""
                    )
                )
                # The failed reply stays in the session file but leaves the transcript the model sees.
                messages = session.agent.state.messages
                if messages and messages[-1] is last:
                    messages.pop()
                self._retry_abort = AbortController()
                try:
                    await asyncio.wait_for(self._retry_abort.signal.wait(), delay / 1000)
                    aborted = True
                except TimeoutError:
                    aborted = False
                finally:
                    self._retry_abort = None
                if aborted:
                    await session.publish_event(AutoRetryEndEvent(False, self.retry_attempt, "Retry aborted"))
                    self.retry_attempt = 0
                    return False
                return True
            if self.retry_attempt > 0:
                await session.publish_event(AutoRetryEndEvent(False, self.retry_attempt, last.error_message))
                self.retry_attempt = 0
        if session.compactor is not None and last is not None and last.stop_reason != "aborted":
            decision = await session.compactor.after_run(last)
            if decision == "retry" and not self.stopping:
                return True
        if self.stopping:
            self._drop_extension_messages()
            return False
        return session.agent.has_queued_messages()

    def will_retry(self) -> bool:
        """Whether the run that just ended will be retried (the ``willRetry`` of Pi's ``agent_end``)."""
        session = self._session
        last = session.last_assistant()
        window = session.agent.state.model.context_window
        return (
            last is not None
            and last.stop_reason == "error"
            and session.settings.retry_enabled
            and not ai_errors.is_context_overflow(last, window)
            and ai_errors.is_retryable(last, window)
            and self.retry_attempt < session.settings.retry_max_retries
            and not self.stopping
        )

    async def reply_succeeded(self, message: AssistantMessage) -> None:
        """A reply went through: a retry series (if any) ended well."""
        if message.stop_reason not in ("error", "aborted") and self.retry_attempt > 0:
            await self._session.publish_event(AutoRetryEndEvent(True, self.retry_attempt))
            self.retry_attempt = 0

    def _drop_extension_messages(self) -> None:
        """A stopped run takes the messages extensions queued for it along (a goal's continuation queued
        before a compaction used up its budget); the user's own queued messages stay queued."""
        agent = self._session.agent
        for queue in (agent.steering, agent.follow_ups):
            queue.messages = [m for m in queue.messages if not isinstance(m, CustomMessage)]
