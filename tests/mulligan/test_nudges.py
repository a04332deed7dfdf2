"""The nudges: bloat reminder, turn metrics, the windowed drift gate, the high-water latch."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from caddie.extensions.api import ContextUsage, CustomMessage, ImageContent, TextContent
from caddie.extensions.bundled.mulligan.config import MulliganConfig, validate_config
from caddie.extensions.bundled.mulligan.markers import MarkerBundle, RewindMarker, ShrinkMarker, TurnMetric
from caddie.extensions.bundled.mulligan.notes import render_bloat_reminder, render_high_water_nudge
from caddie.extensions.bundled.mulligan.nudges import (
    bloat_threshold_for,
    inject_high_water_nudge,
    inject_nudge,
    should_high_water,
    should_nudge,
    suppress_check,
)
from caddie.extensions.bundled.mulligan.state import BloatHit, SessionRuntime
from tests.mulligan.fakehost import Harness, assistant_text, result, text_of, user

CONFIG = MulliganConfig()


def metrics(*deltas: Any, bloat: bool = False) -> list[TurnMetric]:
    """Newest first."""
    return [
        TurnMetric(delta_tokens=d, bloat_hit=bloat, turn_index=i, seq=len(deltas) - i)
        for i, d in enumerate(deltas)
    ]


# --------------------------------------------------------------------------------------------------
# Nudge A: the bloat reminder


class TestBloatThresholdFor:
    def test_read_has_its_own_threshold_and_bash_uses_the_global_one(self) -> None:
        assert bloat_threshold_for("read", CONFIG) == 24576 and bloat_threshold_for("bash", CONFIG) == 16384

    @pytest.mark.parametrize("name", ["mystery", "", None, "constructor", "toString", "__class__", "get"])
    def test_other_names_use_the_global_threshold(self, name: str | None) -> None:
        assert bloat_threshold_for(name, CONFIG) == 16384

    def test_an_empty_map_and_custom_entries(self) -> None:
        empty = CONFIG.model_copy(
            update={"nudges": CONFIG.nudges.model_copy(update={"bloat_threshold_bytes_by_tool": {}})}
        )
        assert bloat_threshold_for("read", empty) == 16384
        custom = validate_config({"nudges": {"bloatThresholdBytesByTool": {"bash": 100}}})
        assert bloat_threshold_for("bash", custom) == 100


def text_blocks(n_bytes: int) -> list[TextContent | ImageContent]:
    return [TextContent("x" * n_bytes)]


class TestBloatReminderHandler:
    def test_a_result_at_the_threshold_gets_the_reminder_appended(self) -> None:
        h = Harness({})
        content = text_blocks(16384)
        patch = h.tool_result_event("bash", content)
        assert patch is not None and patch.content is not None
        assert patch.content[0] is content[0] and len(patch.content) == 2
        assert patch.content[1] == TextContent(render_bloat_reminder(16384))
        assert content == text_blocks(16384)  # the event's list is not modified
        assert h.rt.pending_bloat_hits == [BloatHit("bash", 4096)]

    def test_one_byte_under_passes_through_without_a_hit(self) -> None:
        h = Harness({})
        assert h.tool_result_event("bash", text_blocks(16383)) is None
        assert h.rt.pending_bloat_hits == []

    @pytest.mark.parametrize(
        ("tool", "size", "fires"),
        [
            ("bash", 16383, False),
            ("bash", 20000, True),
            ("grep", 20000, True),
            ("read", 20000, False),
            ("read", 24576, True),
        ],
    )
    def test_per_tool_thresholds(self, tool: str, size: int, fires: bool) -> None:
        assert (Harness({}).tool_result_event(tool, text_blocks(size)) is not None) == fires

    def test_images_count_by_their_base64_length(self) -> None:
        assert Harness({}).tool_result_event("read", [ImageContent("A" * 30000, "image/png")]) is not None

    def test_mulligan_tools_are_skipped(self) -> None:
        h = Harness({})
        assert h.tool_result_event("mulligan_audit", text_blocks(99999)) is None
        assert h.rt.pending_bloat_hits == []
        assert h.tool_result_event("mulliganish", text_blocks(99999)) is not None

    @pytest.mark.parametrize("settings", [{"enabled": False}, {"nudges": {"bloatReminder": False}}])
    def test_switched_off_it_records_nothing(self, settings: dict[str, Any]) -> None:
        h = Harness(settings)
        assert h.tool_result_event("bash", text_blocks(99999)) is None
        assert h.rt.pending_bloat_hits == []

    def test_hits_accumulate_within_a_turn(self) -> None:
        h = Harness({})
        h.tool_result_event("bash", text_blocks(20000))
        h.tool_result_event("bash", text_blocks(10))
        h.tool_result_event("grep", text_blocks(40000))
        assert [hit.tool_name for hit in h.rt.pending_bloat_hits] == ["bash", "grep"]

    def test_fails_open(self) -> None:
        h = Harness({})
        h.host.fail["session_id"] = RuntimeError("boom")
        assert h.tool_result_event("bash", text_blocks(99999)) is None


# --------------------------------------------------------------------------------------------------
# Nudge B phase 1: the turn metric


class TestTurnEndMetric:
    def test_the_first_turn_has_no_delta(self) -> None:
        h = Harness({})
        h.rt.last_filtered = [assistant_text("x" * 400)]
        h.turn_end(0)
        data = h.markers_data("mulligan:turn-metric")[0]
        assert (data["deltaTokens"], data["grewOverThreshold"], data["bloatHit"], data["turnIndex"]) == (
            None,
            False,
            False,
            0,
        )
        assert (h.rt.token_baseline, h.rt.last_turn_index) == (100, 0)

    @pytest.mark.parametrize(("baseline", "grew"), [(0, True), (100, False), (5000, False)])
    def test_growth_is_measured_against_the_previous_turn(self, baseline: int, grew: bool) -> None:
        h = Harness({})
        h.rt.token_baseline = baseline
        h.rt.last_filtered = [assistant_text("x" * 16400)]  # 4100 tokens
        h.turn_end(3)
        data = h.markers_data("mulligan:turn-metric")[0]
        assert data["deltaTokens"] == 4100 - baseline and data["grewOverThreshold"] is grew

    def test_growth_equal_to_the_threshold_is_not_over_it(self) -> None:
        h = Harness({})
        h.rt.token_baseline = 0
        h.rt.last_filtered = [assistant_text("x" * 16000)]
        h.turn_end(1)
        assert h.markers_data("mulligan:turn-metric")[0]["grewOverThreshold"] is False

    def test_bloat_hits_are_snapshotted_and_cleared(self) -> None:
        h = Harness({})
        h.tool_result_event("bash", text_blocks(20000))
        before = h.rt.pending_bloat_hits
        h.turn_end(0)
        data = h.markers_data("mulligan:turn-metric")[0]
        assert data["bloatHit"] is True and data["bloatHits"] == [{"toolName": "bash", "approxTokens": 5000}]
        assert h.rt.pending_bloat_hits == [] and h.rt.pending_bloat_hits is not before

    def test_the_user_share_is_not_counted(self) -> None:
        h = Harness({})
        h.rt.token_baseline = 0
        h.rt.last_filtered = [user("x" * 200_000), assistant_text("y" * 400)]
        h.turn_end(0)
        assert h.markers_data("mulligan:turn-metric")[0]["deltaTokens"] == 100

    @pytest.mark.parametrize(
        ("usage", "now"),
        [(ContextUsage(321, 1000, None), 321), (ContextUsage(None, 1000, None), 0), (None, 0)],
    )
    def test_before_any_inference_the_host_estimate_is_used(
        self, usage: ContextUsage | None, now: int
    ) -> None:
        h = Harness({})
        h.host.usage = usage
        h.turn_end(0)
        assert h.rt.token_baseline == now

    def test_baselines_roll_and_seq_advances_by_one_per_turn(self) -> None:
        h = Harness({})
        h.rt.last_filtered = [assistant_text("x" * 400)]
        h.turn_end(0)
        h.rt.last_filtered = [assistant_text("x" * 1200)]
        h.turn_end(1)
        data = h.markers_data("mulligan:turn-metric")
        assert [d["deltaTokens"] for d in data] == [None, 200] and [d["seq"] for d in data] == [1, 2]
        assert set(data[0]) == {
            "deltaTokens",
            "bloatHit",
            "bloatHits",
            "grewOverThreshold",
            "turnIndex",
            "schema",
            "v",
            "kind",
            "seq",
            "ts",
        }

    @pytest.mark.parametrize("settings", [{"enabled": False}, {"nudges": {"perTurnDrift": False}}])
    def test_switched_off_no_metric_but_bloat_hits_are_still_cleared(self, settings: dict[str, Any]) -> None:
        h = Harness(settings)
        h.rt.pending_bloat_hits.append(BloatHit("bash", 1))
        h.turn_end(0)
        assert h.markers_data("mulligan:turn-metric") == [] and h.rt.pending_bloat_hits == []
        assert h.rt.token_baseline is None

    def test_a_failing_append_still_rolls_the_baseline(self) -> None:
        h = Harness({})
        h.host.fail["append_entry"] = RuntimeError("boom")
        h.rt.last_filtered = []
        h.turn_end(0)
        assert h.rt.token_baseline == 0

    def test_fails_open_without_touching_state(self) -> None:
        h = Harness({})
        h.rt.pending_bloat_hits.append(BloatHit("bash", 1))
        h.host.fail["session_id"] = RuntimeError("boom")
        h.turn_end(0)
        h.host.fail.clear()
        assert h.rt.pending_bloat_hits == [BloatHit("bash", 1)] and h.rt.token_baseline is None


# --------------------------------------------------------------------------------------------------
# Nudge B phase 2: the windowed drift gate


class TestShouldNudge:
    @pytest.mark.parametrize(
        ("deltas", "fires"),
        [
            ((8000, 500, 500), False),
            ((7000, 7000, 7000), True),
            ((4000, 4000, 4000), True),
            ((4000, 4000, 3999), False),
            ((12000,), True),
            ((100, 0, 0), False),
            ((None, 5000), True),
            ((0, 0, 0, 99999), False),
        ],
    )
    def test_the_mean_over_the_window_decides(self, deltas: tuple[Any, ...], fires: bool) -> None:
        assert should_nudge(metrics(*deltas), CONFIG) is fires

    def test_bloat_only_fires_when_no_delta_is_known(self) -> None:
        assert should_nudge(metrics(None, bloat=True), CONFIG)
        assert not should_nudge(metrics(None, None), CONFIG)
        assert not should_nudge(metrics(10, bloat=True), CONFIG)

    def test_an_empty_window_does_not_fire(self) -> None:
        assert not should_nudge([], CONFIG)

    @pytest.mark.parametrize("bad", ["9000", float("nan"), float("inf"), True])
    def test_malformed_deltas_are_dropped(self, bad: object) -> None:
        assert not should_nudge(metrics(bad, 0, 0), CONFIG)

    def test_a_user_paste_does_not_trip_it(self) -> None:
        h = Harness({})
        h.rt.token_baseline = 0
        h.rt.last_filtered = [user("x" * 200_000), assistant_text("ok")]
        h.turn_end(0)
        data = h.markers_data("mulligan:turn-metric")[0]
        assert not should_nudge([TurnMetric(data["deltaTokens"], False, [], 0, 1, 1)], CONFIG)


class TestInjectNudge:
    def test_appends_one_ephemeral_message_to_a_new_list(self) -> None:
        msgs = [user("u")]
        metric = TurnMetric(4200, turn_index=3)
        out = inject_nudge(msgs, metric)
        assert msgs == [user("u")] and len(out) == 2 and out[0] is msgs[0]
        nudge = out[1]
        assert isinstance(nudge, CustomMessage)
        assert (nudge.custom_type, nudge.display, nudge.details) == (
            "mulligan:nudge",
            False,
            {"ephemeral": True, "turnIndex": 3},
        )
        assert nudge.content.startswith("Previous turn added ~4.2k tokens")  # type: ignore[union-attr]

    def test_never_stacks(self) -> None:
        msgs = [user("u")]
        inject_nudge(msgs, TurnMetric(5000))
        assert len(inject_nudge(msgs, TurnMetric(5000))) == 2

    def test_sustained_growth_is_explained(self) -> None:
        recent = metrics(800, 6000, 6000)
        text = text_of(inject_nudge([], recent[0], recent, CONFIG)[0])
        assert "(sustained over the last 3 turns)" in text

    @pytest.mark.parametrize(
        ("recent", "with_config"), [(metrics(5000, 5000, 5000), True), (metrics(800, 6000, 6000), False)]
    )
    def test_no_clause_when_the_latest_turn_explains_it_or_without_the_window(
        self, recent: list[TurnMetric], with_config: bool
    ) -> None:
        out = inject_nudge([], recent[0], recent if with_config else None, CONFIG if with_config else None)
        assert "sustained" not in text_of(out[0])

    def test_no_clause_on_the_bloat_lead(self) -> None:
        recent = [TurnMetric(None, True, [{"toolName": "bash", "approxTokens": 5}], 0, 2)]
        out = inject_nudge([], recent[0], recent, CONFIG)
        assert out[0].content.startswith("Previous turn produced 1 bloated result")  # type: ignore[union-attr]


def bundle(rewind_ts: list[float | None] = (), shrink_ts: list[float | None] = ()) -> MarkerBundle:  # type: ignore[assignment]
    return MarkerBundle(
        tuple(RewindMarker(ts=t) for t in rewind_ts), tuple(ShrinkMarker(ts=t) for t in shrink_ts)
    )


class TestSuppressCheck:
    latest = TurnMetric(ts=2000)
    recent: ClassVar[list[TurnMetric]] = [TurnMetric(ts=2000), TurnMetric(ts=1000)]

    def test_no_markers_no_suppression(self) -> None:
        assert not suppress_check(self.latest, self.recent, bundle())

    @pytest.mark.parametrize(
        ("ts", "suppressed"),
        [(2000, True), (1500, True), (1000, False), (500, False), (2001, False), (None, False)],
    )
    def test_a_marker_made_during_the_turn_suppresses(self, ts: float | None, suppressed: bool) -> None:
        assert suppress_check(self.latest, self.recent, bundle([ts])) is suppressed
        assert suppress_check(self.latest, self.recent, bundle([], [ts])) is suppressed

    def test_any_marker_in_the_window_is_enough(self) -> None:
        assert suppress_check(self.latest, self.recent, bundle([100, 1500], [3000]))

    def test_on_the_first_turn_the_window_starts_at_zero(self) -> None:
        assert suppress_check(self.latest, [self.latest], bundle([1]))
        assert suppress_check(self.latest, [self.latest, TurnMetric(ts=None)], bundle([1]))

    def test_a_metric_without_a_time_counts_as_zero(self) -> None:
        assert not suppress_check(TurnMetric(ts=None), [TurnMetric(ts=None)], bundle([5]))

    @pytest.mark.parametrize(("acted", "fires"), [("shrink", False), (None, True), ("rewind", False)])
    def test_the_net_decision(self, acted: str | None, fires: bool) -> None:
        recent = [TurnMetric(5000, ts=2000), TurnMetric(5000, ts=1000)]
        markers = bundle([1500] if acted == "rewind" else [], [1500] if acted == "shrink" else [])
        assert (should_nudge(recent, CONFIG) and not suppress_check(recent[0], recent, markers)) is fires

    def test_a_marker_from_a_previous_turn_does_not_silence_later_turns(self) -> None:
        markers = bundle([1500])
        recent = [TurnMetric(5000, ts=3000), TurnMetric(5000, ts=2000), TurnMetric(5000, ts=1000)]
        assert not suppress_check(recent[0], recent, markers)


# --------------------------------------------------------------------------------------------------
# High water


class TestHighWater:
    def test_the_full_latch_lifecycle(self) -> None:
        rt = SessionRuntime("s")
        assert should_high_water(700, 1000, rt, CONFIG) and rt.above_high_water
        assert not should_high_water(900, 1000, rt, CONFIG)
        assert not should_high_water(100, 1000, rt, CONFIG) and not rt.above_high_water
        assert should_high_water(800, 1000, rt, CONFIG)

    @pytest.mark.parametrize("window", [0, -5])
    def test_an_unknown_window_never_fires_and_keeps_the_latch(self, window: int) -> None:
        rt = SessionRuntime("s", above_high_water=True)
        assert not should_high_water(10**9, window, rt, CONFIG) and rt.above_high_water

    def test_a_custom_fraction(self) -> None:
        config = validate_config({"nudges": {"highWaterFraction": 0.9}})
        assert not should_high_water(700, 1000, SessionRuntime("s"), config)

    def test_the_injected_message(self) -> None:
        msgs = [user("u")]
        out = inject_high_water_nudge(msgs, 700, 1000)
        assert msgs == [user("u")] and len(out) == 2
        nudge = out[1]
        assert (
            isinstance(nudge, CustomMessage)
            and nudge.custom_type == "mulligan:high-water"
            and not nudge.display
        )
        assert nudge.content == render_high_water_nudge(700, 1000)
        assert nudge.details == {"ephemeral": True, "totalFilteredTokens": 700, "windowTokens": 1000}


def test_results_do_not_feed_the_user_share() -> None:
    h = Harness({})
    h.rt.token_baseline = 0
    h.rt.last_filtered = [result("c", "x" * 400)]
    h.turn_end(0)
    assert h.markers_data("mulligan:turn-metric")[0]["deltaTokens"] == 100
