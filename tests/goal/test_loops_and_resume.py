"""/loop on a controllable clock, and what reopening a session restores (goal, loops, one continuation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.faux import faux_message
from caddie.extensions.bundled.goal.model import GOAL_ENTRY, Goal
from caddie.session.store import SessionStore
from caddie.testing import FakeClock
from tests.goal.helpers import call, last_user_side_text, open_session, say, usage


def asked(gs: Any) -> list[str]:
    return [last_user_side_text(r) for r in gs.requests]


async def test_an_interval_loop_fires_at_once_then_on_time(tmp_path: Path, clock: FakeClock) -> None:
    gs = await open_session(tmp_path, clock=clock, mode="tui", steps=[say(f"checked {n}") for n in range(3)])
    await gs.prompt("/loop 5m check for failing CI jobs")
    assert asked(gs) == ["check for failing CI jobs"]
    assert gs.ui.statuses["loop"] == "Loop every 5m (1)"

    await clock.advance(299)
    await gs.idle()
    assert len(gs.requests) == 1
    await clock.advance(1)
    await gs.idle()
    assert asked(gs) == ["check for failing CI jobs"] * 2
    assert gs.ui.statuses["loop"] == "Loop every 5m (2)"

    await gs.prompt("/loop stop")
    await clock.advance(3_600)
    await gs.idle()
    assert len(gs.requests) == 2 and "loop" not in gs.ui.statuses
    assert [s["iteration"] for s in gs.loop_states()] == [0, 1, 2, 2] and gs.loop_states()[-1]["stopped"]
    await gs.close()


async def test_a_self_paced_loop_refires_250ms_after_each_settle(tmp_path: Path, clock: FakeClock) -> None:
    gs = await open_session(
        tmp_path, clock=clock, mode="tui", steps=[say("reviewed"), say("reviewed again"), say("x")]
    )
    await gs.prompt("/loop review recent work and fix unfinished items")
    assert len(gs.requests) == 1 and gs.ui.statuses["loop"] == "Loop self-paced (1)"

    await clock.advance(0.2)
    await gs.idle()
    assert len(gs.requests) == 1
    await clock.advance(0.05)
    await gs.idle()
    assert len(gs.requests) == 2 and gs.ui.statuses["loop"] == "Loop self-paced (2)"

    await gs.prompt("/loop")
    assert gs.ui.notices[-1][0] == "Loop self-paced (2): review recent work and fix unfinished items"
    await gs.prompt("/loop off")
    await clock.advance(1)
    await gs.idle()
    assert len(gs.requests) == 2
    await gs.close()


async def test_a_bare_number_interval_is_refused(tmp_path: Path, clock: FakeClock) -> None:
    gs = await open_session(tmp_path, clock=clock, mode="tui")
    await gs.prompt("/loop 5 check CI")
    assert "no unit" in gs.ui.notices[-1][0] and not gs.loop_states() and not gs.requests


async def test_a_loop_and_a_goal_share_one_continuation_per_turn(tmp_path: Path, clock: FakeClock) -> None:
    async def tick_during_the_turn(context: Context, options: StreamOptions, index: int, model: Model) -> Any:
        await clock.advance(60)  # the loop fires while the goal's turn runs: it queues a follow-up
        return faux_message("goal work", usage=usage(10, 5))

    gs = await open_session(
        tmp_path,
        clock=clock,
        mode="tui",
        steps=[
            say("ping 1"),
            tick_during_the_turn,
            say("ping 2"),
            call("update_goal", {"status": "complete"}),
            say("done"),
        ],
    )
    await gs.prompt("/loop 1m ping")
    await gs.prompt("/goal keep the lights on")
    await gs.idle()

    firsts = [t.splitlines()[0] for t in asked(gs)]
    assert firsts == [
        "ping",
        "A goal is set for this session. Start working toward it now.",
        "ping",  # the loop's message took the turn; the goal queued nothing
        "Continue working toward the goal.",
        "Continue working toward the goal.",
    ]
    await gs.prompt("/loop stop")
    await gs.close()


async def test_an_interval_loop_is_rearmed_when_the_session_reopens(tmp_path: Path, clock: FakeClock) -> None:
    gs = await open_session(tmp_path, clock=clock, mode="tui", steps=[say("pong")])
    await gs.prompt("/loop 5m ping")
    path = gs.session.store.session_file
    await gs.close()
    assert path is not None

    await clock.advance(120)  # reopened before the interval passed: it waits for the rest
    later = await open_session(
        tmp_path, clock=clock, mode="tui", session="file", session_file=path, steps=[say("pong 2")]
    )
    await later.idle()
    assert later.ui.statuses["loop"] == "Loop every 5m (1)" and not later.requests
    await clock.advance(180)
    await later.idle()
    assert len(later.requests) == 1 and later.ui.statuses["loop"] == "Loop every 5m (2)"
    await later.close()

    await clock.advance(3_600)  # reopened long after: fires at once
    again = await open_session(
        tmp_path, clock=clock, mode="tui", session="file", session_file=path, steps=[say("pong 3")]
    )
    await again.idle()
    assert len(again.requests) == 1 and again.ui.statuses["loop"] == "Loop every 5m (3)"
    await again.close()

    headless = await open_session(tmp_path, clock=clock, mode="print", session="file", session_file=path)
    await headless.idle()
    assert not headless.requests  # a headless run does not re-arm timers
    await headless.close()


# --------------------------------------------------------------------------------------------------
# Crash resume


def cut_off_session(tmp_path: Path, last: Any, notes: str = "") -> str:
    """A session file whose active goal was mid-turn when the process died."""
    store = SessionStore.create(tmp_path)
    store.append_model_change("faux", "faux-1")
    store.append_custom(
        GOAL_ENTRY, Goal("g1", "keep the build green", tokens_used=500, notes=notes).to_json()
    )
    store.append_message(UserMessage("go"))
    call_block = ToolCall("c1", "bash", {"command": "make"})
    store.append_message(
        AssistantMessage([call_block], "faux", "faux", "faux-1", usage=usage(40, 10), stop_reason="toolUse")
    )
    if last is not None:
        store.append_message(last)
    assert store.session_file is not None
    return store.session_file


async def test_an_interactive_reopen_continues_a_cut_off_turn_exactly_once(tmp_path: Path) -> None:
    path = cut_off_session(
        tmp_path, ToolResultMessage("c1", "bash", [TextContent("ok")]), notes="done: deps. next: tests."
    )
    gs = await open_session(
        tmp_path,
        mode="tui",
        session="file",
        session_file=path,
        steps=[call("update_goal", {"status": "complete"}), say("done"), say("never")],
    )
    await gs.idle()

    [resume, *_] = gs.continuations()
    assert resume.details["kind"] == "resume" and len(gs.continuations()) == 1
    assert "done: deps. next: tests." in str(resume.content)  # notes come back after a reopen
    assert gs.goal_states()[1]["tokensUsed"] == 550  # the dead process's last reply is charged
    assert len(gs.requests) == 2 and gs.goal()["status"] == "complete"
    await gs.close()

    again = await open_session(tmp_path, mode="tui", session="file", session_file=path, steps=[say("never")])
    await again.idle()
    assert not again.requests


async def test_a_headless_reopen_does_not_continue(tmp_path: Path) -> None:
    path = cut_off_session(tmp_path, ToolResultMessage("c1", "bash", [TextContent("ok")]))
    gs = await open_session(tmp_path, mode="print", session="file", session_file=path, steps=[say("never")])
    await gs.idle()
    assert not gs.requests and not gs.continuations()


async def test_an_aborted_or_failed_turn_is_not_resumed(tmp_path: Path) -> None:
    stops: tuple[Literal["aborted", "error"], ...] = ("aborted", "error")
    for stop in stops:
        last = AssistantMessage([], "faux", "faux", "faux-1", stop_reason=stop, error_message="x")
        path = cut_off_session(tmp_path / stop, last)
        gs = await open_session(tmp_path, mode="tui", session="file", session_file=path, steps=[say("never")])
        await gs.idle()
        assert not gs.requests, stop


async def test_a_tool_call_that_never_ran_is_resumed(tmp_path: Path) -> None:
    path = cut_off_session(tmp_path, None)
    gs = await open_session(
        tmp_path, mode="tui", session="file", session_file=path, steps=[say("picked up"), say("x")]
    )
    await gs.session.prompt("/goal pause")  # let only the resume run
    await gs.idle()
    assert gs.continuations()[0].details["kind"] == "resume"
    assert len(gs.requests) == 1


async def test_active_time_is_counted_per_goal_turn_and_shown_live(tmp_path: Path, clock: FakeClock) -> None:
    async def slow_turn(context: Context, options: StreamOptions, index: int, model: Model) -> Any:
        await clock.advance(12 * 60)
        return faux_message("twelve minutes of work", usage=usage(40_000, 1_234))

    gs = await open_session(
        tmp_path,
        clock=clock,
        mode="tui",
        flags={"goal": "grind", "goal-budget": "100k"},
        steps=[slow_turn, call("update_goal", {"status": "complete"}), say("done")],
    )
    await gs.idle()
    assert ("goal", "Goal · 12m · 41.2k/100k tokens") in gs.ui.status_history
    assert "12m active · 41,234 tokens used · 58,766 of 100,000 left" in gs.continuation_texts()[1]


async def test_moving_in_the_tree_shows_the_goal_as_it_was_on_that_branch(tmp_path: Path) -> None:
    gs = await open_session(
        tmp_path, mode="tui", steps=[say("hello"), call("update_goal", {"status": "complete"}), say("done")]
    )
    await gs.prompt("hi")
    before_goal = gs.session.store.leaf_id
    await gs.prompt("/goal say done")
    assert gs.ui.statuses["goal"] == "Goal complete"
    assert before_goal is not None

    await gs.session.navigate_tree(before_goal)

    assert "goal" not in gs.ui.statuses
    assert not {"create_goal", "get_goal", "update_goal"} & set(gs.session.core.tools.active_names())
