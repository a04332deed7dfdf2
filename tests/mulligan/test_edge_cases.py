"""The edge cases E1–E27 of the specification, one class each, driven through the fake host."""

from __future__ import annotations

import json

from caddie.extensions.api import (
    AgentMessage,
    ContextUsage,
    CustomMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from caddie.extensions.bundled.mulligan.tools.rewind import MUTATION_WARNING
from caddie.extensions.bundled.mulligan.transforms import (
    Unit,
    filter_pipeline,
    partition_into_units,
    protected_ok,
    resolve_last_tool_call_group,
    resolve_last_turn,
)
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, result, result_text, text_of, user
from tests.mulligan.helpers import PROTECT, checkpoint_label, entries, entry, is_stamped, rewind, shrink

LCG = {"note": NOTE, "granularity": "last_tool_call_group"}


def session(*extra: object) -> Harness:
    h = Harness({})
    h.add(user("task"), assistant(call("c1", "read", path="a.ts")), result("c1", "A" * 50, "read"))
    return h


def results_of(msgs: list) -> set[str]:  # type: ignore[type-arg]
    return {m.tool_call_id for m in msgs if isinstance(m, ToolResultMessage)}


class TestE1OrphanResult:
    def test_an_orphan_is_its_own_plain_unit(self) -> None:
        assert partition_into_units([user("u"), result("orphan")])[1] == Unit((1,), "plain")

    def test_a_rewind_of_a_group_leaves_a_following_orphan(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("a"), result("a"), result("orphan")]
        remove = resolve_last_tool_call_group(partition_into_units(msgs), msgs)
        assert remove == (1, 2)


class TestE2ExecutingTurn:
    def test_the_rewinds_own_group_is_never_the_target(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("prev"), result("prev"), assistant("rw")]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs, "rw") == (1, 2)
        assert (
            resolve_last_tool_call_group(partition_into_units(msgs[:1] + msgs[3:]), msgs[:1] + msgs[3:], "rw")
            is None
        )

    def test_the_marker_excludes_the_calling_tool_call(self) -> None:
        h = session()
        h.call_tool("mulligan_rewind", LCG, "call-abc")
        assert h.markers_data("mulligan:rewind")[0]["excludeToolCallId"] == "call-abc"


class TestE3Protected:
    def test_the_first_user_message_cannot_be_removed(self) -> None:
        msgs: list[AgentMessage] = [user("task"), assistant("c"), result("c")]
        assert not protected_ok(msgs, [0, 1], PROTECT) and protected_ok(msgs, [1, 2], PROTECT)

    def test_only_a_checkpoint_rewind_removes_later_user_messages(self) -> None:
        msgs: list[AgentMessage] = [
            user("task"),
            assistant("a"),
            result("a"),
            user("second"),
            assistant("b"),
            result("b"),
        ]
        assert 3 not in resolve_last_turn(msgs)
        branch = [entry("e0"), checkpoint_label("L", "e0", "cp"), *entries("e1", "e2", "e3", "e4", "e5")]
        out = filter_pipeline(msgs, [rewind(1, "checkpoint", checkpoint="cp")], [], PROTECT, branch)
        assert [m.role for m in out] == ["user"]


class TestE4MaxDepth:
    def test_the_sixth_active_rewind_is_refused(self) -> None:
        h = session()
        for i in range(5):
            h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_turn"}, f"r{i}")
            h.add(user(f"prompt {i}"))
        text = result_text(h.execute("mulligan_rewind", LCG))
        assert text.startswith(
            "Mulligan: refused — max rewind depth (5) reached — 5 active rewind marker(s)."
        )


class TestE5SideEffects:
    def test_the_note_lists_them_and_the_result_warns(self) -> None:
        h = Harness({})
        h.add(
            user("u"), assistant(call("w", "bash", command="rm -rf build && echo x > out.txt")), result("w")
        )
        text = result_text(h.call_tool("mulligan_rewind", LCG, "rw"))
        assert text.endswith(MUTATION_WARNING)
        note = h.notes()[0].content
        assert isinstance(note, str)
        assert "<files-modified>\nout.txt\n</files-modified>" in note  # "build" is not path-like
        assert "<bash-side-effects>\nrm -rf build && echo x > out.txt\n</bash-side-effects>" in note

    def test_the_warning_is_configurable(self) -> None:
        h = Harness({"rewind": {"requireMutationWarning": False}})
        h.add(user("u"), assistant(call("w", "write", path="a")), result("w"))
        assert MUTATION_WARNING not in result_text(h.call_tool("mulligan_rewind", LCG, "rw"))


class TestE6ParallelTools:
    def test_a_shared_message_is_kept_whole(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("sib", "rw"), result("sib"), result("rw")]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs, "rw") is None
        msgs2: list[AgentMessage] = [user("u"), assistant("prev"), result("prev"), *msgs[1:]]
        assert resolve_last_tool_call_group(partition_into_units(msgs2), msgs2, "rw") == (1, 2)
        assert resolve_last_turn(msgs2, "rw") == [1, 2]


class TestE7CompactionLeak:
    def test_content_compacted_into_the_summary_stays_visible(self) -> None:
        msgs: list[AgentMessage] = [
            UserMessage("summary mentions the hidden read"),
            assistant("x"),
            result("x"),
        ]
        branch = [*entries("e_hidden_a", "e_hidden_r"), entry("c", "compaction"), *entries("ea", "er")]
        out = filter_pipeline(msgs, [rewind(1, hide=["e_hidden_a", "e_hidden_r"])], [], PROTECT, branch)
        assert out is msgs


class TestE8TargetsNothing:
    def test_an_absent_checkpoint_and_an_unmatched_shrink_return_the_same_list(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        assert (
            filter_pipeline(
                msgs, [rewind(1, "checkpoint", checkpoint="gone")], [], PROTECT, entries("a", "b", "c")
            )
            is msgs
        )
        assert filter_pipeline(msgs, [], [shrink(1, {"by_tool_call_id": "zz"}, "r")], PROTECT) is msgs

    def test_an_unmatched_shrink_is_recorded_and_matches_later(self) -> None:
        h = session()
        assert "Matched: no." in result_text(
            h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "later"}, "replacement": "s"})
        )
        h.add(assistant("later"), result("later", "big"))
        assert is_stamped(h.view()[-1], "s")


class TestE9EmptyNote:
    def test_each_blank_field_is_refused_and_nothing_is_written(self) -> None:
        h = session()
        for field in ("what_happened", "true_current_state", "next"):
            out = h.execute("mulligan_rewind", {"note": {**NOTE, field: " "}, "granularity": "last_turn"})
            assert result_text(out) == "Mulligan: refused — note fields must all be non-empty."
        assert h.host.writes == []


class TestE10CheckpointNames:
    def test_invalid_names_missing_names_and_unknown_checkpoints(self) -> None:
        h = session()
        h.command("mulligan_checkpoint", "Bad Name")
        assert "invalid checkpoint name 'Bad Name'" in h.host.ui.notifications[-1][0]
        missing = h.execute("mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": ""})
        assert (
            result_text(missing) == "Mulligan: refused — checkpoint granularity requires a checkpoint name."
        )
        unknown = h.execute(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "nope"}
        )
        assert result_text(unknown) == "Mulligan: refused — checkpoint 'nope' not found on this branch."
        h.command("mulligan_checkpoint", "good-name_1")
        ok = h.call_tool(
            "mulligan_rewind", {"note": NOTE, "granularity": "checkpoint", "checkpoint": "good-name_1"}, "r"
        )
        assert result_text(ok).startswith("Mulligan: rewound checkpoint.")


class TestE11Reload:
    def test_markers_persist_and_control_state_resets(self) -> None:
        h = session()
        h.call_tool("mulligan_rewind", LCG, "rw")
        h.turn_end(0)
        view = h.view()
        h.session_start("reload")
        assert h.rt.token_baseline is None and h.rt.last_filtered is None
        assert h.view() == view
        h.turn_end(1)
        assert h.markers_data("mulligan:turn-metric")[-1]["deltaTokens"] is None


class TestE12NoContextUsage:
    def test_guards_skip_and_the_metric_falls_back_to_zero(self) -> None:
        h = session()
        h.host.usage = None
        assert not any(
            isinstance(m, CustomMessage) and m.custom_type == "mulligan:high-water" for m in h.view()
        )
        h.rt.last_filtered = None
        h.turn_end(0)
        assert h.rt.token_baseline == 0
        assert result_text(h.call_tool("mulligan_rewind", LCG, "rw")).startswith("Mulligan: rewound")


class TestE13FailOpen:
    def test_tools_answer_and_handlers_pass_through_when_the_host_breaks(self) -> None:
        h = session()
        messages = h.session.context_messages()
        h.host.fail.update(
            branch=RuntimeError("x"),
            entries=RuntimeError("x"),
            context_entries=RuntimeError("x"),
            append_entry=RuntimeError("x"),
        )
        assert h.fire(messages) is None
        for name, params in [
            ("mulligan_rewind", LCG),
            ("mulligan_shrink", {"target": {"by_tool_call_id": "c1"}, "replacement": "s"}),
            ("mulligan_cancel", {"markerId": "x"}),
            ("mulligan_audit", {}),
        ]:
            assert result_text(h.execute(name, params))
        h.host.fail["session_id"] = RuntimeError("x")
        assert h.tool_result_event("bash", []) is None
        h.turn_end(0)


class TestE14Disabled:
    def test_the_whole_extension_is_inert(self) -> None:
        h = Harness({"enabled": False})
        h.add(user("u"), assistant("c"), result("c", "x" * 99999, "bash"))
        assert h.fire() is None and h.tool_result_event("bash", result("c", "x" * 99999).content) is None
        h.turn_end(0)
        assert h.custom_entries() == []
        for name in ("mulligan_rewind", "mulligan_shrink", "mulligan_cancel", "mulligan_audit"):
            assert result_text(h.execute(name, {})) == "Mulligan: refused — Mulligan is disabled."

    def test_sub_switches_keep_their_own_texts(self) -> None:
        h = Harness({"rewind": {"enabled": False}, "shrink": {"enabled": False}})
        assert result_text(h.execute("mulligan_rewind", LCG)) == "Mulligan: refused — rewind is disabled."
        shrunk = h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "c"}, "replacement": "s"})
        assert result_text(shrunk) == "Mulligan: refused — shrink is disabled."


class TestE15Accumulation:
    def test_stale_and_excess_shrinks_are_retired_and_checkpoints_consumed(self) -> None:
        h = Harness({"shrink": {"maxActive": 1, "staleAfterFires": 1}})
        h.add(user("u"))
        w = h.mulligan.writer(h.ctx)
        w.shrink({"target": {}, "replacement": "a", "pinnedEntryId": "gone"})
        w.shrink({"target": {}, "replacement": "b"})
        h.fire()
        first = h.markers_data("mulligan:shrink")[0]["id"]
        assert [d["targetId"] for d in h.markers_data("mulligan:cancel")] == [first, first]


class TestE16AuditFirst:
    def test_before_any_inference_the_audit_is_low_confidence(self) -> None:
        out = session().execute("mulligan_audit", {})
        assert (out.details["source"], out.details["confidence"]) == ("fallback", "low")


class TestE17TwoShrinks:
    def test_the_higher_seq_wins_whatever_the_order(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c", "BIG")]
        out = filter_pipeline(
            msgs,
            [],
            [shrink(5, {"by_tool_call_id": "c"}, "newer"), shrink(2, {"by_tool_call_id": "c"}, "older")],
            PROTECT,
        )
        assert is_stamped(out[2], "newer")


class TestE18AdvisoryNudges:
    def test_nudges_are_only_text(self) -> None:
        h = session()
        patch = h.tool_result_event("bash", result("c", "x" * 20000).content)
        assert patch is not None and patch.content is not None
        last = patch.content[-1]
        assert isinstance(last, TextContent) and "`mulligan_shrink` to summarize" in last.text


class TestE19ShrinkAUserMessage:
    def test_the_role_is_kept_and_the_original_stays_on_disk(self) -> None:
        h = Harness({})
        h.add(user("a giant pasted log " + "z" * 1000))
        h.execute(
            "mulligan_shrink", {"target": {"by_content_includes": "giant pasted"}, "replacement": "the log"}
        )
        view = h.view()
        assert isinstance(view[0], UserMessage) and is_stamped(view[0], "the log")
        assert text_of(h.session.context_messages()[0]).startswith("a giant pasted log")


class TestE20Ordering:
    def test_the_marker_is_appended_before_the_note(self) -> None:
        h = session()
        h.call_tool("mulligan_rewind", LCG, "rw")
        assert h.host.writes == ["append_entry", "send_message"]


class TestE21Retraction:
    def test_cancel_restores_the_content_and_the_audit_counts_it(self) -> None:
        h = session()
        h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "c1"}, "replacement": "s"})
        h.execute("mulligan_cancel", {"target": {"by_tool_call_id": "c1"}})
        assert text_of(h.view()[2]) == "A" * 50
        assert "1 cancelled (retired)" in result_text(h.execute("mulligan_audit", {}))
        assert result_text(h.execute("mulligan_cancel", {"markerId": "nothing"})).endswith(
            "nothing to cancel."
        )


class TestE22RetryLoop:
    def test_budget_fraction_and_drift_mute(self) -> None:
        h = Harness({"rewind": {"maxRetriesPerPrompt": 1}})
        h.add(user("u"))
        h.call_tool("mulligan_rewind", LCG, "r1")
        h.turn_end(2)
        assert "per-prompt retry budget (1/1" in result_text(h.execute("mulligan_rewind", LCG))
        assert h.rt.rewind_refused_turn_index == 2
        h.add(user("new prompt"))
        h.host.usage = ContextUsage(None, 10, None)
        assert "context is at" in result_text(h.execute("mulligan_rewind", LCG))


class TestE23CheckpointIsHumanOnly:
    def test_there_is_no_checkpoint_tool(self) -> None:
        h = session()
        assert (
            "mulligan_checkpoint" in h.extension.commands and "mulligan_checkpoint" not in h.extension.tools
        )


class TestE24PinnedHideUnderCompaction:
    def test_retained_tail_pins_stay_hidden_compacted_head_pins_leak(self) -> None:
        msgs: list[AgentMessage] = [
            UserMessage("summary"),
            assistant("b"),
            result("b"),
            assistant("c"),
            result("c"),
        ]
        branch = [*entries("ea", "er"), entry("k", "compaction"), *entries("eb", "ebr", "ec", "ecr")]
        out = filter_pipeline(msgs, [rewind(1, hide=["ea", "er", "eb", "ebr"])], [], PROTECT, branch)
        assert results_of(out) == {"c"} and len(out) == 3


class TestE25RedundantShrink:
    def test_a_repeat_content_shrink_matches_nothing(self) -> None:
        h = session()
        h.execute("mulligan_shrink", {"target": {"by_content_includes": "AAAA"}, "replacement": "a's"})
        h.fire()
        h.rt.last_filtered = None
        again = h.execute(
            "mulligan_shrink", {"target": {"by_content_includes": "AAAA"}, "replacement": "a's"}
        )
        assert "Matched: yes." in result_text(
            again
        )  # the snapshot is the unfiltered session: still matches there
        view = h.view()
        assert sum(is_stamped(m, "a's") for m in view) == 1  # but only one message is ever stamped


class TestE26Banner:
    def test_an_armed_checkpoint_is_always_on_screen(self) -> None:
        h = session()
        h.command("mulligan_checkpoint", "cp")
        h.host.ui.widgets.clear()
        h.fire()
        assert h.host.ui.widgets["mulligan:active-checkpoint"]


class TestE27StringParameters:
    def test_object_parameters_may_arrive_as_json_strings(self) -> None:
        h = session()
        out = h.execute(
            "mulligan_shrink", {"target": json.dumps({"by_tool_call_id": "c1"}), "replacement": "s"}
        )
        assert "Matched: yes." in result_text(out)
        out = h.call_tool(
            "mulligan_rewind", {"note": json.dumps(NOTE), "granularity": "last_tool_call_group"}, "rw"
        )
        assert result_text(out).startswith("Mulligan: rewound")
