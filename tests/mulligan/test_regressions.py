"""Regressions pinned by the TypeScript original's bug rounds (spec §A.14), end to end where it matters."""

from __future__ import annotations

from caddie.extensions.api import AgentMessage, TextContent, ToolResultMessage
from caddie.extensions.bundled.mulligan.transforms import RewindDiag, filter_pipeline
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, custom, result, text_of, user
from tests.mulligan.helpers import PROTECT, entries, entry, rewind


def turn(with_new_work: bool) -> tuple[list[AgentMessage], list]:  # type: ignore[type-arg]
    msgs: list[AgentMessage] = [
        user("do the task"),
        assistant(call("tA", "read")),
        result("tA", "file A contents"),
        assistant(call("tRW", "mulligan_rewind")),
        result("tRW", "rewound"),
        custom("mulligan:note", "note left"),
    ]
    branch = [*entries("e_U", "e_A1", "e_RA", "e_Arw", "e_RRW"), entry("e_note", "custom_message")]
    if with_new_work:
        msgs += [assistant(call("tB", "read")), result("tB", "file B contents")]
        branch += entries("e_A2", "e_RB")
    return msgs, branch


def has_call(msgs: list[AgentMessage], call_id: str) -> bool:
    return any(isinstance(m, ToolResultMessage) and m.tool_call_id == call_id for m in msgs)


class TestTurnReplayLoop:
    """BUG-001/BUG-002 and the turn-replay loop: relative rewinds must not re-target new work."""

    def test_a_legacy_marker_hides_the_group_on_the_resume_fire(self) -> None:
        msgs, branch = turn(False)
        out = filter_pipeline(msgs, [rewind(1, exclude_tool_call_id="tRW")], [], PROTECT, branch)
        assert [m.role for m in out] == ["user", "assistant", "toolResult", "custom"]

    def test_a_legacy_marker_does_nothing_once_the_turn_advanced(self) -> None:
        msgs, branch = turn(True)
        for granularity in ("last_tool_call_group", "last_turn"):
            out = filter_pipeline(
                msgs, [rewind(1, granularity, exclude_tool_call_id="tRW")], [], PROTECT, branch
            )
            assert out is msgs and has_call(out, "tB")

    def test_a_pinned_marker_keeps_the_new_work(self) -> None:
        msgs, branch = turn(True)
        out = filter_pipeline(
            msgs, [rewind(1, exclude_tool_call_id="tRW", hide=["e_A1", "e_RA"])], [], PROTECT, branch
        )
        assert len(out) == 6 and has_call(out, "tB") and not has_call(out, "tA")

    def test_a_later_bloated_read_survives_a_pinned_undo_of_an_earlier_read(self) -> None:
        msgs: list[AgentMessage] = [
            user("edit the spec"),
            assistant(call("r1", "read")),
            result("r1", "BIG READ #1"),
            assistant(call("rw", "mulligan_rewind")),
            result("rw", "rewound"),
            custom("mulligan:note", "note"),
            assistant(call("r2", "read")),
            ToolResultMessage(
                "r2", "read", [TextContent("BIG READ #2"), TextContent("\n---\n~40 KB added …")]
            ),
        ]
        branch = [*entries("e_u", "e_r1a", "e_r1r", "e_rwa", "e_rwr"), entry("e_note", "custom_message")]
        branch += entries("e_r2a", "e_r2r")
        out = filter_pipeline(
            msgs, [rewind(1, exclude_tool_call_id="rw", hide=["e_r1a", "e_r1r"])], [], PROTECT, branch
        )
        r2 = next(m for m in out if isinstance(m, ToolResultMessage) and m.tool_call_id == "r2")
        assert len(out) == 6 and len(r2.content) == 2 and not has_call(out, "r1")

    def test_a_compacted_pinned_span_does_nothing_and_new_work_survives(self) -> None:
        msgs: list[AgentMessage] = [
            user("[compaction summary]"),
            assistant(call("ret", "read")),
            result("ret", "retained read"),
            assistant(call("r2", "read")),
            result("r2", "NEW READ after compaction"),
        ]
        branch = [
            *entries("e_old_a", "e_old_r"),
            entry("e_comp", "compaction"),
            *entries("e_ret_a", "e_ret_r", "e_r2a", "e_r2r"),
        ]
        out = filter_pipeline(
            msgs, [rewind(1, exclude_tool_call_id="rw", hide=["e_old_a", "e_old_r"])], [], PROTECT, branch
        )
        assert out is msgs

    def test_the_diagnostics_name_each_mode(self) -> None:
        msgs, branch = turn(False)
        diag: list[RewindDiag] = []
        filter_pipeline(
            msgs, [rewind(1, exclude_tool_call_id="tRW", hide=["e_A1", "e_RA"])], [], PROTECT, branch, diag
        )
        assert (
            diag[0].mode == "pinned"
            and diag[0].remove == (1, 2)
            and max(diag[0].remove) < diag[0].resolved_len - 3
        )
        create: list[RewindDiag] = []
        filter_pipeline(msgs, [rewind(1, exclude_tool_call_id="tRW")], [], PROTECT, branch, create)
        assert create[0].mode == "legacy-run" and create[0].remove
        msgs2, branch2 = turn(True)
        advanced: list[RewindDiag] = []
        filter_pipeline(msgs2, [rewind(1, exclude_tool_call_id="tRW")], [], PROTECT, branch2, advanced)
        assert advanced[0].mode == "legacy-noop-advanced" and advanced[0].remove == ()


class TestEndToEnd:
    def test_a_last_turn_rewind_lets_the_agent_see_its_redo(self) -> None:
        """BUG-002: the redo after a last_turn rewind used to be hidden on every fire (infinite loop)."""
        h = Harness({})
        h.add(
            user("task"),
            assistant(call("bad", "bash", command="find /")),
            result("bad", "noise" * 100, "bash"),
        )
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_turn"}, "rw")
        h.add(assistant(call("good", "read", path="x")), result("good", "useful", "read"))
        view = h.view()
        assert has_call(view, "good") and not has_call(view, "bad")
        h.add(assistant(call("more", "read", path="y")), result("more", "also useful", "read"))
        view = h.view()
        assert has_call(view, "good") and has_call(view, "more") and not has_call(view, "bad")

    def test_a_group_rewind_does_not_leak_back_after_more_tool_work(self) -> None:
        """BUG-001: the hidden group came back (and new work vanished) once the agent used tools again."""
        h = Harness({})
        h.add(user("task"), assistant(call("bad", "read", path="huge")), result("bad", "H" * 1000, "read"))
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        for i in range(3):
            h.add(assistant(call(f"w{i}", "read", path=f"f{i}")), result(f"w{i}", "ok", "read"))
            view = h.view()
            assert not has_call(view, "bad") and all(has_call(view, f"w{j}") for j in range(i + 1))

    def test_a_checkpoint_labels_the_last_message_not_a_marker_leaf(self) -> None:
        """BUG-003 (first round): the label landed on a non-message leaf and the rewind hid nothing."""
        h = Harness({})
        h.add(user("task"), assistant(call("c", "read", path="a")), result("c", "A", "read"))
        h.turn_end(0)  # a turn-metric custom entry is now the leaf
        h.command("mulligan_checkpoint", "before")
        assert h.session.labels == {h.session.all[2].id: "mulligan:checkpoint:before"}
        h.add(
            user("now try the risky thing"),
            assistant(call("r", "bash", command="rm -rf x")),
            result("r", "done", "bash"),
        )
        out = h.call_tool(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "before"}, "rw"
        )
        assert out.details["k"] == 3
        assert [text_of(m) for m in h.view()[:3]] == ["task", "", "A"] and not has_call(h.view(), "r")

    def test_the_drift_window_is_a_turn_boundary_not_ten_minutes(self) -> None:
        """Round 2: a marker from an earlier turn must not silence the nudge for later turns."""
        h = Harness({})
        h.add(user("u"))
        h.session.custom_entry(
            "mulligan:shrink",
            {"kind": "shrink", "id": "s", "seq": 1, "ts": 1500, "target": {}, "replacement": "r"},
        )
        for turn_index, ts in enumerate([1000, 2000, 3000]):
            h.session.custom_entry(
                "mulligan:turn-metric",
                {
                    "kind": "turn-metric",
                    "deltaTokens": 9000,
                    "turnIndex": turn_index,
                    "seq": 10 + turn_index,
                    "ts": ts,
                },
            )
        assert any(getattr(m, "custom_type", "") == "mulligan:nudge" for m in h.view())
