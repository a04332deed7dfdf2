"""``mulligan_rewind``: guards in order, the persisted marker, the note, checkpoint consumption."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.extensions.api import ContextUsage, ToolResult
from caddie.extensions.bundled.mulligan.audit import list_checkpoints
from caddie.extensions.bundled.mulligan.ledger import FileLedger
from caddie.extensions.bundled.mulligan.notes import render_note
from caddie.extensions.bundled.mulligan.tools.rewind import MUTATION_WARNING, REWIND_DESCRIPTION
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, result, result_text, user

LCG = {"note": NOTE, "granularity": "last_tool_call_group"}
TURN = {"note": NOTE, "granularity": "last_turn"}


def refused(reason: str) -> str:
    return f"Mulligan: refused — {reason}."


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("x1", "read", path="big.log")), result("x1", "X" * 500, "read"))
    return h


def rewind(h: Harness, params: dict[str, Any] | None = None, call_id: str = "rw") -> ToolResult:
    return h.call_tool("mulligan_rewind", LCG if params is None else params, call_id)


def test_registration() -> None:
    tool = Harness().tool("mulligan_rewind")
    assert (tool.name, tool.label, tool.description) == (
        "mulligan_rewind",
        "Mulligan Rewind",
        REWIND_DESCRIPTION,
    )
    assert REWIND_DESCRIPTION.startswith(
        "Shed recent context you produced by mistake"
    ) and REWIND_DESCRIPTION.endswith("or 'last_turn' to redo the whole turn from the user's last message.")
    params = tool.parameters
    assert params["required"] == ["note", "granularity"]
    assert params["properties"]["note"]["required"] == ["what_happened", "true_current_state", "next"]
    assert [a["const"] for a in params["properties"]["granularity"]["anyOf"]] == [
        "last_tool_call_group",
        "last_turn",
        "checkpoint",
    ]
    assert params["properties"]["checkpoint"]["description"] == (
        "Required when granularity=checkpoint. The name of a checkpoint set via mulligan_checkpoint."
    )


class TestRefusals:
    @pytest.mark.parametrize(
        ("settings", "reason"),
        [
            ({"enabled": False}, "Mulligan is disabled"),
            ({"rewind": {"enabled": False}}, "rewind is disabled"),
        ],
    )
    def test_switches_refuse_before_the_note_is_checked(self, settings: dict[str, Any], reason: str) -> None:
        h = Harness(settings)
        out = h.execute("mulligan_rewind", {"note": {}, "granularity": "last_turn"})
        assert result_text(out) == refused(reason) and out.details == {"granularity": "last_turn"}
        assert h.host.writes == []

    @pytest.mark.parametrize("field", ["what_happened", "true_current_state", "next"])
    @pytest.mark.parametrize("value", ["", "   "])
    def test_a_blank_note_field_refuses_and_persists_nothing(
        self, h: Harness, field: str, value: str
    ) -> None:
        out = h.execute("mulligan_rewind", {"note": {**NOTE, field: value}, "granularity": "last_turn"})
        assert result_text(out) == refused("note fields must all be non-empty")
        assert h.host.writes == []

    @pytest.mark.parametrize("name", [None, ""])
    def test_a_checkpoint_rewind_needs_a_name(self, h: Harness, name: str | None) -> None:
        params: dict[str, Any] = {"note": NOTE, "granularity": "checkpoint"}
        if name is not None:
            params["checkpoint"] = name
        out = h.execute("mulligan_rewind", params)
        assert result_text(out) == refused("checkpoint granularity requires a checkpoint name")
        assert out.details == {"granularity": "checkpoint"}

    def test_an_unknown_checkpoint_refuses(self, h: Harness) -> None:
        out = h.execute("mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "nope"})
        assert result_text(out) == refused("checkpoint 'nope' not found on this branch")

    def test_the_depth_guard_counts_active_rewinds_in_the_whole_session(self, h: Harness) -> None:
        for i in range(5):
            assert result_text(rewind(h, TURN, f"rw{i}")).startswith("Mulligan: rewound")
            h.add(user(f"next {i}"))
        out = h.execute("mulligan_rewind", TURN)
        assert result_text(out) == refused(
            "max rewind depth (5) reached — 5 active rewind marker(s). Consider mulligan_shrink or just continuing; "
            "if stuck in a loop, the human should intervene"
        )

    def test_four_active_rewinds_leave_room_for_a_fifth(self, h: Harness) -> None:
        for i in range(4):
            rewind(h, TURN, f"rw{i}")
            h.add(user(f"next {i}"))
        assert result_text(rewind(h, TURN, "rw5")).startswith("Mulligan: rewound last_turn.")
        assert len(h.markers_data("mulligan:rewind")) == 5

    @pytest.mark.parametrize(
        ("depth", "text"), [(0, "max rewind depth (0) reached — 0 active"), (2.5, "max rewind depth (2.5)")]
    )
    def test_a_custom_depth(self, depth: float, text: str) -> None:
        h = Harness({"rewind": {"maxDepth": depth}})
        h.add(user("u"))
        for i in range(3):
            rewind(h, TURN, f"r{i}")
            h.add(user(f"u{i}"))
        assert text in result_text(h.execute("mulligan_rewind", TURN))

    def test_cancelled_rewinds_free_depth(self, h: Harness) -> None:
        for i in range(5):
            rewind(h, TURN, f"rw{i}")
            h.add(user(f"next {i}"))
        for data in h.markers_data("mulligan:rewind"):
            h.mulligan.writer(h.ctx).cancel(data["id"])
        assert result_text(rewind(h, TURN, "again")).startswith("Mulligan: rewound")

    def test_the_retry_budget_refuses_at_the_budget(self) -> None:
        h = Harness({"rewind": {"maxRetriesPerPrompt": 3}})
        h.add(user("u"))
        for i in range(3):
            rewind(h, TURN, f"r{i}")  # zero-hide rewinds count too
        before = len(h.session.all)
        out = h.execute("mulligan_rewind", TURN)
        assert result_text(out) == refused(
            "hit the per-prompt retry budget (3/3 rewinds re-landing at this prompt). Commit to the current state, "
            "ask the human, or use mulligan_shrink instead of rewinding again"
        )
        assert len(h.session.all) == before
        assert "refused" not in result_text(
            h.execute("mulligan_shrink", {"target": {"by_tool_name": "x"}, "replacement": "r"})
        )

    def test_a_new_prompt_resets_the_budget(self) -> None:
        h = Harness({"rewind": {"maxRetriesPerPrompt": 2}})
        h.add(user("u"))
        rewind(h, TURN, "r1"), rewind(h, TURN, "r2")
        h.add(user("try something else"))
        assert result_text(rewind(h, TURN, "r3")).startswith("Mulligan: rewound")

    def test_cancelled_rewinds_do_not_consume_the_budget(self) -> None:
        h = Harness({"rewind": {"maxRetriesPerPrompt": 1}})
        h.add(user("u"))
        rewind(h, TURN, "r1")
        h.mulligan.writer(h.ctx).cancel(h.markers_data("mulligan:rewind")[0]["id"])
        assert result_text(rewind(h, TURN, "r2")).startswith("Mulligan: rewound")

    def test_without_a_user_message_the_budget_is_untouched(self) -> None:
        h = Harness({"rewind": {"maxRetriesPerPrompt": 1}})
        rewind(h, TURN, "r1")
        assert result_text(rewind(h, TURN, "r2")).startswith("Mulligan: rewound")

    def test_the_context_fraction_stop(self, h: Harness) -> None:
        h.host.usage = ContextUsage(None, 100, None)
        h.rt.last_filtered = [user("x" * 400)]  # 100 tokens of 100
        out = h.execute("mulligan_rewind", TURN)
        assert result_text(out) == refused(
            "context is at 100% of the window; rewinding will not help. Run mulligan_audit and shrink the largest result"
        )
        assert "refused" not in result_text(
            h.execute("mulligan_shrink", {"target": {"by_tool_name": "read"}, "replacement": "r"})
        )

    def test_the_context_fraction_uses_the_unfiltered_context_before_any_inference(self, h: Harness) -> None:
        h.host.usage = ContextUsage(None, 146, None)  # the context is 132 tokens ≥ 0.9 × 146
        assert "context is at 90% of the window" in result_text(h.execute("mulligan_rewind", TURN))

    @pytest.mark.parametrize("usage", [None, ContextUsage(10**9, 0, None)])
    def test_an_unknown_window_skips_the_context_fraction_stop(
        self, h: Harness, usage: ContextUsage | None
    ) -> None:
        h.host.usage = usage
        h.rt.last_filtered = [user("x" * 10_000)]
        assert result_text(rewind(h, TURN)).startswith("Mulligan: rewound")

    def test_guards_fail_open(self, h: Harness) -> None:
        h.host.fail["get_context_usage"] = RuntimeError("no model")
        assert result_text(rewind(h)).startswith("Mulligan: rewound")
        h.host.fail["entries"] = RuntimeError("boom")
        assert result_text(rewind(h, TURN, "rw2")).startswith("Mulligan: rewound")


class TestRefusalMutesTheDriftNudge:
    def test_a_refusal_latches_the_current_turn(self, h: Harness) -> None:
        h.turn_end(7)
        h.execute("mulligan_rewind", {"note": {}, "granularity": "last_turn"})
        assert h.rt.rewind_refused_turn_index == 7

    def test_the_latest_metric_wins_over_the_runtime_turn(self, h: Harness) -> None:
        h.session.custom_entry("mulligan:turn-metric", {"kind": "turn-metric", "turnIndex": 9, "seq": 1})
        h.rt.last_turn_index = 2
        h.execute("mulligan_rewind", {"note": {}, "granularity": "last_turn"})
        assert h.rt.rewind_refused_turn_index == 9

    def test_a_success_does_not_latch(self, h: Harness) -> None:
        h.turn_end(1)
        rewind(h)
        assert h.rt.rewind_refused_turn_index is None

    def test_without_any_turn_the_flag_stays_empty(self, h: Harness) -> None:
        h.execute("mulligan_rewind", {"note": {}, "granularity": "last_turn"})
        assert h.rt.rewind_refused_turn_index is None


class TestSuccess:
    def test_the_persisted_marker(self, h: Harness) -> None:
        out = rewind(h, call_id="call-77")
        data = h.markers_data("mulligan:rewind")[0]
        x1_entries = [h.session.all[1].id, h.session.all[2].id]
        assert data == {
            "granularity": "last_tool_call_group",
            "options": {"protect": ["first:user", "latest:user"]},
            "excludeToolCallId": "call-77",
            "note": NOTE,
            "ledger": {"readFiles": ["big.log"], "modifiedFiles": [], "bashSideEffects": []},
            "hideEntryIds": x1_entries,
            "schema": "pi-mulligan",
            "v": 1,
            "kind": "rewind",
            "id": data["id"],
            "seq": 1,
            "ts": data["ts"],
        }
        assert out.details == {
            "granularity": "last_tool_call_group",
            "k": 2,
            "ledger": {"readFiles": ["big.log"], "modifiedFiles": [], "bashSideEffects": []},
            "hideEntryIds": x1_entries,
            "markerId": h.custom_entries("mulligan:rewind")[0].id,
        }
        assert result_text(out) == (
            "Mulligan: rewound last_tool_call_group. 2 messages will be hidden from your view starting next turn. "
            "Note left."
        )

    def test_nothing_to_hide_is_said_honestly_and_pins_nothing(self) -> None:
        h = Harness({})
        h.add(user("u"))
        out = rewind(h)
        assert result_text(out) == (
            "Mulligan: rewound last_tool_call_group. 0 messages will be hidden from your view starting next turn "
            "(nothing matched to hide). Note left."
        )
        assert (
            out.details["hideEntryIds"] == [] and h.markers_data("mulligan:rewind")[0]["hideEntryIds"] == []
        )

    def test_last_turn_pins_the_work_after_the_prompt_but_not_its_own_call(self, h: Harness) -> None:
        out = rewind(h, TURN)
        assert out.details["k"] == 2 and out.details["hideEntryIds"] == [
            h.session.all[1].id,
            h.session.all[2].id,
        ]

    def test_the_note_is_the_rendered_note_and_names_the_marker_entry(self, h: Harness) -> None:
        rewind(h)
        note = h.notes()[0]
        ledger = FileLedger(read_files=("big.log",))
        assert note.content == render_note(NOTE, ledger, "last_tool_call_group")
        assert note.details["rewindId"] == h.custom_entries("mulligan:rewind")[0].id

    def test_the_marker_is_written_before_the_note(self, h: Harness) -> None:
        rewind(h)
        assert h.host.writes == ["append_entry", "send_message"]

    def test_a_failed_append_still_leaves_the_note_naming_the_tool_call(self, h: Harness) -> None:
        h.host.fail["append_entry"] = RuntimeError("disk full")
        out = rewind(h, call_id="call-9")
        assert result_text(out).startswith("Mulligan: rewound") and out.details["markerId"] is None
        assert h.notes()[0].details["rewindId"] == "call-9"

    def test_a_broken_snapshot_still_rewinds_with_an_empty_preview(self, h: Harness) -> None:
        h.host.fail["context_entries"] = RuntimeError("boom")
        out = h.execute("mulligan_rewind", LCG, "rw")
        assert (
            out.details["k"] == 0
            and out.details["hideEntryIds"] == []
            and out.details["ledger"]["readFiles"] == []
        )
        assert len(h.markers_data("mulligan:rewind")) == 1 and len(h.notes()) == 1

    def test_the_pins_follow_entry_order_and_are_deterministic(self, h: Harness) -> None:
        h.add(
            assistant(call("y1", "bash", command="ls"), call("y2", "read", path="z")),
            result("y2"),
            result("y1"),
        )
        first = h.execute("mulligan_rewind", TURN, "rw").details["hideEntryIds"]
        again = h.execute("mulligan_rewind", TURN, "rw").details["hideEntryIds"]
        assert first == again == [e.id for e in h.session.all[1:6] if e.type == "message"]


class TestMutationWarning:
    @pytest.mark.parametrize(
        "tool_call", [call("w", "edit", path="src/a.ts"), call("w", "bash", command="rm -rf build")]
    )
    def test_side_effects_in_the_hidden_span_are_flagged(self, tool_call: Any) -> None:
        h = Harness({})
        h.add(user("u"), assistant(tool_call), result("w"))
        text = result_text(rewind(h))
        assert text.endswith(" " + MUTATION_WARNING)
        assert MUTATION_WARNING == (
            "⚠ The hidden span modified files/ran side-effecting commands (see note). Those effects PERSIST on disk; "
            "do not blindly redo them."
        )

    def test_the_warning_can_be_switched_off(self) -> None:
        h = Harness({"rewind": {"requireMutationWarning": False}})
        h.add(user("u"), assistant(call("w", "edit", path="a.ts")), result("w"))
        assert "⚠" not in result_text(rewind(h))

    def test_reads_only_are_not_flagged(self, h: Harness) -> None:
        assert "⚠" not in result_text(rewind(h))


class TestCheckpoints:
    def setup_checkpoint(self, h: Harness, name: str = "anchor") -> None:
        h.command("mulligan_checkpoint", name)
        h.add(user("later prompt"), assistant(call("z1", "read", path="z")), result("z1"))

    def test_a_checkpoint_rewind_hides_back_to_it_and_records_the_name(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        out = rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"})
        assert out.details["k"] == 3 and h.markers_data("mulligan:rewind")[0]["checkpoint"] == "anchor"
        assert [m.role for m in h.view()] == [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "custom",
        ]

    def test_an_unreadable_branch_still_rewinds_with_an_empty_preview(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        h.add(assistant(call("cp-rw", "mulligan_rewind")))
        h.host.fail["branch"] = RuntimeError("boom")
        out = h.execute(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"}, "cp-rw"
        )
        assert (
            result_text(out).startswith("Mulligan: rewound checkpoint. 0 messages")
            and out.details["hideEntryIds"] == []
        )

    def test_the_checkpoint_is_consumed(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"})
        assert list_checkpoints(h.session.entries()) == []
        again = h.execute(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"}
        )
        assert result_text(again) == refused("checkpoint 'anchor' not found on this branch")

    def test_a_re_set_checkpoint_works_again(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"}, "r1")
        h.add(user("again"))
        h.command("mulligan_checkpoint", "anchor")
        h.add(assistant(call("q", "read", path="q")), result("q"))
        assert result_text(
            rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"}, "r2")
        ).startswith("Mulligan: rewound checkpoint.")

    def test_other_granularities_leave_checkpoints_alone(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        rewind(h)
        assert list_checkpoints(h.session.entries()) == ["anchor"]

    def test_a_failing_label_clear_does_not_fail_the_rewind(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        h.host.fail["set_label"] = RuntimeError("boom")
        assert result_text(
            rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"})
        ).startswith("Mulligan: rewound checkpoint.")

    def test_every_entry_carrying_the_name_is_cleared(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "dup")
        h.add(user("more"))
        h.command("mulligan_checkpoint", "dup")
        h.add(assistant(call("k", "read", path="k")), result("k"))
        rewind(h, {"note": NOTE, "granularity": "checkpoint", "checkpoint": "dup"})
        assert h.session.labels == {}

    def test_a_cleared_checkpoint_does_not_count_as_active(self, h: Harness) -> None:
        self.setup_checkpoint(h)
        h.command("mulligan_checkpoint_revoke", "anchor")
        out = h.execute(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "anchor"}
        )
        assert result_text(out) == refused("checkpoint 'anchor' not found on this branch")


def test_never_raises_and_refuses_with_the_error(h: Harness) -> None:
    out = h.execute("mulligan_rewind", "not an object")
    assert result_text(out) == refused("note fields must all be non-empty")
    assert out.details == {"granularity": "last_tool_call_group"}
