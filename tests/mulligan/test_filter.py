"""The ``context`` handler: markers applied on every inference, nudges, cache, retirement, fail-open."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caddie.extensions.api import ContextUsage, CustomMessage
from caddie.extensions.bundled.mulligan.notes import render_high_water_nudge
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, result, result_text, text_of, user


def drift_turn(h: Harness, delta: int, turn: int, ts: int) -> None:
    h.session.custom_entry(
        "mulligan:turn-metric",
        {
            "kind": "turn-metric",
            "deltaTokens": delta,
            "bloatHit": False,
            "bloatHits": [],
            "turnIndex": turn,
            "seq": 100 + turn,
            "ts": ts,
        },
    )


def nudges(messages: list[Any], kind: str = "mulligan:nudge") -> list[CustomMessage]:
    return [m for m in messages if isinstance(m, CustomMessage) and m.custom_type == kind]


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("c1", "read", path="a.ts")), result("c1", "A" * 100, "read"))
    return h


class TestFiltering:
    def test_a_rewind_applies_from_the_next_inference(self, h: Harness) -> None:
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        view = h.view()
        assert [m.role for m in view] == ["user", "assistant", "toolResult", "custom"]
        assert text_of(view[-1]).startswith("## 🔄 Mulligan rewind")

    def test_the_view_is_cached_for_the_audit(self, h: Harness) -> None:
        out = h.fire()
        assert out is not None and h.rt.last_filtered is out.messages and h.rt.last_filter_ts is not None

    def test_the_session_is_read_fresh_on_every_fire(self, h: Harness) -> None:
        assert len(h.view()) == 3
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "c1"}, "replacement": "short"})
        assert text_of(h.view()[2]) == "<context-shrunk>\nshort\n</context-shrunk>"

    def test_switched_off_it_passes_through_and_caches_nothing(self) -> None:
        h = Harness({"enabled": False})
        h.add(user("u"))
        assert h.fire() is None and h.rt.last_filtered is None

    def test_the_banner_never_enters_the_messages(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        view = h.view()
        assert len(view) == 3 and not any("checkpoint active" in text_of(m) for m in view)
        assert h.host.ui.widgets["mulligan:active-checkpoint"]


class TestFailOpen:
    @pytest.mark.parametrize("failing", ["branch", "session_id"])
    def test_a_broken_session_passes_the_messages_through(self, h: Harness, failing: str) -> None:
        messages = h.session.context_messages()
        h.host.fail[failing] = RuntimeError("boom")
        assert h.fire(messages) is None

    def test_unreadable_entries_mean_no_markers(self, h: Harness) -> None:
        h.host.fail["entries"] = RuntimeError("boom")
        out = h.fire()
        assert out is not None and out.messages is not None and len(out.messages) == 3

    def test_an_exception_in_the_pipeline_is_logged_and_passed_through(
        self, h: Harness, tmp_path: Path
    ) -> None:
        log = tmp_path / "m.jsonl"
        h.configure({"log": {"file": str(log)}})
        messages = h.session.context_messages()
        h.host.fail["branch"] = RuntimeError("kaput")
        assert h.fire(messages) is None
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert lines[-1]["event"] == "filter.fire" and lines[-1]["level"] == "error"
        assert lines[-1]["data"] == {"error": "kaput"}


class TestDriftNudge:
    def test_sustained_growth_injects_one_nudge(self, h: Harness) -> None:
        for turn in range(3):
            drift_turn(h, 7000, turn, 1000 * (turn + 1))
        view = h.view()
        assert len(nudges(view)) == 1 and view[-1] is nudges(view)[0]
        assert nudges(view)[0].details == {"ephemeral": True, "turnIndex": 2}

    def test_a_single_heavy_turn_among_small_ones_does_not(self, h: Harness) -> None:
        for turn, delta in enumerate([200, 200, 6800]):
            drift_turn(h, delta, turn, 1000 * (turn + 1))
        assert nudges(h.view()) == []

    def test_no_growth_no_nudge(self, h: Harness) -> None:
        drift_turn(h, 0, 0, 1000)
        assert nudges(h.view()) == []

    def test_a_rewind_during_the_turn_suppresses_it(self, h: Harness) -> None:
        drift_turn(h, 9000, 0, 1000)
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        rewind_ts = h.markers_data("mulligan:rewind")[0]["ts"]
        drift_turn(h, 9000, 1, rewind_ts + 1)
        assert nudges(h.view()) == []

    def test_a_refused_rewind_mutes_the_rest_of_its_turn_then_clears(self, h: Harness) -> None:
        drift_turn(h, 9000, 4, 1000)
        out = h.execute("mulligan_rewind", {"note": {}, "granularity": "last_turn"})
        assert "refused" in result_text(out)
        assert h.rt.rewind_refused_turn_index == 4
        assert nudges(h.view()) == []
        drift_turn(h, 9000, 5, 2000)
        assert len(nudges(h.view())) == 1 and h.rt.rewind_refused_turn_index is None

    def test_switched_off_it_never_nudges(self) -> None:
        h = Harness({"nudges": {"perTurnDrift": False}})
        h.add(user("u"))
        drift_turn(h, 9000, 0, 1000)
        assert nudges(h.view()) == []


class TestHighWater:
    def test_the_lifecycle_across_fires(self, h: Harness) -> None:
        h.host.usage = ContextUsage(None, 40, None)  # the context is ~31 tokens
        first = nudges(h.view(), "mulligan:high-water")
        assert len(first) == 1 and first[0].content == render_high_water_nudge(31, 40)
        assert nudges(h.view(), "mulligan:high-water") == []  # latched
        h.host.usage = ContextUsage(None, 10_000, None)
        assert nudges(h.view(), "mulligan:high-water") == [] and not h.rt.above_high_water
        h.host.usage = ContextUsage(None, 40, None)
        assert len(nudges(h.view(), "mulligan:high-water")) == 1

    def test_reports_the_percentage(self) -> None:
        h = Harness({})
        h.add(user("x" * 2800))
        h.host.usage = ContextUsage(None, 1000, None)
        assert nudges(h.view(), "mulligan:high-water")[0].content == (
            "[mulligan] Context is at ~70% of the window; review recent output for reclaimable space."
        )

    @pytest.mark.parametrize("usage", [None, ContextUsage(5, 0, None)])
    def test_an_unknown_window_never_fires(self, h: Harness, usage: ContextUsage | None) -> None:
        h.host.usage = usage
        assert nudges(h.view(), "mulligan:high-water") == [] and not h.rt.above_high_water

    def test_well_below_the_fraction_does_not_fire(self, h: Harness) -> None:
        h.host.usage = ContextUsage(None, 1_000_000, None)
        assert nudges(h.view(), "mulligan:high-water") == []


def pinned_shrink(h: Harness, pinned: str | None, seq_hint: str = "") -> str:
    data: dict[str, Any] = {"target": {"by_tool_call_id": f"x{seq_hint}"}, "replacement": "r"}
    if pinned is not None:
        data["pinnedEntryId"] = pinned
    h.mulligan.writer(h.ctx).shrink(data)
    marker_id: str = h.custom_entries("mulligan:shrink")[-1].data["id"]
    return marker_id


def cancels(h: Harness) -> list[str]:
    return [d["targetId"] for d in h.markers_data("mulligan:cancel")]


class TestStaleShrinks:
    def test_a_pinned_shrink_missing_for_three_fires_is_cancelled(self, h: Harness) -> None:
        marker = pinned_shrink(h, "gone")
        h.fire(), h.fire()
        assert cancels(h) == [] and h.rt.shrink_miss_counts[marker] == 2
        h.fire()
        assert cancels(h) == [marker]
        h.fire()
        assert (
            h.markers_data("mulligan:cancel")[-1]["targetId"] == marker and len(cancels(h)) == 1
        )  # dropped now

    def test_a_present_target_resets_the_count(self, h: Harness) -> None:
        target = h.session.all[2].id
        marker = pinned_shrink(h, target)
        h.rt.shrink_miss_counts[marker] = 2
        h.fire()
        assert h.rt.shrink_miss_counts[marker] == 0 and cancels(h) == []

    def test_live_shrinks_are_never_counted(self, h: Harness) -> None:
        pinned_shrink(h, None)
        for _ in range(5):
            h.fire()
        assert cancels(h) == [] and h.rt.shrink_miss_counts == {}

    def test_a_failing_cancel_does_not_break_the_turn(self, h: Harness) -> None:
        pinned_shrink(h, "gone")
        h.rt.shrink_miss_counts[h.custom_entries("mulligan:shrink")[0].data["id"]] = 5
        h.host.fail["append_entry"] = RuntimeError("disk full")
        out = h.fire()
        assert out is not None and out.messages is not None


class TestSoftCap:
    def test_the_oldest_shrink_is_retired_when_over_the_cap(self) -> None:
        h = Harness({"shrink": {"maxActive": 3}})
        h.add(user("u"))
        ids = [pinned_shrink(h, None, str(i)) for i in range(4)]
        h.fire()
        assert cancels(h) == [ids[0]]

    @pytest.mark.parametrize("count", [2, 3])
    def test_at_or_under_the_cap_nothing_is_retired(self, count: int) -> None:
        h = Harness({"shrink": {"maxActive": 3}})
        h.add(user("u"))
        for i in range(count):
            pinned_shrink(h, None, str(i))
        h.fire()
        assert cancels(h) == []

    def test_one_per_fire_oldest_first_until_under_the_cap(self) -> None:
        h = Harness({"shrink": {"maxActive": 2}})
        h.add(user("u"))
        ids = [pinned_shrink(h, None, str(i)) for i in range(5)]
        for _ in range(5):
            h.fire()
        assert cancels(h) == ids[:3]

    def test_cancelled_shrinks_do_not_count(self) -> None:
        h = Harness({"shrink": {"maxActive": 2}})
        h.add(user("u"))
        ids = [pinned_shrink(h, None, str(i)) for i in range(3)]
        h.mulligan.writer(h.ctx).cancel(ids[1])
        h.fire()
        assert cancels(h) == [ids[1]]


class TestDebugLog:
    def test_a_fire_logs_the_reduction_and_the_rewinds(self, h: Harness, tmp_path: Path) -> None:
        log = tmp_path / "m.jsonl"
        h.configure({"log": {"file": str(log)}})
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        h.fire()
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        invariant = next(x for x in lines if x["event"] == "filter.invariant")
        assert invariant["level"] == "debug" and invariant["data"]["rewinds"][0]["mode"] == "pinned"
        fire = next(x for x in lines if x["event"] == "filter.fire")
        assert (
            fire["level"] == "info"
            and fire["data"]["rewinds"] == 1
            and fire["data"]["after"] < fire["data"]["before"]
        )

    def test_a_rewind_touching_the_freshest_messages_is_a_warning(self, tmp_path: Path) -> None:
        log = tmp_path / "m.jsonl"
        h = Harness({"log": {"file": str(log)}})
        h.add(
            user("u"), assistant("a"), result("a"), assistant("b"), result("b"), assistant("c"), result("c")
        )
        h.session.custom_entry(
            "mulligan:rewind", {"kind": "rewind", "granularity": "last_tool_call_group", "seq": 1}
        )
        h.fire()
        invariant = next(json.loads(x) for x in log.read_text().splitlines() if '"filter.invariant"' in x)
        assert invariant["level"] == "warn" and invariant["data"]["tailTouch"][0]["maxIdx"] == 6
