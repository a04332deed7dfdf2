"""``caddie.testing``, as an extension author uses it: the documented example test runs, and the harness does
what the host does (async handlers, failures, the tool list, time)."""

from __future__ import annotations

import asyncio
import importlib
import inspect

import pytest

from caddie.extensions.api import (
    ExtensionAPI,
    ExtensionContext,
    SessionStartEvent,
    ToolCallEvent,
    ToolCallResult,
)
from caddie.testing import FakeClock, Harness, extension_from, user


def test_the_documented_example_test_passes() -> None:
    example = importlib.import_module("examples.extensions.test_trim_results")
    tests = [f for name, f in inspect.getmembers(example, inspect.isfunction) if name.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test()


def guard(api: ExtensionAPI) -> dict[str, int]:
    """The guard of docs/extensions.md, with an async handler and some state."""
    seen = {"starts": 0}

    async def on_tool_call(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        await asyncio.sleep(0)
        if event.tool_name == "bash" and "rm -rf /" in event.input.get("command", ""):
            return ToolCallResult(block=True, reason="not on this machine")
        return None

    def on_start(event: SessionStartEvent, ctx: ExtensionContext) -> None:
        seen["starts"] += 1
        ctx.ui.set_status("guard", "on")
        api.append_entry("guard:state", {"on": True})

    api.on("tool_call", on_tool_call)
    api.on("session_start", on_start)
    return seen


def test_the_harness_runs_sync_and_async_handlers_and_records_the_host_side() -> None:
    h = Harness(guard, settings={})  # settings given: one session start
    assert h.state == {"starts": 1} and h.ui.statuses == {"guard": "on"}
    assert [e.data for e in h.custom_entries("guard:state")] == [{"on": True}] and h.host.writes == [
        "append_entry"
    ]
    [verdict] = h.emit("tool_call", ToolCallEvent("c1", "bash", {"command": "rm -rf /"}))
    assert verdict.block and verdict.reason == "not on this machine"
    assert h.emit("tool_call", ToolCallEvent("c2", "bash", {"command": "ls"})) == [None]


async def test_inside_an_async_test_emit_async_awaits_the_handlers() -> None:
    h = Harness(guard)
    [verdict] = await h.emit_async("tool_call", ToolCallEvent("c1", "bash", {"command": "rm -rf /"}))
    assert verdict.block


def test_a_failing_host_method_reaches_the_extension() -> None:
    h = Harness(guard)
    h.host.fail["append_entry"] = OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        h.session_start()
    h.add(user("hi"))
    assert len(h.session.branch()) == 1


def test_extension_from_builds_what_a_session_loads() -> None:
    extension = extension_from(guard, "guard")
    assert extension.name == "guard" and set(extension.handlers) == {"tool_call", "session_start"}


async def test_the_clock_moves_only_when_told() -> None:
    clock = FakeClock(start_ms=1_000)
    woke: list[int] = []

    async def sleeper() -> None:
        await clock.sleep(5)
        woke.append(clock.now_ms())

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0)  # the sleeper starts waiting at 1,000 ms
    await clock.advance(4.999)
    assert woke == []
    await clock.advance(0.001)
    await asyncio.wait_for(task, 5)
    assert woke == [6_000] and clock.monotonic() == 6.0
