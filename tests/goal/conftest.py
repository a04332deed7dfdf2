"""Fixtures for the goal tests."""

from __future__ import annotations

import pytest

from caddie.testing import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    """A clock moved only by ``await clock.advance(seconds)``: pass it as ``open_session(..., clock=clock)``."""
    return FakeClock()
