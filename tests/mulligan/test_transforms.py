"""The pure filter algorithms: units, span resolvers, pinned hides and shrinks, the pipeline."""

from __future__ import annotations

from typing import ClassVar

import pytest

from caddie.extensions.api import AgentMessage, TextContent, ToolResultMessage
from caddie.extensions.bundled.mulligan.transforms import (
    BranchIndexer,
    RewindDiag,
    Unit,
    branch_tail,
    filter_pipeline,
    partition_into_units,
    protected_ok,
    resolve_checkpoint,
    resolve_last_tool_call_group,
    resolve_last_turn,
    resolve_pinned_shrink,
    resolve_shrink_target,
    shrunk_message,
    stable_sort_by_seq,
    stamp_shrink,
    turn_has_advanced,
)
from tests.mulligan.fakehost import assistant, assistant_text, call, custom, result, text_of, user
from tests.mulligan.helpers import (
    PROTECT,
    call_ids,
    checkpoint_label,
    contains,
    entries,
    entry,
    is_stamped,
    result_with,
    rewind,
    shrink,
)


def summary(units: list[Unit]) -> str:
    return " | ".join(f"{u.kind}:{u.indices[0]}:{len(u.indices)}" for u in units)


def assert_groups_paired(messages: list[AgentMessage], units: list[Unit]) -> None:
    for u in units:
        if u.kind == "plain":
            assert len(u.indices) == 1
            continue
        owners = [i for i in u.indices if messages[i].role == "assistant"]
        assert len(owners) == 1
        calls, _ = call_ids([messages[owners[0]]])
        for i in u.indices:
            if i != owners[0]:
                msg = messages[i]
                assert isinstance(msg, ToolResultMessage) and msg.tool_call_id in calls


# --------------------------------------------------------------------------------------------------
# partition_into_units


class TestPartitionIntoUnits:
    def test_a_tool_call_and_its_result_form_one_group_between_plain_messages(self) -> None:
        msgs: list[AgentMessage] = [user("do it"), assistant("c1"), result("c1"), assistant_text("done")]
        units = partition_into_units(msgs)
        assert units == [Unit((0,), "plain"), Unit((1, 2), "toolGroup"), Unit((3,), "plain")]
        assert_groups_paired(msgs, units)

    def test_an_orphan_result_is_its_own_plain_unit(self) -> None:
        assert summary(partition_into_units([user("hi"), result("orphan-1")])) == "plain:0:1 | plain:1:1"

    def test_three_calls_and_three_results_are_one_group(self) -> None:
        msgs: list[AgentMessage] = [assistant("c1", "c2", "c3"), result("c1"), result("c2"), result("c3")]
        assert partition_into_units(msgs) == [Unit((0, 1, 2, 3), "toolGroup")]

    def test_an_assistant_whose_results_have_not_arrived_is_a_group_of_itself(self) -> None:
        assert (
            summary(partition_into_units([user("go"), assistant("pending")])) == "plain:0:1 | toolGroup:1:1"
        )

    def test_two_separate_pairs_are_two_groups(self) -> None:
        msgs: list[AgentMessage] = [assistant("a"), result("a"), assistant("b"), result("b")]
        assert summary(partition_into_units(msgs)) == "toolGroup:0:2 | toolGroup:2:2"

    def test_interleaved_calls_and_results_group_by_call_id(self) -> None:
        units = partition_into_units([assistant("a"), assistant("b"), result("a"), result("b")])
        assert [u.indices for u in units] == [(0, 2), (1, 3)]

    def test_calls_without_an_id_are_not_pairable(self) -> None:
        units = partition_into_units([assistant(call("")), result("x")])
        assert [u.kind for u in units] == ["plain", "plain"]

    def test_a_list_without_tools_is_all_plain_in_order(self) -> None:
        msgs: list[AgentMessage] = [user("a"), assistant_text("b"), custom("mulligan:note"), user("c")]
        assert summary(partition_into_units(msgs)) == "plain:0:1 | plain:1:1 | plain:2:1 | plain:3:1"

    def test_empty_list_has_no_units(self) -> None:
        assert partition_into_units([]) == []

    def test_a_text_assistant_between_groups_stays_plain(self) -> None:
        msgs: list[AgentMessage] = [
            assistant("a"),
            result("a"),
            assistant_text("commentary"),
            assistant("b"),
            result("b"),
        ]
        assert summary(partition_into_units(msgs)) == "toolGroup:0:2 | plain:2:1 | toolGroup:3:2"

    def test_two_results_for_one_call_id_both_join_the_group(self) -> None:
        assert partition_into_units([assistant("dup"), result("dup"), result("dup")]) == [
            Unit((0, 1, 2), "toolGroup")
        ]

    def test_a_result_before_its_assistant_still_pairs(self) -> None:
        assert partition_into_units([result("x"), assistant("x")]) == [Unit((0, 1), "toolGroup")]

    def test_group_indices_are_ascending_whatever_the_result_order(self) -> None:
        assert partition_into_units([assistant("a", "b"), result("b"), result("a")])[0].indices == (0, 1, 2)

    def test_a_duplicate_call_id_belongs_to_the_last_assistant(self) -> None:
        units = partition_into_units([assistant("d"), assistant("d"), result("d")])
        assert summary(units) == "plain:0:1 | toolGroup:1:2"

    def test_representative_mixed_list(self) -> None:
        msgs: list[AgentMessage] = [
            user("please"),
            assistant("c1"),
            result("c1"),
            assistant_text("ok"),
            assistant("c2", "c3"),
        ]
        msgs += [result("c2"), result("c3"), result("orphan")]
        units = partition_into_units(msgs)
        assert summary(units) == "plain:0:1 | toolGroup:1:2 | plain:3:1 | toolGroup:4:3 | plain:7:1"
        assert_groups_paired(msgs, units)

    def test_is_deterministic_and_leaves_its_input_alone(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("a"), result("a")]
        before = list(msgs)
        assert partition_into_units(msgs) == partition_into_units(msgs)
        assert msgs == before


# --------------------------------------------------------------------------------------------------
# resolve_last_tool_call_group


class TestResolveLastToolCallGroup:
    msgs: ClassVar[list[AgentMessage]] = [user("u"), assistant("A"), result("A"), assistant("B"), result("B")]

    def test_without_exclusion_the_last_group_is_returned(self) -> None:
        assert resolve_last_tool_call_group(partition_into_units(self.msgs), self.msgs) == (3, 4)

    def test_the_rewinds_own_group_is_skipped(self) -> None:
        assert resolve_last_tool_call_group(partition_into_units(self.msgs), self.msgs, "B") == (1, 2)

    def test_no_group_gives_none(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant_text("thinking"), custom("mulligan:note")]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs) is None

    @pytest.mark.parametrize("exclude", ["DOES-NOT-EXIST", "", None])
    def test_an_exclusion_matching_nothing_skips_nothing(self, exclude: str | None) -> None:
        assert resolve_last_tool_call_group(partition_into_units(self.msgs), self.msgs, exclude) == (3, 4)

    def test_the_only_group_being_the_rewinds_own_gives_none(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("only"), result("only")]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs, "only") is None

    def test_lands_on_the_previous_group(self) -> None:
        msgs: list[AgentMessage] = [
            assistant("X"),
            result("X"),
            assistant("Y"),
            result("Y"),
            assistant("Z"),
            result("Z"),
        ]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs, "Z") == (2, 3)

    def test_parallel_calls_skip_the_whole_shared_message(self) -> None:
        msgs: list[AgentMessage] = [
            assistant("prev"),
            result("prev"),
            assistant("X", "REW"),
            result("X"),
            result("REW"),
        ]
        units = partition_into_units(msgs)
        assert summary(units) == "toolGroup:0:2 | toolGroup:2:3"
        assert resolve_last_tool_call_group(units, msgs, "REW") == (0, 1)

    def test_parallel_calls_with_no_earlier_group_give_none(self) -> None:
        msgs: list[AgentMessage] = [assistant("A", "REW"), result("A"), result("REW")]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs, "REW") is None

    def test_plain_units_between_groups_are_skipped(self) -> None:
        msgs: list[AgentMessage] = [
            assistant("A"),
            result("A"),
            assistant_text("chat"),
            assistant("B"),
            result("B"),
        ]
        assert resolve_last_tool_call_group(partition_into_units(msgs), msgs) == (3, 4)


# --------------------------------------------------------------------------------------------------
# resolve_last_turn


class TestResolveLastTurn:
    two_turns: ClassVar[list[AgentMessage]] = [
        user("u0"),
        assistant("c0"),
        result("c0"),
        user("u1"),
        assistant("c1"),
        result("c1"),
    ]

    def test_removes_everything_after_the_latest_user_message_and_keeps_it(self) -> None:
        assert resolve_last_turn(self.two_turns) == [4, 5]
        assert 3 not in resolve_last_turn(self.two_turns)

    def test_keeps_the_rewinds_own_unit(self) -> None:
        msgs: list[AgentMessage] = [
            *self.two_turns[:4],
            assistant("prev"),
            result("prev"),
            assistant("REW"),
            result("REW"),
        ]
        assert resolve_last_turn(msgs, "REW") == [4, 5]

    def test_keeps_the_whole_shared_message_of_parallel_calls(self) -> None:
        msgs: list[AgentMessage] = [
            *self.two_turns[:4],
            assistant("prev"),
            result("prev"),
            assistant("sib", "REW"),
        ]
        msgs += [result("sib"), result("REW")]
        assert resolve_last_turn(msgs, "REW") == [4, 5]

    @pytest.mark.parametrize("custom_type", ["mulligan:note", "mulligan:nudge"])
    def test_mulligan_messages_survive(self, custom_type: str) -> None:
        assert resolve_last_turn([*self.two_turns, custom(custom_type), custom(custom_type)]) == [4, 5]

    def test_no_user_message_removes_nothing(self) -> None:
        assert resolve_last_turn([assistant("c"), result("c"), custom("mulligan:note")]) == []

    def test_nothing_after_the_latest_user_message_removes_nothing(self) -> None:
        assert resolve_last_turn([user("u0"), assistant("c0"), result("c0"), user("u1")]) == []

    @pytest.mark.parametrize("exclude", [None, "", "DOES-NOT-EXIST"])
    def test_without_a_usable_exclusion_the_own_unit_goes_too(self, exclude: str | None) -> None:
        msgs: list[AgentMessage] = [
            *self.two_turns[:4],
            assistant("REW"),
            result("REW"),
            assistant("c2"),
            result("c2"),
        ]
        assert resolve_last_turn([*msgs, custom("mulligan:note")], exclude) == [4, 5, 6, 7]


# --------------------------------------------------------------------------------------------------
# resolve_checkpoint


class TestResolveCheckpoint:
    def test_removes_work_after_the_checkpoint_keeping_the_checkpointed_group_whole(self) -> None:
        msgs: list[AgentMessage] = [user("u1"), assistant("c1"), result("c1"), assistant_text("junk")]
        branch = [entry("e1"), entry("e2"), checkpoint_label("eL", "e2", "ckpt"), entry("e3"), entry("e4")]
        assert resolve_checkpoint(msgs, branch, "ckpt") == [3]

    def test_keeps_the_checkpoint_and_everything_before(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        branch = [entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "p"), entry("er")]
        assert resolve_checkpoint(msgs, branch, "p") == []

    def test_keeps_all_parallel_results_of_a_checkpointed_assistant(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("p1", "p2"),
            result("p1"),
            result("p2"),
            assistant_text("tail"),
        ]
        branch = [entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "m"), *entries("er1", "er2", "et")]
        assert resolve_checkpoint(msgs, branch, "m") == [4]

    def test_keeps_the_rewinds_own_unit(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("rw-call"), result("rw-call"), assistant_text("bad")]
        branch = [entry("eu"), checkpoint_label("eL", "eu", "k"), *entries("ea", "er", "et")]
        assert resolve_checkpoint(msgs, branch, "k", "rw-call") == [3]

    def test_keeps_notes_and_nudges(self) -> None:
        msgs: list[AgentMessage] = [user("u"), result("c"), custom("mulligan:note"), custom("mulligan:nudge")]
        branch = [entry("eu"), checkpoint_label("eL", "eu", "k"), entry("er")]
        branch += [entry("en", "custom_message"), entry("eg", "custom_message")]
        assert resolve_checkpoint(msgs, branch, "k") == [1]

    def test_removes_user_messages_after_the_checkpoint(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant_text("a"), user("later"), assistant_text("b")]
        branch = [entry("eu"), checkpoint_label("eL", "eu", "k"), *entries("ea", "el", "eb")]
        assert resolve_checkpoint(msgs, branch, "k") == [1, 2, 3]

    def test_a_compaction_before_the_checkpoint_refuses(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        branch = [entry("ec", "compaction"), entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "k")]
        assert resolve_checkpoint(msgs, [*branch, entry("er")], "k") is None

    def test_a_compaction_after_the_checkpoint_is_not_walked(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c"), assistant_text("post")]
        branch = [entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "k"), entry("er"), entry("ep")]
        assert resolve_checkpoint(msgs, [*branch, entry("ec", "compaction")], "k") == [3]

    def test_an_unknown_name_refuses(self) -> None:
        assert resolve_checkpoint([user("u")], entries("e1", "e2"), "nope") is None

    def test_a_checkpoint_on_an_entry_without_a_message_refuses(self) -> None:
        branch = [checkpoint_label("eL", "em", "k"), entry("em", "custom"), entry("eu")]
        assert resolve_checkpoint([user("u")], branch, "k") is None

    def test_nothing_after_the_checkpoint_is_an_empty_removal_not_a_refusal(self) -> None:
        branch = [entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "k")]
        assert resolve_checkpoint([user("u"), assistant("c")], branch, "k") == []

    @pytest.mark.parametrize("name", ["", "   "])
    def test_an_empty_or_absent_name_refuses(self, name: str) -> None:
        assert resolve_checkpoint([], [], name) is None

    def test_the_leaf_most_label_wins(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant_text("a"), assistant_text("b")]
        branch = [
            entry("eu"),
            checkpoint_label("L1", "eu", "k"),
            entry("ea"),
            checkpoint_label("L2", "ea", "k"),
        ]
        assert resolve_checkpoint(msgs, [*branch, entry("eb")], "k") == [2]

    def test_more_entries_than_messages_refuses(self) -> None:
        branch = [entry("eu"), entry("ea"), checkpoint_label("eL", "ea", "k")]
        assert resolve_checkpoint([user("u")], branch, "k") is None

    @pytest.mark.parametrize("exclude", [None, ""])
    def test_without_an_exclusion_the_own_unit_is_removed_but_the_note_survives(
        self, exclude: str | None
    ) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("rw-call"),
            result("rw-call"),
            custom("mulligan:note"),
        ]
        branch = [entry("eu"), checkpoint_label("eL", "eu", "k"), *entries("ea", "er")]
        branch.append(entry("en", "custom_message"))
        assert resolve_checkpoint(msgs, branch, "k", exclude) == [1, 2]


# --------------------------------------------------------------------------------------------------
# pinned resolution through the branch tail


class TestResolvePinnedShrink:
    def test_resolves_the_pinned_entry(self) -> None:
        assert (
            resolve_pinned_shrink([user("u"), assistant("c1"), result("c1")], entries("e1", "e2", "e3"), "e2")
            == 1
        )

    def test_stays_locked_as_the_session_grows(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c1"), result("c1"), assistant("c2")]
        assert resolve_pinned_shrink(msgs, entries("e1", "e2", "e3", "e4"), "e1") == 0

    def test_resolves_in_the_retained_tail_after_a_compaction(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant_text("s"), assistant("c1"), result("c1")]
        branch = [entry("e1"), entry("c1", "compaction"), entry("e3"), entry("e4")]
        assert resolve_pinned_shrink(msgs, branch, "e3") == 2
        assert resolve_pinned_shrink(msgs, branch, "e4") == 3

    @pytest.mark.parametrize("pinned", ["nonexistent-id", ""])
    def test_an_absent_entry_resolves_to_none(self, pinned: str) -> None:
        assert resolve_pinned_shrink([user("u"), assistant("c1")], entries("e1", "e2"), pinned) is None

    def test_the_compacted_head_resolves_to_none(self) -> None:
        branch = [entry("e1"), entry("c1", "compaction"), entry("e3")]
        assert resolve_pinned_shrink([user("u"), assistant_text("s"), assistant("c1")], branch, "e1") is None

    def test_misalignment_resolves_to_none(self) -> None:
        assert resolve_pinned_shrink([user("u")], entries("e1", "e2"), "e1") is None


class TestBranchIndexer:
    def test_extends_the_index_as_the_branch_grows(self) -> None:
        indexer = BranchIndexer()
        first = indexer.tail(entries("e1", "e2"))
        grown = indexer.tail(entries("e1", "e2", "e3"))
        assert grown.message_index("e3", 3) == 2
        assert first.message_index("e3", 3) is None  # an earlier tail ignores positions added since

    def test_a_new_compaction_rebuilds_the_tail(self) -> None:
        indexer = BranchIndexer()
        branch = entries("e1", "e2")
        indexer.tail(branch)
        tail = indexer.tail([*branch, entry("c", "compaction"), entry("e3")])
        assert tail.length == 1 and tail.message_index("e3", 2) == 1 and tail.message_index("e1", 2) is None

    def test_another_branch_rebuilds_the_tail(self) -> None:
        indexer = BranchIndexer()
        indexer.tail(entries("e1", "e2", "e3"))
        tail = indexer.tail(entries("e1", "x2"))
        assert tail.length == 2 and tail.message_index("x2", 2) == 1 and tail.message_index("e3", 2) is None

    def test_matches_a_fresh_index(self) -> None:
        indexer = BranchIndexer()
        branch = [entry("e1"), entry("m", "custom"), entry("e2")]
        indexer.tail(branch)
        branch += [entry("e3", "custom_message"), entry("l", "label", target="e1", label="x"), entry("e4")]
        grown, fresh = indexer.tail(branch), branch_tail(branch)
        assert grown.length == fresh.length == 4
        assert [grown.message_index(i, 5) for i in ("e1", "e2", "e3", "e4", "m", "l")] == [
            fresh.message_index(i, 5) for i in ("e1", "e2", "e3", "e4", "m", "l")
        ]


# --------------------------------------------------------------------------------------------------
# shrink targets and substitution


class TestShrinkSubstitution:
    def test_replaces_content_and_keeps_every_other_field(self) -> None:
        bloated = ToolResultMessage(
            "call-A", "grep", [TextContent("BLOATED OUTPUT")], is_error=False, timestamp=5
        )
        msgs: list[AgentMessage] = [user("u"), assistant("call-A"), bloated]
        out = [*msgs[:2], shrunk_message(bloated, "[shrunk]")]
        shrunk = out[2]
        assert isinstance(shrunk, ToolResultMessage)
        assert text_of(shrunk) == stamp_shrink("[shrunk]")
        assert (shrunk.tool_call_id, shrunk.tool_name, shrunk.is_error, shrunk.timestamp) == (
            "call-A",
            "grep",
            False,
            5,
        )
        assert out[0] is msgs[0] and out[1] is msgs[1]
        assert text_of(bloated) == "BLOATED OUTPUT"

    def test_resolve_shrink_target_per_matcher(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("c1"),
            result("c1", tool_name="grep"),
            assistant("c2"),
            result("c2", tool_name="grep"),
        ]
        assert resolve_shrink_target(msgs, {"by_tool_call_id": "c2"}) == 4
        assert resolve_shrink_target(msgs, {"by_tool_call_id": "absent"}) is None
        assert resolve_shrink_target(msgs, {"by_tool_name": "grep", "occurrence": "first"}) == 2
        assert resolve_shrink_target(msgs, {"by_tool_name": "grep", "occurrence": "last"}) == 4
        assert resolve_shrink_target(msgs, {"by_tool_name": "grep"}) == 4
        assert resolve_shrink_target(msgs, {"by_tool_name": "absent", "occurrence": "last"}) is None
        assert resolve_shrink_target(msgs, {"by_content_includes": "u"}) == 0

    @pytest.mark.parametrize(
        "target",
        [
            {"by_content_includes": ""},
            {"by_tool_call_id": ""},
            {"by_tool_name": "", "occurrence": "last"},
            {},
            None,
            "x",
        ],
    )
    def test_empty_or_malformed_selectors_match_nothing(self, target: object) -> None:
        assert resolve_shrink_target([user("u")], target) is None

    def test_the_first_non_empty_discriminator_decides(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c1"), result("c1", tool_name="read")]
        assert resolve_shrink_target(msgs, {"by_tool_call_id": "", "by_tool_name": "read"}) == 2
        assert resolve_shrink_target(msgs, {"by_tool_call_id": "zz", "by_tool_name": "read"}) is None

    def test_content_search_covers_the_json_of_blocks(self) -> None:
        msgs: list[AgentMessage] = [assistant(call("c1", "read", path="src/secret.ts"))]
        assert resolve_shrink_target(msgs, {"by_content_includes": '"name":"read"'}) == 0

    def test_an_empty_replacement_still_stamps(self) -> None:
        assert stamp_shrink("") == "<context-shrunk>\n\n</context-shrunk>"

    def test_messages_without_content_are_not_substituted(self) -> None:
        from caddie.extensions.api import BashExecutionMessage

        bash = BashExecutionMessage("ls", "out", 0)
        assert shrunk_message(bash, "x") is bash

    def test_an_assistant_message_keeps_its_role(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant_text("long explanation")]
        out = [msgs[0], shrunk_message(msgs[1], "short")]
        assert out[1].role == "assistant" and is_stamped(out[1], "short")


# --------------------------------------------------------------------------------------------------
# ordering, protection, the pipeline


class TestStableSortBySeq:
    def test_sorts_oldest_first_keeping_ties_in_order(self) -> None:
        ms = [rewind(3, id="c"), rewind(1, id="a"), rewind(1, id="b"), rewind(2, id="d")]
        assert [m.id for m in stable_sort_by_seq(ms)] == ["a", "b", "d", "c"]

    def test_returns_a_new_list(self) -> None:
        ms = [rewind(2), rewind(1)]
        assert stable_sort_by_seq(ms) is not ms and [m.seq for m in ms] == [2, 1]


class TestProtectedOk:
    msgs: ClassVar[list[AgentMessage]] = [user("u"), assistant("c"), result("c")]

    def test_an_empty_removal_is_allowed(self) -> None:
        assert protected_ok(self.msgs, [], PROTECT)

    def test_a_removal_after_the_first_user_message_is_allowed(self) -> None:
        assert protected_ok(self.msgs, [1, 2], PROTECT)

    def test_removing_the_first_user_message_is_refused(self) -> None:
        assert not protected_ok(self.msgs, [0, 1], PROTECT)

    def test_without_a_user_message_anything_goes(self) -> None:
        assert protected_ok([assistant("c"), result("c")], [0, 1], PROTECT)

    def test_a_config_without_first_user_disables_the_check(self) -> None:
        assert protected_ok([user("u"), assistant("c")], [0], ("latest:user",))

    @pytest.mark.parametrize("roles", [None, ()])
    def test_missing_or_empty_roles_still_protect_the_task(self, roles: tuple[str, ...] | None) -> None:
        assert not protected_ok([user("u"), assistant("c")], [0], roles)


class TestFilterPipeline:
    def test_two_legacy_rewinds_compose_the_second_finding_nothing(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant("cM"),
            result("cM"),
            assistant("cR1"),
            result("cR1"),
            custom("mulligan:note"),
        ]
        rws = [rewind(1, exclude_tool_call_id="cR1"), rewind(2, exclude_tool_call_id="cR1")]
        out = filter_pipeline(msgs, rws, [], PROTECT)
        assert [m.role for m in out] == ["user", "assistant", "toolResult", "custom"] and out[3] is msgs[5]

    def test_a_shrink_of_a_rewound_message_does_nothing(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant("cM"),
            result_with("cM", "BIG"),
            assistant("cR1"),
            result("cR1"),
        ]
        msgs.append(custom("mulligan:note"))
        out = filter_pipeline(
            msgs,
            [rewind(1, exclude_tool_call_id="cR1")],
            [shrink(2, {"by_tool_call_id": "cM"}, "[s]")],
            PROTECT,
        )
        assert len(out) == 4 and not any(is_stamped(m, "[s]") for m in out)

    def test_a_last_turn_rewind_keeps_the_latest_user_message(self) -> None:
        out = filter_pipeline(
            [user("u0"), assistant("c"), result("c")], [rewind(1, "last_turn")], [], PROTECT
        )
        assert [m.role for m in out] == ["user"]

    def test_shrinks_compose_oldest_first(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant("c1"),
            result_with("c1", "BIG1"),
            assistant("c2"),
            result_with("c2", "BIG2"),
        ]
        shrinks = [shrink(1, {"by_tool_call_id": "c1"}, "[s1]"), shrink(2, {"by_tool_call_id": "c2"}, "[s2]")]
        out = filter_pipeline(msgs, [], shrinks, PROTECT)
        assert is_stamped(out[2], "[s1]") and is_stamped(out[4], "[s2]")

    def test_a_last_turn_rewind_keeps_its_own_unit_and_the_note(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant("c1"),
            result("c1"),
            user("u1"),
            assistant("c2"),
            result("c2"),
        ]
        msgs += [assistant("cR1"), result("cR1"), custom("mulligan:note")]
        out = filter_pipeline(msgs, [rewind(1, "last_turn", exclude_tool_call_id="cR1")], [], PROTECT)
        assert [m.role for m in out] == [
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant",
            "toolResult",
            "custom",
        ]

    def test_a_legacy_checkpoint_rewind_removes_what_follows_the_checkpoint(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant_text("keep"),
            assistant_text("drop1"),
            assistant_text("drop2"),
        ]
        branch = [entry("e0"), checkpoint_label("L1", "e1", "x"), *entries("e1", "e2", "e3")]
        out = filter_pipeline(msgs, [rewind(1, "checkpoint", checkpoint="x")], [], PROTECT, branch)
        assert [text_of(m) for m in out] == ["u0", "keep"]

    def test_a_pinned_shrink_does_not_drift_to_a_newer_match(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("c1"),
            result_with("c1", "OLD", "read"),
            assistant("c2"),
            result_with("c2", "NEW", "read"),
        ]
        branch = entries("e_u", "e_a1", "e_old", "e_a2", "e_new")
        marker = shrink(1, {"by_tool_name": "read", "occurrence": "last"}, "[s]", pinned_entry_id="e_old")
        out = filter_pipeline(msgs, [], [marker], PROTECT, branch)
        assert is_stamped(out[2], "[s]") and text_of(out[4]) == "NEW"

    def test_an_unpinned_shrink_resolves_live(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c1"), result_with("c1", "OLD", "read")]
        out = filter_pipeline(msgs, [], [shrink(1, {"by_tool_name": "read"}, "[s]")], PROTECT, [])
        assert is_stamped(out[2], "[s]")

    def test_without_markers_the_same_list_comes_back(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        assert filter_pipeline(msgs, [], [], PROTECT) is msgs

    def test_unknown_granularities_and_empty_shrinks_are_no_ops(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        out = filter_pipeline(msgs, [rewind(1, "bogus"), rewind(2, None)], [shrink(1, None, "")], PROTECT)  # type: ignore[arg-type]
        assert out is msgs

    def test_a_rewind_crossing_the_first_user_message_is_skipped(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("c"), result("c")]
        out = filter_pipeline(msgs, [rewind(1, hide=["e1", "e2"])], [], PROTECT, entries("e1", "e2", "e3"))
        assert out is msgs

    def test_never_mutates_its_inputs(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("cM"),
            result("cM"),
            assistant("cR1"),
            result("cR1"),
            custom("mulligan:note"),
        ]
        snapshot = list(msgs)
        marker = rewind(1, exclude_tool_call_id="cR1")
        filter_pipeline(msgs, [marker], [], PROTECT)
        assert msgs == snapshot and marker.seq == 1

    def test_diagnostics_record_each_rewind(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("A"), result("A"), assistant("R"), result("R")]
        diag: list[RewindDiag] = []
        filter_pipeline(
            msgs,
            [rewind(1, hide=["ea", "er"]), rewind(2, exclude_tool_call_id="R"), rewind(3, "bogus")],
            [],
            PROTECT,
            entries("eu", "ea", "er", "eR", "eRr"),
            diag,
        )
        assert [(d.mode, d.remove, d.resolved_len) for d in diag] == [
            ("pinned", (1, 2), 5),
            ("legacy-run", (), 3),
            ("unknown-noop", (), 3),
        ]


class TestPermanentHiding:
    """BUG-001/002: pinned hides stay put across fires; new work stays visible."""

    @pytest.mark.parametrize("granularity", ["last_tool_call_group", "last_turn"])
    def test_the_mistake_stays_hidden_and_new_work_shows(self, granularity: str) -> None:
        msgs1: list[AgentMessage] = [
            user("u"),
            assistant("BAD"),
            result("BAD"),
            assistant("RW"),
            result("RW"),
            custom("mulligan:note"),
        ]
        branch1 = entries("e_u", "e_bad_a", "e_bad_r", "e_rw_a", "e_rw_r", "e_note")
        marker = rewind(1, granularity, exclude_tool_call_id="RW", hide=["e_bad_a", "e_bad_r"])
        view1 = filter_pipeline(msgs1, [marker], [], PROTECT, branch1)
        assert not contains(view1, msgs1[1]) and not contains(view1, msgs1[2])
        assert all(contains(view1, msgs1[i]) for i in (0, 3, 5))

        msgs2: list[AgentMessage] = [*msgs1, assistant("GOOD"), result("GOOD")]
        view2 = filter_pipeline(msgs2, [marker], [], PROTECT, [*branch1, *entries("e_good_a", "e_good_r")])
        assert not contains(view2, msgs2[1]) and not contains(view2, msgs2[2])
        assert all(contains(view2, msgs2[i]) for i in (0, 5, 6, 7))

    def test_a_legacy_marker_uses_the_relative_resolver(self) -> None:
        msgs: list[AgentMessage] = [
            user("u0"),
            assistant("cM"),
            result("cM"),
            assistant("cR1"),
            result("cR1"),
            custom("mulligan:note"),
        ]
        out = filter_pipeline(msgs, [rewind(1, exclude_tool_call_id="cR1")], [], PROTECT)
        assert len(out) == 4 and not contains(out, msgs[1]) and not contains(out, msgs[2])

    def test_a_compaction_between_the_pins_hides_only_the_retained_one(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("BAD"),
            result("BAD"),
            assistant("RW"),
            result("RW"),
            custom("mulligan:note"),
        ]
        branch = [entry("e_u"), entry("e_bad_a"), entry("eC", "compaction")]
        branch += entries("e_bad_r", "e_rw_a", "e_rw_r", "e_note")
        out = filter_pipeline(msgs, [rewind(1, hide=["e_bad_a", "e_bad_r"])], [], PROTECT, branch)
        assert not contains(out, msgs[2]) and contains(out, msgs[1]) and contains(out, msgs[3])

    def test_a_pinned_checkpoint_rewind_hides_the_work_after_it_permanently(self) -> None:
        msgs1: list[AgentMessage] = [
            user("u"),
            assistant("cp"),
            result("cp"),
            assistant("read"),
            result("read"),
        ]
        branch1 = entries("e_u", "e_cp_a", "e_cp_r", "e_read_a", "e_read_r")
        marker = rewind(1, "checkpoint", checkpoint="cp", hide=["e_read_a", "e_read_r"])
        assert filter_pipeline(msgs1, [marker], [], PROTECT, branch1) == msgs1[:3]
        msgs2: list[AgentMessage] = [*msgs1, assistant("new"), result("new")]
        view2 = filter_pipeline(msgs2, [marker], [], PROTECT, [*branch1, *entries("e_na", "e_nr")])
        assert view2 == [*msgs1[:3], msgs2[5], msgs2[6]]

    def test_one_marker_can_pin_several_groups(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("A"),
            result("A"),
            assistant("B"),
            result("B"),
            custom("mulligan:note"),
        ]
        branch = entries("e_u", "e_a_a", "e_a_r", "e_b_a", "e_b_r", "e_note")
        marker = rewind(1, hide=["e_a_a", "e_a_r", "e_b_a", "e_b_r"])
        assert filter_pipeline(msgs, [marker], [], PROTECT, branch) == [msgs[0], msgs[5]]

    def test_two_pinned_markers_both_hide(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("A"),
            result("A"),
            assistant("B"),
            result("B"),
            custom("mulligan:note"),
        ]
        branch = entries("e_u", "e_a_a", "e_a_r", "e_b_a", "e_b_r", "e_note")
        out = filter_pipeline(
            msgs,
            [rewind(1, hide=["e_a_a", "e_a_r"]), rewind(2, hide=["e_b_a", "e_b_r"])],
            [],
            PROTECT,
            branch,
        )
        assert out == [msgs[0], msgs[5]]

    def test_a_shrink_of_a_pinned_hidden_result_does_nothing(self) -> None:
        msgs: list[AgentMessage] = [user("u"), assistant("A"), result("A"), assistant("B"), result("B")]
        branch = entries("e_u", "e_a_a", "e_a_r", "e_b_a", "e_b_r")
        out = filter_pipeline(
            msgs,
            [rewind(1, hide=["e_a_a", "e_a_r"])],
            [shrink(2, {"by_tool_call_id": "A"}, "S")],
            PROTECT,
            branch,
        )
        assert out == [msgs[0], msgs[3], msgs[4]]

    def test_a_pinned_shrink_after_a_pinned_rewind_lands_on_the_shifted_message(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("grep"),
            result("grep"),
            assistant("read"),
            result("read"),
        ]
        branch = entries("e_u", "e1", "e2", "e3", "e4")
        sh = shrink(2, {"by_tool_call_id": "read"}, "[S]", pinned_entry_id="e4")
        out = filter_pipeline(msgs, [rewind(1, hide=["e1", "e2"])], [sh], PROTECT, branch)
        assert len(out) == 3 and out[1] is msgs[3] and is_stamped(out[2], "[S]")
        assert isinstance(out[2], ToolResultMessage) and out[2].tool_call_id == "read"

    def test_a_pinned_shrink_after_a_legacy_rewind_lands_on_the_shifted_message(self) -> None:
        msgs: list[AgentMessage] = [
            user("u"),
            assistant("A"),
            result("A"),
            assistant("B"),
            result("B"),
            assistant("RW"),
            result("RW"),
        ]
        branch = entries("e0", "e1", "e2", "e3", "e4", "e5", "e6")
        legacy = rewind(1, exclude_tool_call_id="RW")  # hides the B group
        sh = shrink(2, {"by_tool_call_id": "zzz"}, "[S]", pinned_entry_id="e2")
        out = filter_pipeline(msgs, [legacy], [sh], PROTECT, branch)
        assert [text_of(m) for m in out] == ["u", "", stamp_shrink("[S]"), "", "..."]


class TestTurnHasAdvanced:
    def test_only_notes_after_the_own_group_is_the_creating_fire(self) -> None:
        assert not turn_has_advanced([user("u"), assistant("R"), result("R"), custom("mulligan:note")], "R")

    def test_new_work_after_the_own_group_has_advanced(self) -> None:
        assert turn_has_advanced([user("u"), assistant("R"), result("R"), assistant("X")], "R")

    @pytest.mark.parametrize("exclude", [None, "", "absent"])
    def test_an_own_group_that_cannot_be_found_allows_resolution(self, exclude: str | None) -> None:
        assert not turn_has_advanced([user("u"), assistant("X")], exclude)
