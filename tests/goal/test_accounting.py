"""Pure logic: budget accounting, goal-turn guards, failure classification, status texts, reading a branch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from caddie.ai.messages import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.extensions.bundled.goal.accounting import (
    TurnFacts,
    add_tokens,
    counted_tokens,
    end_goal_turn,
    exit_code,
    report_blocked,
    resume_goal,
    set_budget,
    status_after_failure,
)
from caddie.extensions.bundled.goal.branch import restore, turn_was_cut_off
from caddie.extensions.bundled.goal.check import output_tail
from caddie.extensions.bundled.goal.model import (
    CONTINUE_MESSAGE,
    GOAL_ENTRY,
    LOOP_ENTRY,
    Goal,
    LoopState,
    cleared_json,
    goal_from_json,
    loop_from_json,
)
from caddie.extensions.bundled.goal.render import (
    STANDING_ORDERS,
    continuation_text,
    format_duration,
    format_interval,
    format_tokens,
    goal_status_text,
    loop_status_text,
)
from caddie.session.store import SessionStore
from tests.goal.helpers import usage


def goal(**changes: object) -> Goal:
    return replace(Goal(id="g1", objective="make pytest pass"), **changes)  # type: ignore[arg-type]


def facts(
    *, tools: bool = False, change: bool = False, blocked: bool = False, text: str = "working"
) -> TurnFacts:
    return TurnFacts(tools, change, blocked, text)


# --------------------------------------------------------------------------------------------------
# Budget


def test_only_input_and_output_tokens_count() -> None:
    u = usage(1_000, 200, cache_read=50_000, cache_write=9_000)
    assert counted_tokens(u.input, u.output) == 1_200


def test_spend_reaching_the_budget_limits_the_goal() -> None:
    g = goal(token_budget=1_000)
    g = add_tokens(g, 600)
    assert (g.status, g.tokens_used) == ("active", 600)
    g = add_tokens(g, 400)
    assert (g.status, g.tokens_used) == ("budget_limited", 1_000)


def test_a_goal_that_is_not_active_is_not_charged() -> None:
    assert add_tokens(goal(status="paused"), 500).tokens_used == 0


def test_overshoot_is_at_most_the_response_that_crossed_the_budget() -> None:
    g = goal(token_budget=1_000, tokens_used=900)
    g = add_tokens(g, 5_000)
    assert g.status == "budget_limited" and g.tokens_used == 5_900
    assert add_tokens(g, 5_000).tokens_used == 5_900


def test_resume_after_the_budget_raises_it_by_50k() -> None:
    g = resume_goal(goal(status="budget_limited", token_budget=100_000, tokens_used=100_400))
    assert (g.status, g.token_budget, g.budget_raised_to) == ("active", 150_400, 150_400)


def test_resume_clears_the_blocked_count_and_keeps_the_budget_of_other_states() -> None:
    g = resume_goal(goal(status="blocked", blocked_streak=3, token_budget=10_000, tokens_used=10))
    assert (g.status, g.blocked_streak, g.token_budget, g.budget_raised_to) == ("active", 0, 10_000, None)


def test_raising_the_budget_past_spend_resumes_and_lowering_it_stops() -> None:
    limited = goal(status="budget_limited", token_budget=1_000, tokens_used=1_200)
    assert set_budget(limited, 1_100).status == "budget_limited"
    assert set_budget(limited, 2_000).status == "active"
    assert set_budget(limited, None).status == "active"
    assert set_budget(goal(tokens_used=500), 400).status == "budget_limited"
    assert set_budget(goal(status="paused", tokens_used=500), 400).status == "paused"


# --------------------------------------------------------------------------------------------------
# Goal turns


def test_three_identical_tool_free_answers_pause_the_goal() -> None:
    g, last = goal(), None
    outcomes = []
    for text in ("Still working.", "Still   working.\n", " Still working. "):
        outcome = end_goal_turn(g, facts(text=text), last)
        g, last = outcome.goal, outcome.last_output
        outcomes.append((outcome.runaway, g.runaway_streak))
    assert outcomes == [(False, 1), (False, 2), (True, 3)]
    assert g.status == "paused"


def test_a_tool_call_or_a_different_answer_resets_the_runaway_streak() -> None:
    g = goal(runaway_streak=2)
    assert end_goal_turn(g, facts(tools=True, text="same"), "same").goal.runaway_streak == 0
    assert end_goal_turn(g, facts(text="other"), "same").goal.runaway_streak == 1


def test_turns_without_an_edit_or_write_are_counted_and_a_change_resets_them() -> None:
    g = goal(turns_without_change=4)
    assert end_goal_turn(g, facts(tools=True), None).goal.turns_without_change == 5
    assert end_goal_turn(g, facts(tools=True, change=True), None).goal.turns_without_change == 0


def test_blocked_is_accepted_only_on_the_third_consecutive_goal_turn() -> None:
    g = goal()
    g, accepted = report_blocked(g, already_this_turn=False)
    assert (g.blocked_streak, accepted, g.status) == (1, False, "active")
    g, accepted = report_blocked(g, already_this_turn=True)  # twice in one turn counts once
    assert (g.blocked_streak, accepted) == (1, False)
    g = end_goal_turn(g, facts(blocked=True, tools=True), None).goal
    g, _ = report_blocked(g, already_this_turn=False)
    g = end_goal_turn(g, facts(blocked=True, tools=True), None).goal
    g, accepted = report_blocked(g, already_this_turn=False)
    assert (g.blocked_streak, accepted, g.status) == (3, True, "blocked")


def test_a_goal_turn_without_a_blocker_report_resets_the_blocked_count() -> None:
    assert end_goal_turn(goal(blocked_streak=2), facts(tools=True), None).goal.blocked_streak == 0


# --------------------------------------------------------------------------------------------------
# Failures and exit codes


@pytest.mark.parametrize(
    ("stop", "message", "status", "expected"),
    [
        ("aborted", "Request was aborted", None, "paused"),
        ("error", "500 Internal server error", 500, "paused"),
        ("error", "Incorrect API key provided", 401, "paused"),
        ("error", "429 Too Many Requests", 429, "usage_limited"),
        ("error", "Rate limit reached for requests", None, "usage_limited"),
        ("error", "You exceeded your current quota (insufficient_quota)", 429, "usage_limited"),
        ("error", "Your credit balance is too low", 400, "usage_limited"),
        ("error", "payment required", 402, "usage_limited"),
        ("stop", None, None, None),
    ],
)
def test_a_failed_run_pauses_the_goal_or_marks_usage_limits(
    stop: str, message: str | None, status: int | None, expected: str | None
) -> None:
    assert status_after_failure(stop, message, status) == expected


def test_headless_exit_codes() -> None:
    assert [
        exit_code(s) for s in ("complete", "blocked", "budget_limited", "paused", "usage_limited", "active")
    ] == [0, 2, 3, 4, 5, 4]


# --------------------------------------------------------------------------------------------------
# Texts


def test_status_bar_texts_are_exact() -> None:
    assert goal_status_text(goal(active_seconds=725, tokens_used=41_234, token_budget=100_000)) == (
        "Goal · 12m · 41.2k/100k tokens"
    )
    assert goal_status_text(goal(active_seconds=5, tokens_used=950)) == "Goal · 5s · 950 tokens"
    assert [
        goal_status_text(goal(status=s))
        for s in ("paused", "blocked", "usage_limited", "budget_limited", "complete")
    ] == [
        "Goal paused",
        "Goal blocked",
        "Goal hit usage limits",
        "Goal budget reached",
        "Goal complete",
    ]
    raised = resume_goal(
        goal(status="budget_limited", token_budget=100_000, tokens_used=100_000, active_seconds=3_900)
    )
    assert goal_status_text(raised) == "Goal · 1h 5m · 100k/150k tokens · budget raised"
    assert loop_status_text(LoopState("interval", "x", 300_000, iteration=3)) == "Loop every 5m (3)"
    assert loop_status_text(LoopState("settled", "x", iteration=3)) == "Loop self-paced (3)"


def test_number_formats() -> None:
    assert [format_tokens(n) for n in (0, 999, 1_000, 41_234, 999_999, 1_500_000)] == [
        "0",
        "999",
        "1k",
        "41.2k",
        "1M",
        "1.5M",
    ]
    assert [format_duration(s) for s in (0, 59, 60, 3_599, 3_600, 7_500)] == [
        "0s",
        "59s",
        "1m",
        "59m",
        "1h",
        "2h 5m",
    ]
    assert [format_interval(ms) for ms in (250, 30_000, 90_000, 300_000, 86_400_000)] == [
        "250ms",
        "30s",
        "90s",
        "5m",
        "1d",
    ]


def test_the_continuation_carries_live_counters_and_optionally_notes_and_the_stagnation_line() -> None:
    g = goal(
        tokens_used=41_234,
        token_budget=100_000,
        active_seconds=725,
        notes="done A; next B",
        check="pytest -q",
    )
    text = continuation_text(g, "continue", include_notes=False)
    assert "make pytest pass" in text
    assert "12m active · 41,234 tokens used · 58,766 of 100,000 left" in text
    assert "pytest -q" in text
    assert "done A" not in text and "No successful edit" not in text
    with_notes = continuation_text(replace(g, turns_without_change=5), "continue", include_notes=True)
    assert "done A; next B" in with_notes
    assert "No successful edit or write in the last 5 goal turns" in with_notes


def test_standing_orders_mention_every_rule_and_never_the_live_counters() -> None:
    text = "\n".join(STANDING_ORDERS)
    for needle in (
        "never stop just because a turn ended",
        "run the check command",
        "3 consecutive goal turns",
        "what is next",
    ):
        assert needle in text
    assert "tokens used" not in text


def test_state_round_trips_through_entry_data() -> None:
    g = goal(token_budget=5, tokens_used=3, check="make", notes="n", blocked_streak=1)
    assert goal_from_json(g.to_json()) == g
    assert goal_from_json(cleared_json(g)) == "cleared"
    assert goal_from_json({"schema": "other"}) is None
    loop = LoopState("interval", "ping", 60_000, iteration=2, last_fired_at=5)
    assert loop_from_json(loop.to_json()) == loop
    assert set(g.to_json()) == {
        "schema", "v", "id", "objective", "status", "tokenBudget", "tokensUsed", "check", "notes",
        "createdAt", "activeSeconds", "budgetRaisedTo", "turnsWithoutChange", "runawayStreak", "blockedStreak",
    }  # fmt: skip


def test_output_tail_keeps_the_last_bytes_without_splitting_a_character() -> None:
    assert output_tail(b"short") == ("short", False)
    data = ("é" * 1_000 + "FAILED at the end").encode()
    text, cut = output_tail(data, 1_500)
    assert cut and text.endswith("FAILED at the end") and "\ufffd" not in text
    assert len(text.encode()) <= 1_500


# --------------------------------------------------------------------------------------------------
# Reading a branch


def assistant(
    *blocks: TextContent | ToolCall, stop: str = "stop", tokens: tuple[int, int] = (10, 5)
) -> AssistantMessage:
    return AssistantMessage(list(blocks), "faux", "faux", "faux-1", usage=usage(*tokens), stop_reason=stop)  # type: ignore[arg-type]


def store_with(tmp_path: Path, *items: object) -> SessionStore:
    store = SessionStore.in_memory(tmp_path)
    for item in items:
        if isinstance(item, tuple):
            store.append_custom(*item)
        elif isinstance(item, CustomMessage):
            store.append_custom_message(item.custom_type, item.content)
        else:
            store.append_message(item)  # type: ignore[arg-type]
    return store


CALL = ToolCall("c1", "bash", {"command": "ls"})


@pytest.mark.parametrize(
    ("last", "cut"),
    [
        (UserMessage("do it"), True),
        (ToolResultMessage("c1", "bash", [TextContent("ok")]), True),
        (assistant(CALL, stop="toolUse"), True),
        (CustomMessage(CONTINUE_MESSAGE, "Continue working toward the goal."), True),
        (assistant(TextContent("done")), False),
        (assistant(stop="aborted"), False),
        (assistant(stop="error"), False),
    ],
)
def test_a_turn_is_cut_off_when_the_branch_ends_mid_turn(tmp_path: Path, last: object, cut: bool) -> None:
    store = store_with(tmp_path, UserMessage("start"), last, (GOAL_ENTRY, goal().to_json()))
    assert turn_was_cut_off(store.branch()) is cut


def test_restore_takes_the_latest_state_and_charges_unsaved_spend(tmp_path: Path) -> None:
    store = store_with(
        tmp_path,
        (GOAL_ENTRY, goal(tokens_used=100).to_json()),
        UserMessage("go"),
        assistant(CALL, stop="toolUse", tokens=(40, 10)),
        (LOOP_ENTRY, LoopState("interval", "ping", 60_000, 1, 5).to_json()),
    )
    state = restore(store.branch())
    assert state.goal is not None and state.goal.tokens_used == 150 and state.unsaved_tokens == 50
    assert state.loop == LoopState("interval", "ping", 60_000, 1, 5)


def test_a_cleared_goal_and_a_stopped_loop_are_gone(tmp_path: Path) -> None:
    store = store_with(
        tmp_path,
        (GOAL_ENTRY, goal().to_json()),
        (GOAL_ENTRY, cleared_json(goal())),
        (LOOP_ENTRY, LoopState("settled", "x").to_json()),
        (LOOP_ENTRY, LoopState("settled", "x", stopped=True).to_json()),
    )
    state = restore(store.branch())
    assert state.goal is None and state.loop is None


def test_restore_reads_the_last_tool_free_answer_for_runaway_comparison(tmp_path: Path) -> None:
    store = store_with(tmp_path, UserMessage("go"), assistant(TextContent("Still  working.")))
    assert restore(store.branch()).last_output == "Still working."
