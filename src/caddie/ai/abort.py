"""Cancellation for streams, tools and runs: a small port of the web's AbortController/AbortSignal."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from caddie.errors import Aborted

log = logging.getLogger("caddie.abort")


class AbortSignal:
    """Read side: check ``aborted``, await ``wait()``, or register a callback with ``add_listener``."""

    __slots__ = ("_event", "_listeners", "aborted", "reason")

    def __init__(self) -> None:
        self.aborted = False
        self.reason: str | None = None
        self._listeners: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    def add_listener(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn`` once on abort (at once if already aborted). Returns a function that removes it."""
        if self.aborted:
            fn()
            return lambda: None
        self._listeners.append(fn)

        def remove() -> None:
            if fn in self._listeners:
                self._listeners.remove(fn)

        return remove

    async def wait(self) -> None:
        if self.aborted:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()

    def throw_if_aborted(self) -> None:
        if self.aborted:
            raise Aborted()

    def _fire(self, reason: str | None) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.reason = reason
        listeners, self._listeners = self._listeners, []
        for fn in listeners:
            try:
                fn()
            except Exception:  # a listener's failure must not stop the others
                log.exception("abort listener failed")
        if self._event is not None:
            self._event.set()

    @staticmethod
    def never() -> AbortSignal:
        """A signal that is never aborted (for callers with nothing to cancel)."""
        return AbortSignal()


class AbortController:
    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: str | None = None) -> None:
        self.signal._fire(reason)
