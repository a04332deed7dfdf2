"""The RFC 8628 device-authorization poll every device login shares.

The user types a code at a URL; meanwhile the client polls the token endpoint: every ``interval`` seconds
(5 when the server names none, never under 1), five seconds slower after each ``slow_down`` (or the new
interval the server sends with it), until the grant completes, fails, or the code expires.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from caddie.ai.oauth.types import LoginFailed

T = TypeVar("T")

DEFAULT_INTERVAL_S = 5.0
"""RFC 8628 section 3.2: the interval when the server names none."""
SLOW_DOWN_STEP_S = 5.0
"""RFC 8628 section 3.5: ``slow_down`` adds five seconds."""
MIN_INTERVAL_S = 1.0
SLEEP: Callable[[float], Awaitable[None]] = asyncio.sleep
"""How the poll waits (a test hook)."""
TIMEOUT_TEXT = "The device code expired before the login was approved; run /login again."
SLOW_DOWN_TIMEOUT_TEXT = (
    "The device code expired after the server asked to poll more slowly; this is often a clock that "
    "drifted (WSL or a virtual machine): sync the clock and run /login again."
)


@dataclass(frozen=True, slots=True)
class PollResult(Generic[T]):
    """One poll's answer: ``pending``, ``slow_down`` (maybe with a new ``interval_s``), ``complete`` with
    ``value``, or ``failed`` with ``message``."""

    status: Literal["pending", "slow_down", "complete", "failed"]
    value: T | None = None
    message: str = ""
    interval_s: float | None = None


async def poll_device_flow(
    poll: Callable[[], Awaitable[PollResult[T]]],
    *,
    interval_s: float | None,
    expires_in_s: float | None,
    wait_first: bool = False,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Poll until the grant completes (its value) or fails (``LoginFailed``); cancel the task to stop.
    ``sleep`` defaults to ``SLEEP`` (tests replace it to record the waits instead of waiting)."""
    sleep = sleep or SLEEP
    deadline = clock() + expires_in_s if expires_in_s is not None else math.inf
    interval = max(MIN_INTERVAL_S, interval_s if interval_s is not None else DEFAULT_INTERVAL_S)
    slowed = False
    if wait_first:
        await sleep(min(interval, max(0.0, deadline - clock())))
    while clock() < deadline:
        result = await poll()
        if result.status == "complete":
            assert result.value is not None
            return result.value
        if result.status == "failed":
            raise LoginFailed(result.message)
        if result.status == "slow_down":
            slowed = True
            given = result.interval_s
            interval = (
                max(MIN_INTERVAL_S, given)
                if given is not None and math.isfinite(given) and given > 0
                else interval + SLOW_DOWN_STEP_S
            )
        left = deadline - clock()
        if left <= 0:
            break
        await sleep(min(interval, left))
    raise LoginFailed(SLOW_DOWN_TIMEOUT_TEXT if slowed else TIMEOUT_TEXT)
