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
from typing import TYPE_CHECKING, Any, TypeVar

from caddie.ai import errors as ai_errors
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.messages import AgentMessage, AssistantMessage, CustomMessage
from caddie.runtime.session_events import (
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    ExtensionErrorEvent,
)

if TYPE_CHECKING:
    from caddie.runtime.session import AgentSession

T = TypeVar("T")


class RunState(enum.Enum):
    IDLE = "idle"
    STARTING = "starting"
    """A prompt is being prepared (``before_agent_start``); the loop has not started yet."""
    RUNNING = "running"
    STOPPING = "stopping"
    """Running, but an extension asked to end the run after this turn (``ctx.stop_after_turn()``)."""


class RunController:
    """Owns the run state, retries and the aborts of everything a run waits on."""

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self.state = RunState.IDLE
        self._done = asyncio.Event()
        self._done.set()
        self.retry_attempt = 0
        self._retry_abort: AbortController | None = None
        self._start_abort: AbortController | None = None
        self._abandoned: set[asyncio.Future[Any]] = set()
        self.context_abandon_grace_s = 1.0
        """How long an aborted run waits for a cancelled ``context`` handler before abandoning it."""

    # -- state ----------------------------------------------------------------------------------------
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
        self._start_abort = AbortController()
        return self._start_abort.signal

    def start_prepared(self) -> None:
        self._start_abort = None

    def start_failed(self) -> None:
        self._start_abort = None
        if self.state is RunState.STARTING:
            self.state = RunState.IDLE
            self._session.shutdown_if_requested()

    async def wait_until_run_ends(self) -> None:
        """Until the current run (if any) has settled; unlike ``wait_for_idle`` it ignores extension work."""
        while self.busy:
            await self._done.wait()
            if self.state is RunState.STARTING and self._done.is_set():
                await asyncio.sleep(0.005)

    async def wait_done(self) -> None:
        await self._done.wait()

    @property
    def done(self) -> bool:
        return self._done.is_set()

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
        paths = ", ".join(e.path for e in session.extensions if e.handlers.get(event)) or "extension"
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
        self._done.clear()
        self.retry_attempt = 0
        try:
            await session.agent.prompt(messages)
            while await self._post_run():
                await session.agent.continue_()
        finally:
            session.end_prompt_override()
            self.state = RunState.IDLE
            await session.user_bash.flush_pending()
            await session.runner.emit("agent_settled", AgentSettledEvent())
            await session.publish_event(AgentSettledEvent())
            if not self.running:  # a handler above may already have started the next run
                self._done.set()
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
