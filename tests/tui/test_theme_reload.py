"""Theme hot reload: the file of the theme in use is re-applied when it changes, as Pi does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from textual.color import Color

from caddie.config.paths import agent_dir
from caddie.extensions.api import CustomEntry, EntryRenderOptions, ExtensionAPI, ThemeView
from caddie.modes.interactive.app import CaddieApp
from caddie.modes.interactive.conversation import InfoBlock, MarkdownText, StartupHeader
from caddie.modes.interactive.extension_hooks import EntryBlock
from caddie.modes.interactive.theme_book import ThemeBook
from tests.tui.harness import (
    LARGE,
    SMALL,
    inline_extension,
    make_app,
    ready,
    submit,
    until,
    widget_text,
    write_settings,
)
from tests.tui.test_long_paragraph import WORDS, drawn, whole


def write_theme(
    path: Path, accent: str, *, name: str = "ocean", bump: int = 0, text: str = "#d0d0d0"
) -> None:
    colors = {"accent": accent, "userMessageBg": "#102030", "text": text}
    path.write_text(json.dumps({"name": name, "colors": colors}))
    st = path.stat()  # file systems with coarse times: make each write a visible change
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + bump * 1_000_000_000))


def primary(app: CaddieApp) -> str:
    """The accent colour in force: the theme's, once the CSS variables were rebuilt from it."""
    css = Color.parse(app.get_css_variables()["primary"])
    theme = app.current_theme.primary
    return theme.lower() if _near(theme, css) else css.hex.lower()


def _near(theme: str, css: Color) -> bool:  # Textual rounds a colour when it derives its shades
    return all(abs(a - b) <= 2 for a, b in zip(Color.parse(theme).rgb, css.rgb, strict=True))


def header_colours(app: CaddieApp) -> set[str]:
    """The text colours of the start-up header as the transcript has drawn it."""
    view = app.conversation
    header = next(b for b in view.blocks if isinstance(b, StartupHeader))
    return {
        seg.style.color.triplet.hex
        for strip in header.lines(view, view._content_width())
        for seg in strip
        if seg.style is not None and seg.style.color is not None and seg.style.color.triplet is not None
    }


def warnings_about(app: object, text: str) -> list[str]:
    blocks = app.conversation.blocks_of(InfoBlock)  # type: ignore[attr-defined]
    return [t for t in (" ".join(widget_text(b).split()) for b in blocks) if text in t]  # unwrapped


async def test_an_edited_theme_file_is_applied_and_a_broken_edit_keeps_the_theme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ThemeBook, "POLL_SECONDS", 0.05)
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    ocean = themes / "ocean.json"
    write_theme(ocean, "#0077be")
    write_settings(theme="ocean")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        assert app.theme == "ocean"
        before = primary(app)
        drawn_before = header_colours(app)
        write_theme(ocean, "#aa3300", bump=1, text="#e0c090")
        await until(pilot, lambda: primary(app) == "#aa3300")
        await pilot.pause()
        drawn_after = header_colours(app)  # what was on screen is drawn again in the new colours
        # A broken edit: the theme on screen stays, one warning however many polls pass.
        ocean.write_text('{"name": "ocean", "colors": {"accent": ')
        os.utime(ocean, ns=(0, ocean.stat().st_mtime_ns + 2_000_000_000))
        await until(pilot, lambda: bool(warnings_about(app, "ocean.json")))
        await pilot.pause(0.4)
        broken = warnings_about(app, "ocean.json")
        kept = primary(app)
        # Gone for a moment (an editor's save): nothing said, nothing changed. Then a good file again.
        ocean.unlink()
        await pilot.pause(0.2)
        write_theme(ocean, "#00aa55", bump=3)
        await until(pilot, lambda: primary(app) == "#00aa55")
        assert app.theme == "ocean"
        after = warnings_about(app, "ocean.json")
    assert before.lower() == "#0077be"
    assert "#d0d0d0" in drawn_before and "#d0d0d0" not in drawn_after and "#e0c090" in drawn_after
    assert len(broken) == 1 and "not valid JSON" in broken[0] and "stays as it was" in broken[0]
    assert kept == "#aa3300"
    assert after == broken


async def test_only_the_theme_in_use_is_watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ThemeBook, "POLL_SECONDS", 0.05)
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    write_theme(themes / "ocean.json", "#0077be")
    write_theme(themes / "forest.json", "#228b22", name="forest")
    write_settings(theme="ocean")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        (themes / "forest.json").write_text("not json")  # not in use: not read, nothing said
        await pilot.pause(0.3)
        quiet = warnings_about(app, "forest.json")
        app.themes.use("forest")  # switching: the file as it was read is what is on screen
        await pilot.pause(0.3)
        forest = primary(app)
        write_theme(themes / "forest.json", "#116611", name="forest", bump=1)
        await until(pilot, lambda: primary(app) == "#116611")
    assert quiet == []
    assert forest == "#228b22"


async def test_a_change_made_before_the_first_look_is_applied_and_an_unchanged_file_restyles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ThemeBook, "POLL_SECONDS", 3600.0)  # the test looks itself (ThemeBook.poll)
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    write_theme(themes / "ocean.json", "#0077be")
    write_theme(themes / "forest.json", "#228b22", name="forest")
    write_settings(theme="ocean")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        write_theme(themes / "ocean.json", "#aa3300", bump=1)  # edited after it was read, before any look
        app.themes.poll()  # the first look at this theme's file
        app.themes.poll()  # settled: read
        await until(pilot, lambda: primary(app) == "#aa3300")
        app.themes.use("forest")
        await pilot.pause()
        forest = app.themes.get("forest")
        app.themes.poll()
        app.themes.poll()  # read again, as it was: nothing registered anew
        same = app.themes.get("forest") is forest
    assert same


async def test_a_long_streamed_paragraph_is_drawn_whole_in_the_new_theme(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        view = app.conversation
        block = MarkdownText()
        view.add(block)
        await pilot.pause()
        text = WORDS * 200
        for start in range(0, len(text), 2000):  # frozen line by line as it streams (conversation.py)
            block.append(text[start : start + 2000])
            block.flush()
        width = block.measured_width
        cut = len(block.frozen)
        app.themes.use("light")
        await pilot.pause()
        after = drawn(block.lines(view, width))
        expected = whole(view, block, width)  # in the light theme's colours
    assert cut >= 2
    assert after == expected


async def test_an_entry_renderer_is_asked_again_when_the_theme_file_changes_under_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ThemeBook, "POLL_SECONDS", 0.05)
    themes = agent_dir() / "themes"
    themes.mkdir(parents=True)
    ocean = themes / "ocean.json"
    write_theme(ocean, "#0077be")
    write_settings(theme="ocean")
    drawn_with: list[str] = []

    def register(api: ExtensionAPI) -> None:
        def render(entry: CustomEntry, options: EntryRenderOptions, theme: ThemeView) -> object:
            card = theme.fg("accent", "card")
            drawn_with.append(card)
            return card

        async def card(args: str, ctx: object) -> None:
            api.append_entry("card", {})

        api.register_entry_renderer("card", render)
        api.register_command("card", card, "add a card")

    app, _ = make_app(tmp_path, extensions=[inline_extension(register, "cards")])
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/card")
        await until(pilot, lambda: bool(drawn_with))
        first = drawn_with[-1]
        write_theme(ocean, "#aa3300", bump=1)
        await until(pilot, lambda: primary(app) == "#aa3300")
        await until(pilot, lambda: drawn_with[-1] != first)
        on_screen = widget_text(app.conversation.blocks_of(EntryBlock)[0])
    assert app.theme == "ocean"
    assert "170;51;0" in drawn_with[-1] and "170;51;0" not in first  # #aa3300 in the ANSI colour
    assert on_screen.strip() == "card"
