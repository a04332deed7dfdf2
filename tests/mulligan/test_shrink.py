"""``mulligan_shrink``: refusals, matching and pinning, the persisted marker, the operator echo, the result."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.extensions.bundled.mulligan.tools.shrink import SHRINK_DESCRIPTION, shrink_orientation_line
from tests.mulligan.fakehost import Harness, assistant, call, result, result_text, user

ORIENTATION = "Continue exactly where you left off — no re-verification or re-reading is needed."


def refused(reason: str) -> str:
    return f"Mulligan: refused — {reason}."


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("r1", "read", path="a")), result("r1", "FIRST " * 10, "read"))
    h.add(assistant(call("r2", "read", path="b")), result("r2", "SECOND " * 10, "read"))
    return h


def shrink(h: Harness, target: Any, replacement: str = "summary", **extra: Any) -> Any:
    return h.execute("mulligan_shrink", {"target": target, "replacement": replacement, **extra})


def test_registration() -> None:
    tool = Harness().tool("mulligan_shrink")
    assert (tool.name, tool.label, tool.description) == (
        "mulligan_shrink",
        "Mulligan Shrink",
        SHRINK_DESCRIPTION,
    )
    assert SHRINK_DESCRIPTION == (
        "Replace a specific past tool result with a compact summary you provide, in your view, going forward. "
        "Use when the call was fine but its output is too big to keep carrying. Unlike rewind, the call stays in "
        "context (just with your summary as its result)."
    )
    target = tool.parameters["properties"]["target"]
    assert (
        target["description"]
        == "How to identify the message to shrink. Resolved live each turn (robust to compaction)."
    )
    assert [arm["required"] for arm in target["anyOf"]] == [
        ["by_tool_call_id"],
        ["by_tool_name", "occurrence"],
        ["by_content_includes"],
    ]
    assert tool.parameters["required"] == ["target", "replacement"]


class TestRefusals:
    @pytest.mark.parametrize(
        ("settings", "reason"),
        [
            ({"enabled": False}, "Mulligan is disabled"),
            ({"shrink": {"enabled": False}}, "shrink is disabled"),
        ],
    )
    def test_switches(self, settings: dict[str, Any], reason: str) -> None:
        h = Harness(settings)
        out = shrink(h, {"by_tool_call_id": "r1"})
        assert result_text(out) == refused(reason) and out.details == {} and h.host.writes == []

    @pytest.mark.parametrize("replacement", ["", "   ", "\t\n", None, 5])
    def test_a_blank_replacement(self, h: Harness, replacement: Any) -> None:
        out = shrink(h, {"by_tool_call_id": "r1"}, replacement)
        assert result_text(out) == refused("replacement must be non-empty") and h.host.writes == []

    @pytest.mark.parametrize(
        "target",
        [
            {"by_tool_call_id": ""},
            {"by_tool_call_id": "  "},
            {"by_tool_name": "", "occurrence": "last"},
            {"by_tool_name": " ", "occurrence": "last"},
            {"by_content_includes": ""},
            {"by_content_includes": "\n"},
            {"by_tool_call_id": "", "by_tool_name": "read"},
            {},
            None,
            "r1",
        ],
    )
    def test_a_target_without_a_usable_discriminator(self, h: Harness, target: Any) -> None:
        out = shrink(h, target)
        assert result_text(out) == refused("target discriminator must be non-empty") and out.details == {}
        assert h.host.writes == []


class TestMatching:
    @pytest.mark.parametrize(
        ("target", "entry_index"),
        [
            ({"by_tool_call_id": "r1"}, 2),
            ({"by_tool_name": "read", "occurrence": "last"}, 4),
            ({"by_tool_name": "read", "occurrence": "first"}, 2),
            ({"by_content_includes": "SECOND"}, 4),
        ],
    )
    def test_a_match_is_pinned_to_its_entry(
        self, h: Harness, target: dict[str, str], entry_index: int
    ) -> None:
        out = shrink(h, target)
        data = h.markers_data("mulligan:shrink")[0]
        assert out.details == {"matched": True, "markerId": h.custom_entries("mulligan:shrink")[0].id}
        assert result_text(out).startswith("Mulligan: shrink recorded. Matched: yes.\n")
        assert data == {
            "target": target,
            "replacement": "summary",
            "pinnedEntryId": h.session.all[entry_index].id,
            "schema": "pi-mulligan",
            "v": 1,
            "kind": "shrink",
            "id": data["id"],
            "seq": 1,
            "ts": data["ts"],
        }

    @pytest.mark.parametrize("target", [{"by_tool_call_id": "nope"}, {"by_content_includes": "not there"}])
    def test_no_match_is_still_recorded_unpinned(self, h: Harness, target: dict[str, str]) -> None:
        out = shrink(h, target)
        assert out.details["matched"] is False and "Matched: no." in result_text(out)
        assert "pinnedEntryId" not in h.markers_data("mulligan:shrink")[0]

    def test_a_reason_is_kept_when_given(self, h: Harness) -> None:
        shrink(h, {"by_tool_call_id": "r1"}, reason="too long")
        shrink(h, {"by_tool_call_id": "r2"})
        first, second = h.markers_data("mulligan:shrink")
        assert first["reason"] == "too long" and "reason" not in second

    def test_a_broken_snapshot_records_an_unmatched_shrink(self, h: Harness) -> None:
        h.host.fail["context_entries"] = RuntimeError("boom")
        out = shrink(h, {"by_tool_call_id": "r1"})
        assert out.details["matched"] is False and len(h.markers_data("mulligan:shrink")) == 1

    def test_the_shrink_applies_from_the_next_inference(self, h: Harness) -> None:
        shrink(h, {"by_tool_call_id": "r1"}, "two lines of summary")
        view = h.view()
        assert view[2].content[0].text == "<context-shrunk>\ntwo lines of summary\n</context-shrunk>"  # type: ignore[union-attr]


class TestResultText:
    def test_the_orientation_line_texts(self) -> None:
        assert shrink_orientation_line(1, 998) == (
            "Context updated: 1 result(s) summarized (~998 tokens shed). " + ORIENTATION
        )
        assert (
            shrink_orientation_line(3, 12)
            == "Context updated: 3 result(s) summarized (~12 tokens shed). " + ORIENTATION
        )

    def test_the_net_tokens_shed(self) -> None:
        h = Harness({})
        h.add(user("u"), assistant("c"), result("c", "x" * 4000))
        out = shrink(h, {"by_tool_call_id": "c"}, "7 chars")
        assert result_text(out) == "Mulligan: shrink recorded. Matched: yes.\n" + shrink_orientation_line(
            1, 998
        )

    def test_an_unmatched_shrink_sheds_nothing_yet(self, h: Harness) -> None:
        assert result_text(shrink(h, {"by_tool_call_id": "later"})).endswith(
            "(~0 tokens shed). " + ORIENTATION
        )

    def test_a_replacement_longer_than_the_original_sheds_zero(self) -> None:
        h = Harness({})
        h.add(user("u"), assistant("c"), result("c", "tiny"))
        assert "(~0 tokens shed)" in result_text(shrink(h, {"by_tool_call_id": "c"}, "y" * 400))

    @pytest.mark.parametrize("failing", ["append_entry", "session_id"])
    def test_without_a_persisted_marker_there_is_no_orientation_line(self, h: Harness, failing: str) -> None:
        h.host.fail[failing] = RuntimeError("boom")
        out = shrink(h, {"by_tool_call_id": "r1"})
        assert result_text(out) in (
            "Mulligan: shrink recorded. Matched: yes.",
            "Mulligan: shrink recorded. Matched: no.",
        )
        assert out.details["markerId"] is None

    def test_refusals_have_no_orientation_line(self, h: Harness) -> None:
        assert "Context updated" not in result_text(shrink(h, {"by_tool_call_id": ""}))

    def test_the_result_does_not_echo_the_replacement(self, h: Harness) -> None:
        assert "SECRET-SUMMARY" not in result_text(shrink(h, {"by_tool_call_id": "r1"}, "SECRET-SUMMARY"))


class TestOperatorEcho:
    @pytest.mark.parametrize(
        ("target", "desc"),
        [
            ({"by_tool_call_id": "r1"}, "tool call r1"),
            ({"by_tool_name": "read", "occurrence": "last"}, "read result"),
            ({"by_content_includes": "FIRST " * 10}, 'message containing "' + ("FIRST " * 10)[:40] + '"'),
        ],
    )
    def test_the_human_sees_the_replacement(self, h: Harness, target: dict[str, str], desc: str) -> None:
        shrink(h, target, "the summary")
        assert h.host.ui.notifications == [(f"Shrunk {desc} — replacement:\n<<<\nthe summary\n>>>", "info")]

    def test_without_a_ui_nothing_is_shown(self, h: Harness) -> None:
        h.host.has_ui = False
        shrink(h, {"by_tool_call_id": "r1"})
        assert h.host.ui.notifications == []

    def test_long_replacements_are_capped(self) -> None:
        h = Harness({"shrink": {"notifyMaxChars": 5}})
        h.add(user("u"))
        shrink(h, {"by_tool_call_id": "x"}, "abcdefgh")
        assert (
            h.host.ui.notifications[0][0]
            == "Shrunk tool call x — replacement:\n<<<\nabcde…(8 chars total)\n>>>"
        )

    def test_the_default_cap_is_2048(self, h: Harness) -> None:
        shrink(h, {"by_tool_call_id": "r1"}, "z" * 3000)
        assert h.host.ui.notifications[0][0].endswith("z…(3000 chars total)\n>>>")
