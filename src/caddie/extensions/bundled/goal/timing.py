"""Time, injectable: the wall clock (loop schedules survive restarts), a monotonic clock (active time),
sleeping (loop timers), and the knobs tests turn down (check timeout, self-paced delay).

``register(api, GoalOptions(...))`` takes them (the host calls ``register(api)``: the system clock and the
defaults); a test passes its own, e.g. ``GoalOptions(timing=caddie.testing.FakeClock())``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

from caddie.extensions.bundled.goal.check import CHECK_OUTPUT_BYTES, CHECK_TIMEOUT_S

SELF_PACED_DELAY_S = 0.25


class Timing(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch."""
        ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemTiming:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass
class GoalOptions:
    timing: Timing = field(default_factory=SystemTiming)
    check_timeout_s: float = CHECK_TIMEOUT_S
    check_output_bytes: int = CHECK_OUTPUT_BYTES
    self_paced_delay_s: float = SELF_PACED_DELAY_S
