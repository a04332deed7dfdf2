"""``/tree`` leaving a branch, as Pi 0.84.4 asks: "Summarize branch?" — no summary, a summary, or a summary with
your own focus instructions (an editor), the instructions reaching the summarization request (the real OpenAI
SDK against the fake server); Esc steps back (editor → question → tree), Esc during the summary cancels it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.modes.interactive.dialogs import EditorScreen, SelectScreen
from caddie.modes.interactive.pickers import TreePicker
from caddie.runtime.factory import SessionRequest
from caddie.session.entries import BranchSummaryEntry, MessageEntry
from tests.support import fake_llm as fl
from tests.tui.harness import (
    SMALL,
    ready,
    screen_text,
    settle,
    submit,
    type_text,
    until,
    widget_text,
    write_settings,
)


@pytest.fixture
def llm(isolated_caddie_dir: Path) -> Iterator[fl.FakeLLM]:
    write_settings()
    with fl.FakeLLM() as server:
        server.write_models_json(isolated_caddie_dir / "agent")
        yield server


def app_on(llm: fl.FakeLLM, cwd: Path) -> CaddieApp:
    request = SessionRequest(
        cwd=str(cwd), mode="tui", model="fake/fake-model", session="new", no_context_files=True
    )
    return CaddieApp(Startup(request, False, []))


async def two_turns_then_tree(app: CaddieApp, pilot: Any, llm: fl.FakeLLM) -> str:
    """Two questions answered; /tree open on the first answer (Enter not pressed yet). Its id."""
    llm.push(fl.text("first answer"), fl.text("second answer"))
    await ready(app, pilot)
    for prompt in ("first question", "second question"):
        await submit(pilot, app, prompt)
        await settle(app, pilot)
    assert app.session is not None
    first_answer = next(
        e.id
        for e in app.session.store.entries()
        if isinstance(e, MessageEntry) and e.message.role == "assistant"
    )
    await submit(pilot, app, "/tree")
    await until(pilot, lambda: isinstance(app.screen, TreePicker))
    picker = app.screen
    assert isinstance(picker, TreePicker)
    target = next(i for i, c in enumerate(picker.shown) if c.id == first_answer)
    for _ in range(picker.option_list.highlighted - target):  # type: ignore[operator]
        await pilot.press("up")
    return first_answer


async def question(app: CaddieApp, pilot: Any) -> SelectScreen:
    await until(pilot, lambda: isinstance(app.screen, SelectScreen))
    screen = app.screen
    assert isinstance(screen, SelectScreen)
    return screen


def summaries(app: CaddieApp) -> list[BranchSummaryEntry]:
    assert app.session is not None
    return [e for e in app.session.store.entries() if isinstance(e, BranchSummaryEntry)]


async def test_a_summary_with_your_own_focus_sends_the_instructions(tmp_path: Path, llm: fl.FakeLLM) -> None:
    app = app_on(llm, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        first_answer = await two_turns_then_tree(app, pilot, llm)
        await pilot.press("enter")
        asked = await question(app, pilot)
        assert widget_text(asked).count("Summarize") >= 3
        assert [str(c.prompt) for c in asked.shown] == [
            "No summary",
            "Summarize",
            "Summarize with custom prompt",
        ]
        assert "Summarize branch?" in screen_text(app)
        await pilot.press("down", "down", "enter")
        await until(pilot, lambda: isinstance(app.screen, EditorScreen))
        assert "Custom summarization instructions" in screen_text(app)
        llm.push(fl.text("Tried a second question; it went nowhere."))
        await type_text(pilot, "Keep only the failing test names")
        await pilot.press("enter")
        await until(pilot, lambda: bool(summaries(app)))
        await until(pilot, lambda: "Navigated to selected point" in widget_text(app.conversation))
        summary = summaries(app)[0]
        assert app.session is not None
        leaf = app.session.store.leaf_id
    body = json.dumps(llm.requests[-1].body)
    assert "Additional focus: Keep only the failing test names" in body
    assert "second question" in body  # the branch left behind is what is summarized
    assert summary.parent_id == first_answer and leaf == summary.id
    assert "Tried a second question; it went nowhere." in summary.summary


async def test_esc_steps_back_and_a_plain_summary_has_no_focus(tmp_path: Path, llm: fl.FakeLLM) -> None:
    app = app_on(llm, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        first_answer = await two_turns_then_tree(app, pilot, llm)
        await pilot.press("enter")
        await question(app, pilot)
        await pilot.press("escape")  # the question: back to the tree, on the same entry
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        picker = app.screen
        assert isinstance(picker, TreePicker)
        chosen = picker.highlighted_choice()
        assert chosen is not None and chosen.id == first_answer
        await pilot.press("enter")
        await question(app, pilot)
        await pilot.press("down", "down", "enter")
        await until(pilot, lambda: isinstance(app.screen, EditorScreen))
        await pilot.press("escape")  # the editor: the question again
        await question(app, pilot)
        requests = len(llm.requests)
        llm.push(fl.text("A plain summary."))
        await pilot.press("down", "enter")  # "Summarize"
        await until(pilot, lambda: bool(summaries(app)))
    assert len(llm.requests) == requests + 1
    assert "Additional focus" not in json.dumps(llm.requests[-1].body)


async def test_esc_during_the_summary_cancels_it_and_brings_the_tree_back(
    tmp_path: Path, llm: fl.FakeLLM
) -> None:
    app = app_on(llm, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        first_answer = await two_turns_then_tree(app, pilot, llm)
        assert app.session is not None
        leaf = app.session.store.leaf_id
        requests = len(llm.requests)
        llm.push(fl.stall(after_events=1, seconds=10))
        await pilot.press("enter")
        await question(app, pilot)
        await pilot.press("down", "enter")  # "Summarize"
        await until(pilot, lambda: len(llm.requests) > requests)
        await until(pilot, lambda: "Summarizing branch..." in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        assert "Branch summarization cancelled" in widget_text(app.conversation)
        picker = app.screen
        assert isinstance(picker, TreePicker)
        chosen = picker.highlighted_choice()
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TreePicker))
        assert "Summarizing branch..." not in screen_text(app)
    assert chosen is not None and chosen.id == first_answer
    assert app.session.store.leaf_id == leaf and not summaries(app)  # nothing moved, nothing written
