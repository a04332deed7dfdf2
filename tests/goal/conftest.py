"""Fixtures for the goal tests."""

from __future__ import annotations

import pytest

from caddie.extensions.bundled.goal import timing as goal_timing
from tests.goal.helpers import FakeTiming


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeTiming:
    """The goal extension's clock and sleep, moved only by ``await clock.advance(seconds)``."""
    fake = FakeTiming()
    monkeypatch.setattr(goal_timing, "OPTIONS", goal_timing.GoalOptions(timing=fake))
    return fake
