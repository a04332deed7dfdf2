"""The audit: the report's exact format, its helpers, and the ``mulligan_audit`` tool."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.extensions.api import (
    CustomMessage,
    LabelEntry,
    SessionEntry,
    TextContent,
    ThinkingContent,
    message_bytes,
    replace,
)
from caddie.extensions.bundled.mulligan.audit import (
    AuditRow,
    build_call_lookup,
    describe_message,
    list_checkpoints,
    render_audit_report,
)
from caddie.extensions.bundled.mulligan.markers import MarkerBundle, RewindMarker, ShrinkMarker
from caddie.extensions.bundled.mulligan.tools.audit import AUDIT_DESCRIPTION
from tests.mulligan.fakehost import NOTE, Harness, assistant, assistant_text, call, result, result_text, user

PROTECT = ("first:user", "latest:user")


def report(**overrides: Any) -> str:
    args: dict[str, Any] = {
        "total_tokens": 0,
        "confidence": "low",
        "markers": MarkerBundle(),
        "checkpoint_names": [],
        "protected_roles": PROTECT,
        "rows": [],
        "view_size": 0,
    }
    args.update(overrides)
    return render_audit_report(**args)


class TestReport:
    def test_the_full_report(self) -> None:
        rows = [
            AuditRow(9412, "toolResult", "read src/big.log", True, 8192),
            AuditRow(1840, "assistant", "(thinking + toolCall x2)", False, 8192),
            AuditRow(612, "toolResult", 'grep "auth"', False, 8192),
        ]
        text = report(
            total_tokens=12340,
            confidence="medium",
            markers=MarkerBundle((RewindMarker(granularity="last_tool_call_group"),)),
            checkpoint_names=["before-x", "before-y"],
            rows=rows,
            view_size=3,
        )
        assert text.split("\n") == [
            "## Mulligan audit — context you are currently carrying",
            "Total (filtered): ~12340 tokens  (estimate, confidence: medium)",
            "Active markers: 1 rewind (last_tool_call_group), 0 shrink, 2 checkpoints [before-x, before-y] (user-set)",
            "Protected: will not rewind past first:user/latest:user.",
            "",
            "Top messages by size:",
            "    9412  toolResult  read src/big.log  ⚠ above bloat threshold (8 KB)",
            "    1840  assistant   (thinking + toolCall x2)",
            '     612  toolResult  grep "auth"',
            "",
            "Suggestion: the `read src/big.log` result is the largest contributor. Consider mulligan_shrink.",
        ]

    def test_one_checkpoint_is_singular(self) -> None:
        text = report(checkpoint_names=["solo"])
        assert (
            "Active markers: 0 rewind, 0 shrink, 1 checkpoint [solo] (user-set)" in text
            and "1 checkpoints" not in text
        )

    def test_an_empty_view(self) -> None:
        lines = report().split("\n")
        assert lines[2:] == [
            "Active markers: 0 rewind, 0 shrink, 0 checkpoints []",
            "Protected: will not rewind past first:user/latest:user.",
            "",
            "No messages in filtered view.",
        ]

    def test_distinct_granularities_in_order(self) -> None:
        rewinds = tuple(RewindMarker(granularity=g) for g in ("last_turn", "checkpoint", "last_turn", None))
        assert "Active markers: 4 rewind (last_turn, checkpoint), 2 shrink," in report(
            markers=MarkerBundle(rewinds, (ShrinkMarker(), ShrinkMarker()))
        )

    @pytest.mark.parametrize(
        ("cancelled", "clause"), [(1, ", 1 cancelled (retired)"), (3, ", 3 cancelled (retired)"), (0, "")]
    )
    def test_the_cancelled_clause(self, cancelled: int, clause: str) -> None:
        text = report(markers=MarkerBundle(cancelled_ids=frozenset(f"id{i}" for i in range(cancelled))))
        assert text.split("\n")[2] == "Active markers: 0 rewind, 0 shrink, 0 checkpoints []" + clause

    def test_no_protection(self) -> None:
        assert "Protected: will not rewind past none." in report(protected_roles=())


class TestHelpers:
    def test_a_tool_result_is_named_by_its_call(self) -> None:
        msgs = [assistant(call("c1", "read", path="src/" + "x" * 60), call("c2", "bash", command="ls -la"))]
        lookup = build_call_lookup(msgs)
        assert set(lookup) == {"c1", "c2"}
        assert describe_message(result("c1", tool_name="read"), lookup) == "read src/" + "x" * 35 + "…"
        assert describe_message(result("c2", tool_name="bash"), lookup) == "bash ls -la"
        assert describe_message(result("zz", tool_name="grep"), lookup) == "grep"

    def test_argument_keys_in_priority_order(self) -> None:
        lookup = build_call_lookup([assistant(call("c", "x", pattern="p", query="q", command=""))])
        assert describe_message(result("c", tool_name="x"), lookup) == "x q"

    def test_assistant_messages_are_summarised_by_block(self) -> None:
        calls = assistant(call("a"), call("b"))
        msg = replace(
            calls, content=[ThinkingContent("t"), *calls.content, TextContent("x"), TextContent("y")]
        )
        assert describe_message(msg, {}) == "(thinking + toolCall x2 + text x2)"
        assert describe_message(assistant_text("x"), {}) == "(text)"
        assert describe_message(assistant(), {}) == "(assistant)"

    def test_user_messages_show_a_snippet(self) -> None:
        assert describe_message(user("  fix   the\nbug  "), {}) == 'user "fix the bug"'
        assert describe_message(user("y" * 50), {}) == 'user "' + "y" * 39 + '…"'
        assert describe_message(user("   "), {}) == "user"

    def test_custom_and_other_messages(self) -> None:
        from caddie.extensions.api import BashExecutionMessage

        assert describe_message(CustomMessage("mulligan:note", "n"), {}) == "mulligan:note"
        assert describe_message(BashExecutionMessage("ls", "", 0), {}) == "bashExecution"

    def test_message_bytes(self) -> None:
        assert message_bytes(user("é€")) == 5 and message_bytes(result("c", "abc")) == 3

    def test_checkpoints_latest_label_wins_per_target(self) -> None:
        def label(i: str, target: str, value: str | None) -> SessionEntry:
            return LabelEntry(i, None, "t", target, value)

        p = "mulligan:checkpoint:"
        entries = [
            label("1", "A", p + "a"),
            label("2", "B", p + "b"),
            label("3", "A", None),
            label("4", "C", "other"),
        ]
        assert list_checkpoints(entries) == ["b"]
        assert list_checkpoints([*entries, label("5", "A", p + "a")]) == ["a", "b"]  # first-set order
        assert list_checkpoints([label("1", "A", p + "x"), label("2", "B", p + "x")]) == ["x"]


@pytest.fixture
def h() -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("c1", "read", path="src/big.log")), result("c1", "L" * 30000, "read"))
    h.add(assistant(call("c2", "bash", command="make")), result("c2", "ok", "bash"))
    return h


def audit(h: Harness, **params: Any) -> Any:
    return h.execute("mulligan_audit", params)


class TestTool:
    def test_registration(self) -> None:
        tool = Harness().tool("mulligan_audit")
        assert (tool.name, tool.label, tool.description) == (
            "mulligan_audit",
            "Mulligan Audit",
            AUDIT_DESCRIPTION,
        )
        assert tool.parameters == {
            "type": "object",
            "properties": {
                "top": {
                    "type": "number",
                    "description": "Report only the top N messages by token size. Default 8.",
                }
            },
        }

    def test_the_cached_view_is_what_the_model_saw(self, h: Harness) -> None:
        h.fire()
        h.host.calls.clear()
        out = audit(h)
        assert out.details["source"] == "cached" and out.details["confidence"] == "medium"
        assert "get_context_usage" not in h.host.calls
        assert out.details["totalTokens"] == h.rt.tokens.estimate(h.rt.last_filtered)

    def test_before_any_inference_it_runs_the_pipeline(self, h: Harness) -> None:
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        h.host.calls.clear()
        out = audit(h)
        assert out.details["source"] == "fallback" and out.details["confidence"] == "low"
        assert "bash make" not in result_text(out)  # the rewound call is not in the view
        assert "get_context_usage" not in h.host.calls

    def test_the_confidence_knob(self) -> None:
        h = Harness({"audit": {"estimateConfidence": "high"}})
        h.add(user("u"))
        h.fire()
        assert audit(h).details["confidence"] == "high"

    def test_top(self, h: Harness) -> None:
        assert len(audit(h, top=2).details["top"]) == 2
        assert len(audit(h).details["top"]) == 5
        assert len(audit(h, top=0).details["top"]) == 5
        assert len(audit(h, top=1.9).details["top"]) == 1
        assert audit(h, top=1).details["totalTokens"] == audit(h).details["totalTokens"]

    def test_rows_and_bloat_flags(self, h: Harness) -> None:
        out = audit(h)
        top = out.details["top"][0]
        assert top == {
            "tokens": 7500,
            "role": "toolResult",
            "label": "read src/big.log",
            "bloaty": True,
            "thresholdBytes": 24576,
        }
        assert "    7500  toolResult  read src/big.log  ⚠ above bloat threshold (24 KB)" in result_text(out)
        assert "Suggestion: the `read src/big.log` result is the largest contributor." in result_text(out)

    @pytest.mark.parametrize(
        ("tool", "size", "flag"),
        [
            ("bash", 15000, None),
            ("bash", 40000, "16 KB"),
            ("read", 18000, None),
            ("read", 25000, "24 KB"),
            ("grep", 17000, "16 KB"),
        ],
    )
    def test_per_tool_thresholds(self, tool: str, size: int, flag: str | None) -> None:
        h = Harness({})
        h.add(user("u"), assistant(call("c", tool, path="p")), result("c", "x" * size, tool))
        text = result_text(audit(h))
        if flag is None:
            assert "⚠" not in text
        else:
            assert f"⚠ above bloat threshold ({flag})" in text

    def test_a_big_user_message_uses_the_global_threshold(self) -> None:
        h = Harness({})
        h.add(user("x" * 17000))
        assert (
            'user "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"  ⚠ above bloat threshold (16 KB)'
            in result_text(audit(h))
        )

    def test_markers_checkpoints_and_cancels_are_listed(self, h: Harness) -> None:
        h.command("mulligan_checkpoint", "cp")
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "c1"}, "replacement": "s"})
        h.mulligan.writer(h.ctx).cancel("ghost-1")
        out = audit(h)
        assert (
            "Active markers: 1 rewind (last_tool_call_group), 1 shrink, 1 checkpoint [cp] (user-set), 1 cancelled (retired)"
            in result_text(out)
        )
        assert {k: out.details[k] for k in ("nRewinds", "nShrinks", "nCheckpoints", "nCancelled")} == {
            "nRewinds": 1,
            "nShrinks": 1,
            "nCheckpoints": 1,
            "nCancelled": 1,
        }

    def test_a_cancelled_rewind_leaves_its_bucket_and_is_counted_once(self, h: Harness) -> None:
        h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
        h.execute("mulligan_cancel", {"markerId": h.custom_entries("mulligan:rewind")[0].id})
        out = audit(h)
        assert (out.details["nRewinds"], out.details["nCancelled"]) == (0, 1)

    def test_it_never_writes(self, h: Harness) -> None:
        audit(h)
        h.fire()
        audit(h)
        assert h.host.writes == []

    def test_an_empty_context(self) -> None:
        out = audit(Harness({}))
        assert result_text(out).endswith("\n\nNo messages in filtered view.") and out.details["top"] == []

    @pytest.mark.parametrize("failing", ["context_entries", "entries"])
    def test_failures_become_a_failure_text(self, h: Harness, failing: str) -> None:
        h.host.fail[failing] = RuntimeError("boom")
        out = audit(h)
        assert result_text(out) == "Mulligan: audit failed — boom"
        assert out.details == {
            "totalTokens": 0,
            "confidence": "low",
            "source": "fallback",
            "nRewinds": 0,
            "nShrinks": 0,
            "nCheckpoints": 0,
            "nCancelled": 0,
            "top": [],
            "error": "boom",
        }

    def test_switched_off_it_refuses_with_zeroed_details(self) -> None:
        h = Harness({"enabled": False})
        out = audit(h)
        assert result_text(out) == "Mulligan: refused — Mulligan is disabled."
        assert out.details["totalTokens"] == 0 and "error" not in out.details
        h.configure({"enabled": True})
        assert result_text(audit(h)).startswith("## Mulligan audit")
