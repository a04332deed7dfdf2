"""Token and byte estimates: characters / 4, UTF-16 lengths, UTF-8 bytes."""

from __future__ import annotations

import math

import pytest

from caddie.extensions.api import (
    CHARS_PER_TOKEN,
    AgentMessage,
    BashExecutionMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    Utf16TokenCounter,
    approx_tokens,
    estimate_message_tokens_utf16,
    estimate_tokens_utf16,
    message_bytes,
    result_bytes,
    utf16_len,
    utf16_prefix,
)
from caddie.extensions.bundled.mulligan import state
from caddie.extensions.bundled.mulligan.markers import HIGH_WATER, NUDGE
from caddie.extensions.bundled.mulligan.nudges import estimate_agent_tokens
from caddie.extensions.bundled.mulligan.state import AgentTokenMemo
from tests.mulligan.fakehost import assistant, assistant_text, call, result, user


def test_an_empty_list_is_zero_tokens() -> None:
    assert estimate_tokens_utf16([]) == 0


def test_characters_are_summed_then_divided_once_rounding_up() -> None:
    assert CHARS_PER_TOKEN == 4
    assert estimate_tokens_utf16([user("abc")]) == 1
    assert estimate_tokens_utf16([user("a"), user("b"), user("c"), user("d")]) == 1  # 4 chars → 1, not 4
    assert estimate_tokens_utf16([user("x" * 400)]) == 100


def test_longer_messages_and_more_messages_never_estimate_less() -> None:
    assert estimate_tokens_utf16([user("x" * 41)]) > estimate_tokens_utf16([user("x" * 40)])
    assert estimate_tokens_utf16([user("x" * 40), assistant_text("y")]) >= estimate_tokens_utf16(
        [user("x" * 40)]
    )


def test_every_block_kind_counts() -> None:
    msg = assistant(call("c1", "read", path="a.ts"))
    msg.content.insert(0, ThinkingContent("hmm"))
    msg.content.append(TextContent("ok"))
    # thinking 3 + name 4 + {"path":"a.ts"} 15 + text 2 = 24
    assert estimate_tokens_utf16([msg]) == 6
    user_blocks = UserMessage([TextContent("see"), ImageContent("QUJD" * 4, "image/png")])
    assert estimate_tokens_utf16([user_blocks]) == math.ceil((3 + 16) / 4)
    assert estimate_tokens_utf16([result("c", "x" * 8)]) == 2
    assert estimate_tokens_utf16([CustomMessage("note", "x" * 12)]) == 3
    assert estimate_tokens_utf16([CustomMessage("note", [TextContent("x" * 12)])]) == 3


def test_messages_without_content_count_zero() -> None:
    assert estimate_tokens_utf16([BashExecutionMessage("ls", "lots of output", 0)]) == 0


def test_unserialisable_arguments_count_zero() -> None:
    circular: dict[str, object] = {}
    circular["self"] = circular
    assert estimate_tokens_utf16([assistant(ToolCall("c", "read", circular))]) == 1  # the name only


def test_lengths_are_utf16_code_units() -> None:
    assert utf16_len("abc") == 3 and utf16_len("é") == 1 and utf16_len("😀") == 2
    assert estimate_tokens_utf16([user("😀😀")]) == 1 and estimate_tokens_utf16([user("😀😀😀")]) == 2
    assert utf16_prefix("a😀b", 2) == "a" and utf16_prefix("a😀b", 3) == "a😀"


def test_the_hot_path_counter_agrees_and_notices_changed_arguments() -> None:
    counter = Utf16TokenCounter()
    first = [assistant(call("c1", "read", path="a.ts")), user("😀 hi")]
    assert counter.estimate(first) == estimate_tokens_utf16(first)
    changed = [assistant(call("c1", "read", path="a-much-longer-name.ts", extra="x"))]
    assert counter.estimate(changed) == estimate_tokens_utf16(changed)


class TestResultBytes:
    def test_empty_and_non_list_content_is_zero(self) -> None:
        assert result_bytes([]) == 0 and result_bytes(None) == 0 and result_bytes("text") == 0

    def test_text_counts_utf8_bytes(self) -> None:
        assert result_bytes([TextContent("abc")]) == 3
        assert result_bytes([TextContent("é€😀")]) == 2 + 3 + 4
        assert result_bytes([TextContent("")]) == 0

    def test_images_count_their_base64_length_and_blocks_add_up(self) -> None:
        assert result_bytes([TextContent("ab"), ImageContent("QUJD", "image/png")]) == 6
        assert result_bytes([ImageContent("", "image/png")]) == 0

    def test_message_bytes_of_string_and_block_content(self) -> None:
        assert message_bytes(user("é")) == 2
        assert message_bytes(result("c", "abc")) == 3
        assert message_bytes(BashExecutionMessage("ls", "x", 0)) == 0


class TestApproxTokens:
    @pytest.mark.parametrize(("num_bytes", "tokens"), [(0, 0), (1, 1), (4, 1), (5, 2), (8192, 2048), (-1, 0)])
    def test_bytes_over_four_rounded_up(self, num_bytes: int, tokens: int) -> None:
        assert approx_tokens(num_bytes) == tokens

    @pytest.mark.parametrize("num_bytes", [math.nan, math.inf, -math.inf])
    def test_nonsense_is_zero(self, num_bytes: float) -> None:
        assert approx_tokens(num_bytes) == 0

    def test_composes_with_result_bytes(self) -> None:
        assert approx_tokens(result_bytes([TextContent("x" * 8192)])) == 2048


class TestAgentTokens:
    def test_user_messages_are_excluded(self) -> None:
        assert estimate_agent_tokens([user("x" * 50_000), assistant_text("y" * 8)]) == 2

    def test_all_user_messages_is_zero(self) -> None:
        assert estimate_agent_tokens([user("a"), user("b")]) == 0 and estimate_agent_tokens([]) == 0

    def test_sums_the_other_roles_per_message(self) -> None:
        msgs: list[AgentMessage] = [
            user("zzzz"),
            assistant_text("x"),
            result("c", "y"),
            CustomMessage("n", "z"),
        ]
        assert estimate_agent_tokens(msgs) == 3  # 1 + 1 + 1: each message rounded up on its own

    def test_the_turn_end_memo_agrees_and_counts_a_replaced_message_afresh(self) -> None:
        msgs: list[AgentMessage] = [user("zzzz"), assistant_text("x" * 40), result("c", "y" * 400)]
        memo = AgentTokenMemo()
        assert memo.estimate(msgs) == estimate_agent_tokens(msgs) == 110
        msgs.append(assistant_text("w" * 8))
        assert memo.estimate(msgs) == estimate_agent_tokens(msgs) == 112
        msgs[2] = result("c", "[shrunk]")  # a new object where the big result was (a mulligan shrink)
        assert memo.estimate(msgs) == estimate_agent_tokens(msgs) == 14
        assert memo.estimate(msgs[:1]) == 0 and memo.estimate(msgs) == 14


class TestAgentTokenMemoIsIncremental:
    """The turn-end memo counts only what is new since its last call (the messages it estimates are counted)."""

    @pytest.fixture
    def estimated(self, monkeypatch: pytest.MonkeyPatch) -> list[AgentMessage]:
        seen: list[AgentMessage] = []

        def counting(message: AgentMessage) -> int:
            seen.append(message)
            return estimate_message_tokens_utf16(message)

        monkeypatch.setattr(state, "estimate_message_tokens_utf16", counting)
        return seen

    def test_a_grown_view_counts_only_its_new_messages(self, estimated: list[AgentMessage]) -> None:
        view: list[AgentMessage] = [user("go"), assistant("c1"), result("c1", "x" * 40)]
        memo = AgentTokenMemo()
        assert memo.estimate(view) == estimate_agent_tokens(view)
        estimated.clear()
        grown = [*view, assistant("c2"), result("c2", "y" * 80)]
        assert memo.estimate(grown) == estimate_agent_tokens(grown)
        assert estimated == grown[3:]

    def test_trailing_nudges_are_counted_every_time_and_do_not_break_the_next_view(
        self, estimated: list[AgentMessage]
    ) -> None:
        base: list[AgentMessage] = [user("go"), assistant("c1"), result("c1", "x" * 40)]
        memo = AgentTokenMemo()
        first = [*base, CustomMessage(NUDGE, "n" * 400, False, {"ephemeral": True}, 1)]
        assert memo.estimate(first) == estimate_agent_tokens(first) == estimate_agent_tokens(base) + 100
        estimated.clear()
        grown = [*base, assistant("c2"), result("c2", "y" * 80)]
        second = [
            *grown,
            CustomMessage(NUDGE, "m" * 40, False, None, 2),
            CustomMessage(HIGH_WATER, "h", False),
        ]
        assert memo.estimate(second) == estimate_agent_tokens(second)
        assert estimated == second[3:]  # the new messages and this view's own nudges
        estimated.clear()
        assert memo.estimate(grown) == estimate_agent_tokens(grown) and estimated == []

    def test_an_equal_message_made_again_keeps_its_count_and_a_changed_one_is_counted_afresh(
        self, estimated: list[AgentMessage]
    ) -> None:
        view: list[AgentMessage] = [
            user("go"),
            assistant("c1"),
            result("c1", "[shrunk]"),
            assistant_text("ok"),
        ]
        memo = AgentTokenMemo()
        memo.estimate(view)
        estimated.clear()
        again = [view[0], view[1], result("c1", "[shrunk]"), view[3]]  # a shrink's summary, made every fire
        assert memo.estimate(again) == estimate_agent_tokens(again) and estimated == []
        changed = [again[0], again[1], result("c1", "[shrunk, longer]" * 9), again[3]]
        assert memo.estimate(changed) == estimate_agent_tokens(changed)
        assert estimated == [changed[2]]  # the others come from the memo, by identity

    def test_a_tuple_view_is_counted_like_a_list(self) -> None:
        memo = AgentTokenMemo()
        view = (user("go"), assistant_text("x" * 40))
        assert memo.estimate(view) == estimate_agent_tokens(view) == 10
        assert memo.estimate((*view, assistant_text("y" * 8))) == 12
