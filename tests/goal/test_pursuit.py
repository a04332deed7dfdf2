"""A goal pursued end to end in-process: the real session, the faux model, real check commands in git repos."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import SessionCompactEvent
from caddie.extensions.bundled.goal.render import STANDING_ORDERS
from caddie.session.entries import CompactionEntry
from tests.goal.helpers import call, git_repo, last_user_side_text, open_session, say, usage

CALC_BUG = "def add(a, b):\n    return a - b\n"
CALC_TEST = (
    'from calc import add\n\nassert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}"\nprint("1 passed")\n'
)


def calc_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = git_repo(tmp_path / "calc")
    (repo / "calc.py").write_text(CALC_BUG)
    (repo / "test_calc.py").write_text(CALC_TEST)
    return repo, f"{shlex.quote(sys.executable)} test_calc.py"


async def test_a_goal_completes_only_after_the_model_fixes_the_failing_test(tmp_path: Path) -> None:
    repo, check = calc_repo(tmp_path)
    gs = await open_session(
        repo,
        flags={"goal": "make test_calc.py pass", "goal-check": check},
        steps=[
            call("update_goal", {"status": "complete"}),
            call("edit", {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}),
            call("update_goal", {"status": "complete"}),
            say("Done: add() adds."),
            say("never requested"),
        ],
    )
    await gs.idle()

    refused, edited, accepted = gs.tool_results()
    assert refused.is_error
    refusal = refused.content[0].text  # type: ignore[union-attr]
    assert "exited with code 1" in refusal and "AssertionError: add(2, 3) returned -1" in refusal
    assert "goal stays active" in refusal
    assert not edited.is_error and (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert not accepted.is_error and "exited with code 0" in accepted.content[0].text  # type: ignore[union-attr]
    assert len(gs.requests) == 4 and gs.faux.pending_count == 1
    assert gs.goal()["status"] == "complete"
    assert gs.ui.statuses["goal"] == "Goal complete"
    assert gs.session.state().exit_code == 0


async def test_completion_is_refused_while_the_check_fails_and_the_model_sees_why(tmp_path: Path) -> None:
    repo, check = calc_repo(tmp_path)

    def answer_from_check(context: Context, options: StreamOptions, index: int, model: Model) -> Any:
        results = [m for m in context.messages if m.role == "toolResult"]
        assert "add(2, 3) returned -1" in results[-1].content[0].text  # type: ignore[union-attr]
        return faux_message("The check still fails; I will keep working.", usage=usage(2_000, 5))

    gs = await open_session(
        repo,
        mode="tui",
        steps=[
            call(
                "create_goal", {"objective": "make test_calc.py pass", "check": check, "token_budget": "2k"}
            ),
            call("update_goal", {"status": "complete", "notes": "tried completing early"}),
            answer_from_check,
            say("never requested"),
        ],
    )
    await gs.prompt("create a goal: make test_calc.py pass")

    created, refused = gs.tool_results()
    assert not created.is_error and refused.is_error
    assert "was not marked complete" in refused.content[0].text  # type: ignore[union-attr]
    state = gs.goal()
    assert (state["check"], state["tokenBudget"], state["status"]) == (check, 2_000, "budget_limited")
    assert state["notes"] == "tried completing early"  # notes are saved even when completion is refused
    assert len(gs.requests) == 3


async def test_the_budget_stops_the_run_before_its_next_model_request(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        flags={"goal": "count to three", "goal-budget": "1k"},
        steps=[
            faux_message(  # cache reads are large but never count
                [faux_tool_call("bash", {"command": "echo one"})], usage=usage(400, 100, cache_read=90_000)
            ),
            call("bash", {"command": "echo two > two.txt"}, tokens=(450, 100)),
            say("never requested"),
        ],
    )
    await gs.idle()

    assert len(gs.requests) == 2 and gs.faux.pending_count == 1
    assert (tmp_path / "two.txt").exists()  # the reply that crossed the budget still had its tools run
    state = gs.goal()
    assert (state["status"], state["tokensUsed"], state["tokenBudget"]) == ("budget_limited", 1_050, 1_000)
    assert gs.ui.statuses["goal"] == "Goal budget reached"
    assert gs.session.state().exit_code == 3
    assert len(gs.continuations()) == 1  # the start only: no continuation once the budget is reached


async def test_three_identical_tool_free_answers_pause_the_goal(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        flags={"goal": "finish the report"},
        steps=[
            say("I am working on it."),
            say("I am  working on it.\n"),
            say("I am working on it."),
            say("x"),
        ],
    )
    await gs.idle()

    assert len(gs.requests) == 3 and gs.faux.pending_count == 1
    assert gs.goal()["status"] == "paused" and gs.goal()["runawayStreak"] == 3
    assert any("same answer came back 3 times" in n for n in gs.ui.notice_texts())
    assert gs.ui.statuses["goal"] == "Goal paused"
    assert gs.session.state().exit_code == 4


async def test_five_goal_turns_without_an_edit_bring_the_stagnation_line(tmp_path: Path) -> None:
    steps: list[Any] = []
    for n in range(5):
        steps += [call("bash", {"command": f"echo look {n}"}), say(f"Looked around ({n}).")]
    steps += [call("update_goal", {"status": "complete"}), say("done")]
    gs = await open_session(tmp_path, flags={"goal": "tidy the repo"}, steps=steps)
    await gs.idle()

    texts = gs.continuation_texts()
    assert len(texts) == 6  # the start and one continuation after each of the five goal turns
    assert ["No successful edit or write" in t for t in texts] == [False] * 5 + [True]
    assert "in the last 5 goal turns" in texts[-1]
    assert gs.goal()["status"] == "complete"


async def test_user_input_resets_the_stagnation_count(tmp_path: Path) -> None:
    failure = faux_message("", error_message="400 invalid request", error_status=400)
    gs = await open_session(tmp_path, mode="tui", steps=[say("a"), say("b"), failure, say("read it")])
    await gs.prompt("/goal tidy the repo")
    assert (gs.goal()["status"], gs.goal()["turnsWithoutChange"]) == ("paused", 2)

    await gs.prompt("look at the README first")

    assert gs.goal()["turnsWithoutChange"] == 0
    assert len(gs.continuations()) == 3  # start, after "a", after "b"; nothing after the user's turn


async def test_exactly_one_continuation_per_turn_even_with_a_queued_user_message(tmp_path: Path) -> None:
    gs = await open_session(tmp_path, mode="tui")

    def queue_user_follow_up(context: Context, options: StreamOptions, index: int, model: Model) -> Any:
        gs.session.follow_up("also check the docs")  # typed while the goal's first turn runs
        return faux_message("first pass done", usage=usage(10, 5))

    gs.faux.set_responses(
        [queue_user_follow_up, say("docs checked"), call("update_goal", {"status": "complete"}), say("ok")]
    )
    await gs.prompt("/goal ship the feature")

    asked = [last_user_side_text(r).splitlines()[0] for r in gs.requests]
    assert asked == [
        "A goal is set for this session. Start working toward it now.",
        "also check the docs",  # the user's message took the turn; the goal queued nothing
        "Continue working toward the goal.",
        "Continue working toward the goal.",
    ]
    assert len(gs.continuations()) == 2


async def test_standing_orders_are_byte_stable_and_present_only_while_a_goal_exists(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path,
        mode="tui",
        steps=[
            say("hello"),
            call("bash", {"command": "echo a"}),
            say("step one"),
            call("bash", {"command": "echo b"}),
            say("step two"),
            call("update_goal", {"status": "complete"}),
            say("done"),
            say("after clear"),
        ],
    )
    await gs.prompt("hi")
    await gs.prompt("/goal do two steps")
    await gs.prompt("/goal clear")
    await gs.prompt("anything else?")

    prompts = [r.system_prompt or "" for r in gs.requests]
    assert all(line not in prompts[0] for line in STANDING_ORDERS)
    assert all(line not in prompts[-1] for line in STANDING_ORDERS)
    goal_prompts = prompts[1:-1]
    assert len(set(goal_prompts)) == 1 and all(line in goal_prompts[0] for line in STANDING_ORDERS)
    assert "tokens used" not in goal_prompts[0]
    tails = gs.continuation_texts()
    assert len(set(tails)) == len(tails)  # live counters change at the tail
    goal_tools = {"create_goal", "get_goal", "update_goal"}
    assert not goal_tools & {*gs.tool_names(0), *gs.tool_names(-1)}
    assert goal_tools <= set(gs.tool_names(1))
    assert gs.ui.statuses.get("goal") is None


async def test_notes_return_in_the_continuation_after_a_compaction_but_not_when_just_written(
    tmp_path: Path,
) -> None:
    gs = await open_session(tmp_path, mode="tui")

    async def compact_then_answer(context: Context, options: StreamOptions, index: int, model: Model) -> Any:
        entry = CompactionEntry("c0mp", None, "2026-01-01T00:00:00.000Z", "summary", "x", 1_000)
        await gs.session.extensions.emit(
            "session_compact", SessionCompactEvent(entry, False, "threshold", False)
        )
        return faux_message("compacted and still going", usage=usage(10, 5))

    gs.faux.set_responses(
        [
            call("update_goal", {"notes": "done: lexer. next: grammar."}),
            say("noted"),
            compact_then_answer,
            call("update_goal", {"status": "complete"}),
            say("done"),
        ]
    )
    await gs.prompt("/goal port the parser")

    texts = gs.continuation_texts()
    assert ["done: lexer. next: grammar." in t for t in texts] == [False, False, True]
