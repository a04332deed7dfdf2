"""``FakeClock``: time that moves only when a test moves it."""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    """A clock that moves only when told to: ``now_ms()``, ``monotonic()``, and ``sleep()`` that returns once
    ``await advance(seconds)`` passes its deadline. Hand it to an extension that takes its clock as a parameter
    (goal does: ``register(api, GoalOptions(timing=clock))``)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms
        self._seq = itertools.count()
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic(self) -> float:
        return self._now_ms / 1000

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self._now_ms + seconds * 1000, next(self._seq), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move the clock and let every timer that came due run."""
        self._now_ms += round(seconds * 1000)
        while self._waiters and self._waiters[0][0] <= self._now_ms:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)
