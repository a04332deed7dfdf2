"""``tools: "when-needed"``: mulligan's tools stay out of the requests until a nudge or a checkpoint brings them
in, then stay; ``"always"`` (the default) never touches the tool list."""

from __future__ import annotations

import logging

import pytest

from caddie.extensions.api import ContextUsage, CustomEntry, TextContent
from caddie.extensions.bundled.mulligan.markers import TOOLS
from tests.mulligan.fakehost import Harness, assistant, call, result, text_of, user

MULLIGAN_TOOLS = ["mulligan_rewind", "mulligan_shrink", "mulligan_audit", "mulligan_cancel"]
NEEDED = {"tools": "when-needed"}


def tools_entries(h: Harness) -> list[CustomEntry]:
    return h.custom_entries(TOOLS)


def test_always_is_the_default_and_never_touches_the_tool_list() -> None:
    h = Harness({})
    assert h.mulligan.config.tools == "always"
    assert h.host.active_tools == MULLIGAN_TOOLS and "set_active_tools" not in h.host.calls
    h.tool_result_event("bash", [TextContent("x" * 20_000)])
    h.turn_end(0)
    assert tools_entries(h) == [] and h.host.active_tools == MULLIGAN_TOOLS


def test_a_bad_value_falls_back_to_always_with_the_usual_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="caddie.ext.mulligan")
    h = Harness({"tools": "sometimes"})
    assert h.mulligan.config.tools == "always" and h.host.active_tools == MULLIGAN_TOOLS
    assert [r.getMessage() for r in caplog.records if r.name == "caddie.ext.mulligan"] == [
        '[mulligan] config: invalid "tools"="sometimes", using default'
    ]


def test_when_needed_holds_the_tools_back_until_a_bloat_reminder_then_keeps_them() -> None:
    h = Harness(NEEDED)
    h.host.active_tools = ["read", "bash", *MULLIGAN_TOOLS]
    h.host.tools.update({n: h.host.tools[MULLIGAN_TOOLS[0]] for n in ("read", "bash")})  # known tools
    h.session_start()
    assert h.host.active_tools == ["read", "bash"]

    h.add(user("go"), assistant(call("c1", "bash")), result("c1", "small", "bash"))
    h.tool_result_event("bash", [TextContent("small")])
    h.turn_end(0)
    assert h.host.active_tools == ["read", "bash"] and tools_entries(h) == []

    h.add(assistant(call("c2", "bash")))
    patch = h.tool_result_event("bash", [TextContent("x" * 20_000)])  # the reminder is appended
    assert patch is not None and "KB added to your context" in patch.content[-1].text
    h.add(result("c2", "x" * 20_000, "bash"))
    h.turn_end(1)
    assert h.host.active_tools == ["read", "bash", *MULLIGAN_TOOLS]  # from the next request on
    [entry] = tools_entries(h)
    assert entry.data["reason"] == "bloat-reminder" and entry.data["schema"] == "caddie-mulligan"

    h.turn_end(2)  # they stay, and the entry is written once
    assert len(tools_entries(h)) == 1 and h.host.active_tools[-4:] == MULLIGAN_TOOLS


def test_the_drift_line_and_the_high_water_line_bring_them_in_for_the_request_that_carries_them() -> None:
    h = Harness(NEEDED)
    h.add(user("go"))
    for turn in range(3):  # each turn adds ~5k tokens of agent output: the drift gate opens
        h.add(assistant(call(f"c{turn}", "bash")), result(f"c{turn}", "y" * 20_000, "bash"))
        h.rt.last_filtered = h.session.context_messages()
        h.turn_end(turn)
        if h.host.active_tools:
            break
    assert h.host.active_tools == MULLIGAN_TOOLS
    [entry] = tools_entries(h)
    assert entry.data["reason"] == "drift"
    assert "Previous turn added" in text_of(h.view()[-1])  # the line that request carries

    high = Harness({**NEEDED, "nudges": {"perTurnDrift": False}})
    high.host.usage = ContextUsage(tokens=75_000, context_window=100_000, percent=75.0)
    high.add(user("go"), assistant(call("c", "bash")), result("c", "ok", "bash"))
    high.turn_end(0)
    assert high.host.active_tools == MULLIGAN_TOOLS
    assert [e.data["reason"] for e in tools_entries(high)] == ["high-water"]


def test_a_checkpoint_brings_them_in_so_the_model_can_rewind_to_it() -> None:
    h = Harness(NEEDED)
    h.add(user("go"), assistant(call("c1", "bash")), result("c1", "ok", "bash"))
    assert h.host.active_tools == []
    h.command("mulligan_checkpoint", "before-refactor")
    assert h.host.active_tools == MULLIGAN_TOOLS
    assert [e.data["reason"] for e in tools_entries(h)] == ["checkpoint"]


def test_a_resumed_branch_that_brought_them_in_has_them_and_another_branch_does_not() -> None:
    h = Harness(NEEDED)
    first = h.add(user("go"))[0]
    h.command("mulligan_checkpoint", "cp")
    h.add(assistant(call("c1", "bash")))
    h.session_start("resume")  # a new process reading the session: the entry is on the branch
    assert h.host.active_tools == MULLIGAN_TOOLS

    h.session.move_leaf(first)  # /tree back to before the entry
    h.emit("session_tree", object())
    assert h.host.active_tools == []
    h.session.move_leaf(h.session.all[-1].id)
    h.emit("session_tree", object())
    assert h.host.active_tools == MULLIGAN_TOOLS


def test_a_tool_the_user_left_out_stays_out() -> None:
    h = Harness()
    h.host.active_tools = ["mulligan_rewind", "mulligan_shrink"]  # e.g. --exclude-tools mulligan_audit,…
    h.configure(NEEDED)
    assert h.host.active_tools == []
    h.add(user("go"))
    h.command("mulligan_checkpoint", "cp")
    assert h.host.active_tools == ["mulligan_rewind", "mulligan_shrink"]
