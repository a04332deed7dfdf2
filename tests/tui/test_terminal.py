"""The app as a terminal program: small and large screens, NO_COLOR, start-up problems, initial prompts."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.color import Color

from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.conversation import InfoBlock, MarkdownText, UserBlock
from tests.tui.harness import LARGE, SMALL, make_app, ready, screen_text, settle, submit, until, widget_text


@pytest.mark.parametrize("size", [SMALL, LARGE], ids=["80x24", "200x60"])
async def test_everything_fits_the_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    reply = "A reply with a long line " * 20 + "\n\n```python\n" + "x = 1  # " + "y" * 150 + "\n```"
    app, _ = make_app(tmp_path, [faux_message(reply)])
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hello")
        await settle(app, pilot)
        width, height = size
        regions = {
            name: widget.region
            for name, widget in {
                "conversation": app.conversation,
                "editor": app.editor,
                "footer": app.footer,
            }.items()
        }
        text = screen_text(app)
    for name, region in regions.items():
        assert region.right <= width and region.bottom <= height, f"{name} is off screen: {region}"
    assert regions["conversation"].height >= height // 2
    assert regions["editor"].y < regions["footer"].y
    assert "faux/faux-1" in text
    assert all(len(line) <= width for line in text.splitlines())


async def test_no_color_renders_without_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = make_app(tmp_path, [faux_message("```python\nprint('hi')\n```")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "code please")
        await settle(app, pilot)
        colours = set()
        for strip in app.screen._compositor.render_strips():
            for line_filter in app._filters:
                strip = strip.apply_filter(line_filter, Color(0, 0, 0))
            for segment in strip:
                style = segment.style
                if style is not None:
                    colours |= {c for c in (style.color, style.bgcolor) if c is not None and c.triplet}
    assert app.no_color
    assert all(c.triplet.red == c.triplet.green == c.triplet.blue for c in colours)  # type: ignore[union-attr]


async def test_a_setup_problem_ends_the_app_with_its_message(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, session="file", session_file=str(tmp_path / "missing.jsonl"))
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: not app.is_running)
    assert app.return_code == 2
    assert app.exit_message is not None and "No session file" in app.exit_message


async def test_without_a_model_the_ui_opens_explains_and_model_fixes_it(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, model=None)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        explained = widget_text(app.conversation.blocks_of(InfoBlock)[-1])
        await submit(pilot, app, "hello")
        await until(
            pilot,
            lambda: "nothing to send the prompt to" in widget_text(app.conversation.blocks_of(InfoBlock)[-1]),
        )
        footer = widget_text(app.footer)
        kept = app.editor.text
        await submit(pilot, app, "/model faux/echo")
        await until(pilot, lambda: app.session is not None and app.session.model is not None)
        await submit(pilot, app, "echo me")
        await settle(app, pilot)
        answers = [m.text for m in app.conversation.blocks_of(MarkdownText)]
    assert "No model is configured" in explained
    assert "no model (/model)" in footer
    assert kept == "hello", "the prompt typed without a model was thrown away"
    assert answers == ["echo me"]


async def test_initial_prompts_from_the_command_line_are_sent_in_order(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("one"), faux_message("two")], prompts=["first", "second"])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: len(app.conversation.blocks_of(MarkdownText)) == 2)
        await settle(app, pilot)
        users = [b.text for b in app.conversation.blocks_of(UserBlock)]
    assert users == ["first", "second"]


async def test_escape_twice_on_an_empty_editor_opens_the_tree(tmp_path: Path) -> None:
    from caddie.modes.interactive.pickers import TreePicker

    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        await pilot.press("escape", "escape")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, TreePicker))


async def test_run_interactive_refuses_to_start_without_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from caddie.modes.interactive import run_interactive
    from caddie.runtime.factory import SessionRequest

    code = await run_interactive(SessionRequest(cwd=str(tmp_path), mode="tui", require_model=False))
    assert code == 2
    assert "needs a terminal" in capsys.readouterr().err
