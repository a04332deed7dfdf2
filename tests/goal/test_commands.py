"""/goal and /create-goal, the goal tools, failures, and headless outcomes — in-process sessions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import UserMessage
from caddie.ai.providers.faux import PacedStep, faux_message
from caddie.extensions.bundled.goal import GoalOptions
from caddie.extensions.bundled.goal.commands import create_goal_template
from caddie.extensions.bundled.goal.render import UNBOUNDED_ADVISORY
from tests.goal.helpers import call, last_user_side_text, open_session, say, usage

GOAL_TOOLS = {"create_goal", "get_goal", "update_goal"}


async def test_goal_clear_drops_the_goal_its_tools_and_its_status(tmp_path: Path) -> None:
    gs = await open_session(tmp_path, mode="tui", steps=[say("started"), say("again"), say("plain answer")])
    await gs.prompt("/goal pause")
    assert gs.ui.notices[-1] == ("No goal is set. Start one with /goal <objective>.", "warning")
    gs.faux.set_responses([say("started")])
    failure = faux_message("", error_message="400 invalid request", error_status=400)
    gs.faux.append_responses([failure])
    await gs.prompt("/goal write the changelog")
    assert gs.ui.statuses["goal"] == "Goal paused"

    await gs.prompt("/goal clear")
    gs.faux.append_responses([say("plain answer")])
    await gs.prompt("what changed?")

    assert gs.goal()["status"] == "cleared"
    assert "goal" not in gs.ui.statuses
    assert not GOAL_TOOLS & set(gs.tool_names(-1))
    assert len(gs.continuations()) == 2  # nothing continues after a cleared goal
    assert gs.ui.notices[-1] == ("Goal cleared.", "info")


async def test_goal_subcommands_change_the_state(tmp_path: Path) -> None:
    gs = await open_session(tmp_path, mode="tui")
    gs.ui.editor_answers = ["migrate the schema to v2 and keep v1 readable"]
    await gs.prompt("/goal pause")  # no goal yet
    gs.faux.set_responses([say("on it")] + [say(f"step {n}") for n in range(3)])
    await gs.prompt("/goal with token budget 50k migrate the schema")
    state = gs.goal()
    assert (state["objective"], state["tokenBudget"]) == ("migrate the schema", 50_000)

    await gs.prompt("/goal edit")
    await gs.prompt('/goal check "python3 -c pass"')
    await gs.prompt("/goal budget off")
    await gs.prompt("/goal")
    report = gs.ui.notices[-1][0]
    assert report.startswith("Goal (")
    assert "migrate the schema to v2 and keep v1 readable" in report
    assert "Check: python3 -c pass" in report and "no budget: spend is unbounded" in report
    assert (gs.goal()["check"], gs.goal()["tokenBudget"]) == ("python3 -c pass", None)

    await gs.prompt("/goal another objective")
    assert "already set" in gs.ui.notices[-1][0]
    await gs.prompt("/goal budget lots")
    assert "not a token count" in gs.ui.notices[-1][0]


async def test_budget_resume_adds_50k_and_the_status_bar_says_so(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        mode="tui",
        flags={"goal": "count", "goal-budget": "1000"},
        steps=[say("one", tokens=(900, 200)), call("update_goal", {"status": "complete"}), say("done")],
    )
    await gs.idle()
    assert gs.goal()["status"] == "budget_limited" and gs.ui.statuses["goal"] == "Goal budget reached"

    await gs.prompt("/goal resume")

    resumed = [s for s in gs.goal_states() if s["status"] == "active"][-1]
    assert (resumed["tokenBudget"], resumed["budgetRaisedTo"]) == (51_100, 51_100)
    assert ("goal", "Goal · 0s · 1.1k/51.1k tokens · budget raised") in gs.ui.status_history
    assert "raised to 51,100 tokens" in " ".join(gs.ui.notice_texts())
    assert gs.continuations()[-1].details["kind"] == "resumed"
    assert gs.goal()["status"] == "complete"


async def test_raising_the_budget_past_spend_resumes_a_budget_limited_goal(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        mode="tui",
        flags={"goal": "count", "goal-budget": "1000"},
        steps=[say("one", tokens=(900, 200)), call("update_goal", {"status": "complete"}), say("done")],
    )
    await gs.idle()
    await gs.prompt("/goal budget 1k")
    assert gs.goal()["status"] == "budget_limited"
    await gs.prompt("/goal budget 5k")
    assert gs.goal()["status"] == "complete" and len(gs.requests) == 3


async def test_a_provider_error_pauses_the_goal(tmp_path: Path) -> None:
    failure = faux_message("", error_message="400 invalid request: bad tool schema", error_status=400)
    gs = await open_session(tmp_path, flags={"goal": "anything"}, steps=[failure])
    await gs.idle()
    assert gs.goal()["status"] == "paused" and gs.session.state().exit_code == 4
    assert any("ended with an error" in n for n in gs.ui.notice_texts())


@pytest.mark.parametrize(
    ("message", "status"),
    [("You exceeded your current quota (insufficient_quota)", 429), ("Your credit balance is too low", 402)],
)
async def test_quota_and_billing_errors_mark_usage_limits(tmp_path: Path, message: str, status: int) -> None:
    gs = await open_session(
        tmp_path,
        flags={"goal": "anything"},
        steps=[faux_message("", error_message=message, error_status=status)],
    )
    await gs.idle()
    assert gs.goal()["status"] == "usage_limited" and gs.session.state().exit_code == 5
    assert gs.ui.statuses["goal"] == "Goal hit usage limits"


async def test_a_rate_limit_counts_only_after_the_hosts_retries_give_up(tmp_path: Path) -> None:
    limited = faux_message("", error_message="429 Too Many Requests", error_status=429)
    gs = await open_session(
        tmp_path,
        flags={"goal": "anything"},
        steps=[limited, limited],
        settings={"disabledExtensions": ["mulligan"], "retry": {"maxRetries": 1, "baseDelayMs": 1}},
    )
    await gs.idle()
    assert len(gs.requests) == 2
    assert gs.goal()["status"] == "usage_limited"


async def test_a_retry_that_succeeds_keeps_the_goal_going(tmp_path: Path) -> None:
    overloaded = faux_message("", error_message="529 overloaded", error_status=529)
    gs = await open_session(
        tmp_path,
        flags={"goal": "anything"},
        steps=[overloaded, call("update_goal", {"status": "complete"}), say("done")],
        settings={"disabledExtensions": ["mulligan"], "retry": {"maxRetries": 2, "baseDelayMs": 1}},
    )
    await gs.idle()
    assert gs.goal()["status"] == "complete" and gs.session.state().exit_code == 0


async def test_an_aborted_run_pauses_the_goal(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path, mode="tui", steps=[PacedStep(say("a long answer " * 20), delay_ms=20), say("x")]
    )
    await gs.session.prompt("/goal write a lot")
    await asyncio.sleep(0.1)
    gs.session.abort()
    await gs.idle()
    assert gs.goal()["status"] == "paused" and len(gs.requests) == 1
    assert any("run was stopped" in n for n in gs.ui.notice_texts())


async def test_blocked_needs_three_consecutive_goal_turns_then_exits_2(tmp_path: Path) -> None:
    steps: list[Any] = []
    for n in range(3):
        steps += [
            call("update_goal", {"status": "blocked", "notes": f"no API key ({n})"}),
            say(f"blocked {n}"),
        ]
    gs = await open_session(tmp_path, flags={"goal": "call the API"}, steps=steps)
    await gs.idle()

    results = gs.tool_results()
    assert [r.is_error for r in results] == [True, True, False]
    assert "goal turn 1 of 3" in results[0].content[0].text  # type: ignore[union-attr]
    assert gs.goal()["status"] == "blocked" and gs.session.state().exit_code == 2
    assert gs.ui.statuses["goal"] == "Goal blocked"


async def test_goal_tools_are_deferred_until_a_prompt_asks_for_a_goal(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        mode="tui",
        steps=[
            say("hello"),
            call("create_goal", {"objective": "make the linter pass"}),
            call("create_goal", {"objective": "a second goal"}),
            call("get_goal"),
            call("update_goal", {"notes": "x" * 3_001}),
            call("update_goal", {"status": "complete", "notes": "all clean"}),
            say("done"),
            say("later"),
        ],
    )
    await gs.prompt("fix the lint warnings")
    assert not GOAL_TOOLS & set(gs.tool_names(0))
    await gs.prompt("create a goal: make the linter pass")

    created, second, got, too_long, done = gs.tool_results()
    assert set(gs.tool_names(1)) >= GOAL_TOOLS
    assert UNBOUNDED_ADVISORY in created.content[0].text  # type: ignore[union-attr]
    assert second.is_error and "already set" in second.content[0].text  # type: ignore[union-attr]
    assert "Tokens used:" in got.content[0].text and "Session: " in got.content[0].text  # type: ignore[union-attr]
    assert too_long.is_error and "3,001 characters; the limit is 3,000" in too_long.content[0].text  # type: ignore[union-attr]
    assert not done.is_error and gs.goal()["notes"] == "all clean"
    await gs.prompt("thanks")
    assert set(gs.tool_names(-1)) >= GOAL_TOOLS  # a goal exists (complete): the tools stay


async def test_create_goal_command_expands_the_template_as_a_user_message(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        mode="tui",
        steps=[call("create_goal", {"objective": "Done when X.", "check": "true"}), say("created")],
    )
    gs.faux.append_responses([call("update_goal", {"status": "complete"}), say("done")])
    await gs.prompt("/create-goal make the docs build without warnings")

    first = gs.requests[0]
    user = [m for m in first.messages if isinstance(m, UserMessage)][-1]
    text = last_user_side_text(first)
    assert user.role == "user" and text == create_goal_template().replace(
        "$ARGUMENTS", "make the docs build without warnings"
    )
    assert "What done means" in text and "out of scope" in text
    assert set(gs.tool_names(0)) >= GOAL_TOOLS
    assert gs.goal()["status"] == "complete"


async def test_a_check_that_times_out_is_a_failure_that_says_so(
    tmp_path: Path,
) -> None:
    gs = await open_session(
        tmp_path,
        options=GoalOptions(check_timeout_s=0.3),
        flags={"goal": "wait", "goal-check": "sleep 30", "goal-budget": "100"},
        steps=[call("update_goal", {"status": "complete"})],
    )
    await gs.idle()
    [result] = gs.tool_results()
    assert result.is_error and "timed out after 0.3 s" in result.content[0].text  # type: ignore[union-attr]


async def test_long_check_output_comes_back_as_its_last_1500_bytes(tmp_path: Path) -> None:
    check = "python3 -c \"print('x' * 5000); print('FAILED: test_end'); raise SystemExit(3)\""
    gs = await open_session(
        tmp_path,
        flags={"goal": "pass", "goal-check": check, "goal-budget": "150"},
        steps=[call("update_goal", {"status": "complete"}, tokens=(100, 60))],
    )
    await gs.idle()
    [result] = gs.tool_results()
    text = result.content[0].text  # type: ignore[union-attr]
    assert "exited with code 3" in text and "Check output (last 1,500 bytes):" in text
    assert text.rstrip().endswith("FAILED: test_end")
    assert text.count("x") < 1_600


async def test_headless_flag_mistakes_exit_2_without_running(tmp_path: Path) -> None:
    gs = await open_session(tmp_path, flags={"goal": "x", "goal-budget": "plenty"})
    await gs.idle()
    assert gs.session.state().exit_code == 2 and not gs.requests
    assert any(level == "error" and "--goal" in m for m, level in gs.ui.notices)


async def test_print_mode_usage_is_not_charged_for_cache(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        flags={"goal": "x", "goal-budget": "10k"},
        steps=[
            faux_message("thinking", usage=usage(100, 50, cache_read=50_000, cache_write=20_000)),
            call("update_goal", {"status": "complete"}, tokens=(10, 5)),
            say("done"),
        ],
    )
    await gs.idle()
    assert gs.goal()["tokensUsed"] == 165


async def test_a_prompt_given_with_the_goal_flag_is_the_first_goal_turn(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        flags={"goal": "say hi"},
        steps=[call("update_goal", {"status": "complete"}), say("done"), say("never")],
    )
    await gs.session.prompt("and greet the team too", source="print")  # as caddie -p --goal X "prompt" does
    await gs.idle()
    assert len(gs.requests) == 2 and not gs.continuations()
    assert gs.goal()["status"] == "complete" and gs.session.state().exit_code == 0
