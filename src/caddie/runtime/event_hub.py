"""The session's event stream and background work.

Subscribers (the modes) get every ``SessionEvent`` in order. Events raised from synchronous code (an
extension's ``ctx.ui.notify`` without a UI, an appended entry) are queued in an outbox and delivered before
the next event, or right after by a background flush. Background work (an extension's triggered turn, the
flush itself) is tracked so ``wait_for_idle`` can wait for it and ``shutdown`` can cancel it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from caddie.extensions.runner import call_handler
from caddie.runtime.session_events import NoticeEvent, SessionEvent

log = logging.getLogger("caddie.session")

Subscriber = Callable[[SessionEvent], Any]


class EventHub:
    def __init__(self, report_failures: Callable[[], bool]) -> None:
        self._report_failures = report_failures
        self._subscribers: list[Subscriber] = []
        self._outbox: list[SessionEvent] = []
        self._outbox_flush: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    async def publish(self, event: SessionEvent) -> None:
        """Tell every subscriber, in order; events queued from synchronous code go out first."""
        await self.flush()
        await self._deliver(event)

    async def _deliver(self, event: SessionEvent) -> None:
        for subscriber in list(self._subscribers):
            try:
                await call_handler(subscriber, event)
            except Exception:
                log.exception("session subscriber failed on %s", getattr(event, "type", event))

    async def flush(self) -> None:
        while self._outbox:
            await self._deliver(self._outbox.pop(0))

    def publish_soon(self, event: SessionEvent) -> None:
        """Queue an event from synchronous code; it is delivered before the next one, or right after."""
        self._outbox.append(event)
        if self._outbox_flush is None or self._outbox_flush.done():
            self._outbox_flush = self.spawn(self.flush())

    def publish_first(self, event: SessionEvent) -> None:
        """Queue an event ahead of the ones already queued (delivered with the next ``publish``)."""
        self._outbox.insert(0, event)

    def spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        """Background work (awaited by ``wait_for_idle``, cancelled at shutdown); a failure is reported as
        an error notice while ``report_failures()`` holds."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self._background.discard(t)
            if t.cancelled() or t.exception() is None:
                return
            log.warning("background work failed: %s", t.exception())
            if self._report_failures():
                self.publish_soon(NoticeEvent(f"Error: {t.exception()}", "error"))

        task.add_done_callback(done)
        return task

    def pending(self) -> list[asyncio.Task[Any]]:
        return [t for t in self._background if not t.done()]

    def cancel_background(self) -> None:
        for task in list(self._background):
            task.cancel()
