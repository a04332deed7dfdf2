"""``mulligan_cancel``: finding the marker (by entry id or by target), idempotency, the cancel entry."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.extensions.bundled.mulligan.tools.cancel import CANCEL_DESCRIPTION
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, result, result_text, user

NONE_BY_ID = "Mulligan: no active marker found with that id — nothing to cancel."
NONE_BY_TARGET = "Mulligan: no active marker found for that target — nothing to cancel."
ALREADY = "Mulligan: that marker is already cancelled."
DONE = "Mulligan: marker cancelled. The transform will no longer apply from the next turn on."


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("r1", "read", path="a")), result("r1", "alpha content", "read"))
    h.add(assistant(call("r2", "read", path="b")), result("r2", "beta content", "read"))
    return h


def cancel(h: Harness, **params: Any) -> Any:
    return h.execute("mulligan_cancel", params)


def marker_entry(h: Harness, kind: str, index: int = 0) -> Any:
    return h.custom_entries(f"mulligan:{kind}")[index]


def test_registration() -> None:
    tool = Harness().tool("mulligan_cancel")
    assert (tool.name, tool.label, tool.description) == (
        "mulligan_cancel",
        "Mulligan Cancel",
        CANCEL_DESCRIPTION,
    )
    assert CANCEL_DESCRIPTION.startswith("Retract (cancel) a mulligan_rewind or mulligan_shrink marker")
    assert CANCEL_DESCRIPTION.endswith(
        "Cancelling a non-existent or already-cancelled marker is a safe no-op."
    )
    assert tool.parameters["description"] == (
        "Cancel accepts a `target` (preferred) or an explicit `markerId` (fallback). At least one MUST be present."
    )
    assert "required" not in tool.parameters


class TestByMarkerId:
    @pytest.mark.parametrize("kind", ["rewind", "shrink"])
    def test_the_cancel_names_the_markers_uuid_not_its_entry_id(self, h: Harness, kind: str) -> None:
        if kind == "rewind":
            h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        else:
            h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        entry = marker_entry(h, kind)
        out = cancel(h, markerId=entry.id)
        assert result_text(out) == DONE
        cancel_entry = h.custom_entries("mulligan:cancel")[0]
        assert out.details == {"cancelled": True, "markerId": cancel_entry.id}
        data = cancel_entry.data
        assert data == {
            "targetId": entry.data["id"],
            "schema": "pi-mulligan",
            "v": 1,
            "kind": "cancel",
            "seq": data["seq"],
            "ts": data["ts"],
        }

    def test_an_unknown_id_is_a_no_op(self, h: Harness) -> None:
        out = cancel(h, markerId="nope")
        assert (result_text(out), out.details) == (NONE_BY_ID, {"cancelled": False})
        assert h.host.writes == []

    def test_a_marker_without_a_uuid_is_not_found(self, h: Harness) -> None:
        entry_id = h.session.custom_entry("mulligan:shrink", {"kind": "shrink", "seq": 1})
        assert result_text(cancel(h, markerId=entry_id)) == NONE_BY_ID

    def test_a_non_marker_entry_is_not_found(self, h: Harness) -> None:
        assert result_text(cancel(h, markerId=h.session.all[0].id)) == NONE_BY_ID

    def test_cancelling_twice_is_a_no_op(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        entry_id = marker_entry(h, "shrink").id
        cancel(h, markerId=entry_id)
        out = cancel(h, markerId=entry_id)
        assert (result_text(out), out.details) == (ALREADY, {"cancelled": False})
        assert len(h.custom_entries("mulligan:cancel")) == 1

    def test_a_cancel_of_another_marker_does_not_count(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        h.mulligan.writer(h.ctx).cancel("someone-else")
        assert result_text(cancel(h, markerId=marker_entry(h, "shrink").id)) == DONE

    def test_the_marker_id_wins_over_a_target(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s1"})
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r2"}, "replacement": "s2"})
        cancel(h, markerId=marker_entry(h, "shrink", 0).id, target={"by_tool_call_id": "r2"})
        assert h.markers_data("mulligan:cancel")[0]["targetId"] == marker_entry(h, "shrink", 0).data["id"]

    def test_a_marker_id_that_is_not_found_does_not_fall_back_to_the_target(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        assert result_text(cancel(h, markerId="nope", target={"by_tool_call_id": "r1"})) == NONE_BY_ID


class TestByTarget:
    def test_a_shrink_whose_selector_matches_is_retired(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        assert result_text(cancel(h, target={"by_tool_call_id": "r1"})) == DONE

    def test_a_rewind_hiding_the_matched_entry_is_retired(self, h: Harness) -> None:
        h.call_tool(
            "mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw"
        )  # hides r2
        assert result_text(cancel(h, target={"by_tool_call_id": "r2"})) == DONE
        assert len(h.view()) == 8  # everything visible again (plus the rewind's own call, result and note)

    @pytest.mark.parametrize(("occurrence", "covered"), [("last", "r2"), ("first", "r1")])
    def test_tool_name_and_occurrence_are_honoured(self, h: Harness, occurrence: str, covered: str) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s1"})
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r2"}, "replacement": "s2"})
        cancel(h, target={"by_tool_name": "read", "occurrence": occurrence})
        expected = marker_entry(h, "shrink", 0 if covered == "r1" else 1).data["id"]
        assert h.markers_data("mulligan:cancel")[0]["targetId"] == expected

    def test_content_matching(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r2"}, "replacement": "s"})
        assert result_text(cancel(h, target={"by_content_includes": "beta"})) == DONE
        assert result_text(cancel(h, target={"by_content_includes": "gamma"})) == NONE_BY_TARGET

    def test_the_newest_covering_marker_is_retired(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "old"})
        h.execute(
            "mulligan_shrink",
            {"target": {"by_tool_name": "read", "occurrence": "first"}, "replacement": "new"},
        )
        cancel(h, target={"by_tool_call_id": "r1"})
        assert h.markers_data("mulligan:cancel")[0]["targetId"] == marker_entry(h, "shrink", 1).data["id"]
        assert len(h.custom_entries("mulligan:cancel")) == 1

    def test_a_rewind_and_a_shrink_compete_on_seq(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r2"}, "replacement": "s"})
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        cancel(h, target={"by_tool_call_id": "r2"})
        assert h.markers_data("mulligan:cancel")[0]["targetId"] == marker_entry(h, "rewind").data["id"]

    def test_a_message_no_marker_covers_is_a_no_op(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        assert result_text(cancel(h, target={"by_tool_call_id": "r2"})) == NONE_BY_TARGET

    def test_a_target_matching_nothing_is_a_no_op(self, h: Harness) -> None:
        assert result_text(cancel(h, target={"by_tool_call_id": "zz"})) == NONE_BY_TARGET

    def test_an_empty_context_is_a_no_op(self) -> None:
        h = Harness({})
        assert result_text(cancel(h, target={"by_tool_call_id": "r1"})) == NONE_BY_TARGET

    def test_the_newest_covering_marker_already_cancelled_is_reported(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        cancel(h, target={"by_tool_call_id": "r1"})
        out = cancel(h, target={"by_tool_call_id": "r1"})
        assert (result_text(out), out.details) == (ALREADY, {"cancelled": False})

    def test_a_broken_snapshot_is_a_no_op(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        h.host.fail["context_entries"] = RuntimeError("boom")
        assert result_text(cancel(h, target={"by_tool_call_id": "r1"})) == NONE_BY_TARGET

    def test_neither_parameter_reads_as_a_target_no_op(self, h: Harness) -> None:
        out = cancel(h)
        assert (result_text(out), out.details) == (NONE_BY_TARGET, {"cancelled": False})


class TestSafety:
    def test_switched_off_it_refuses(self) -> None:
        h = Harness({"enabled": False})
        out = cancel(h, markerId="x")
        assert (result_text(out), out.details) == ("Mulligan: refused — Mulligan is disabled.", {})

    def test_unreadable_entries_make_it_a_no_op(self, h: Harness) -> None:
        h.host.fail["entries"] = RuntimeError("boom")
        assert result_text(cancel(h, markerId="x")) == NONE_BY_ID

    def test_a_failed_append_still_reports_cancelled(self, h: Harness) -> None:
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "s"})
        entry_id = marker_entry(h, "shrink").id
        h.host.fail["append_entry"] = RuntimeError("disk full")
        out = cancel(h, markerId=entry_id)
        assert (result_text(out), out.details) == (DONE, {"cancelled": True, "markerId": None})
