"""/rewind in the terminal UI (Textual Pilot): pick a prompt, choose what to take back; /fork offers the
files when they changed since that point."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.modes.interactive.dialogs import ListScreen, SelectScreen
from tests.tui.harness import SMALL, make_app, ready, settle, submit, until


def _steps() -> list[object]:
    return [
        faux_message([faux_tool_call("write", {"path": "plan.md", "content": "draft 1\n"})]),
        faux_message("wrote the plan"),
        faux_message([faux_tool_call("write", {"path": "plan.md", "content": "draft 2\n"})]),
        faux_message("rewrote it"),
    ]


async def test_rewind_both_takes_back_files_and_conversation(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, _steps())  # type: ignore[arg-type]
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("write a plan", "rewrite the plan"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        assert (tmp_path / "plan.md").read_text() == "draft 2\n"
        await submit(pilot, app, "/rewind")
        await until(
            pilot,
            lambda: isinstance(app.screen, ListScreen) and "Rewind to" in app.screen.title_text,
            timeout=30,
        )
        await pilot.press("enter")  # newest first: before "rewrite the plan"
        await until(pilot, lambda: isinstance(app.screen, SelectScreen), timeout=30)
        await pilot.press("enter")  # "Conversation and files"
        await until(pilot, lambda: (tmp_path / "plan.md").read_text() == "draft 1\n", timeout=30)
        await until(
            pilot, lambda: app.editor.text == "rewrite the plan", timeout=30
        )  # the conversation moved
        assert app.session is not None
        assert [m.role for m in app.session.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_fork_offers_the_files_only_when_they_changed(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, _steps())  # type: ignore[arg-type]
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("write a plan", "rewrite the plan"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        original = app.session.store.session_file if app.session else None
        await submit(pilot, app, "/fork")
        await until(
            pilot, lambda: isinstance(app.screen, ListScreen) and "Fork" in app.screen.title_text, timeout=30
        )
        await pilot.press("down", "enter")  # the older message: "write a plan"
        await until(pilot, lambda: isinstance(app.screen, SelectScreen), timeout=30)
        assert isinstance(app.screen, SelectScreen) and "plan.md" in app.screen.title_text
        await pilot.press("down", "enter")  # "Conversation and files"
        await until(pilot, lambda: app.session is not None and app.session.store.session_file != original)
        await until(
            pilot, lambda: not (tmp_path / "plan.md").exists(), timeout=30
        )  # before the first prompt: no plan
        assert app.editor.text == "write a plan"
