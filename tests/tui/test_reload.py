"""``/reload`` and an extension command's ``ctx.reload()`` in the terminal UI, driven with Pilot: as Pi's, both
read keybindings, extensions, skills, prompt templates, themes and context files again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.color import Color

from caddie.config.paths import agent_dir
from caddie.extensions.api import ExtensionAPI
from tests.resources.helpers import write_template
from tests.tui.harness import (
    SMALL,
    inline_extension,
    make_app,
    ready,
    statuses,
    submit,
    until,
    write_settings,
)

RELOADED = "Reloaded keybindings, extensions, skills, prompts, themes, and context files"


def near(css: str, hex_colour: str) -> bool:
    """Textual derives its variables through HSL: a channel may be off by one."""
    a, b = Color.parse(css), Color.parse(hex_colour)
    return max(abs(a.r - b.r), abs(a.g - b.g), abs(a.b - b.b)) <= 2


def write_theme(accent: str) -> Path:
    path = agent_dir() / "themes" / "ocean.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"name": "ocean", "colors": {"accent": accent}}))
    return path


async def test_reload_applies_an_edited_theme_file_and_finds_a_new_template(tmp_path: Path) -> None:
    write_theme("#0077be")
    write_settings(theme="ocean")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.theme == "ocean")
        before = app.stylesheet._variables["primary"]  # what the widgets are styled with
        write_theme("#aa3300")
        write_template(agent_dir() / "prompts", "greet", "Greet $1.")
        await submit(pilot, app, "/reload")
        await until(pilot, lambda: RELOADED in statuses(app))
        await pilot.pause()
        after = app.stylesheet._variables["primary"]
        names = [c.name for c in app.command_infos()]
    assert near(before, "#0077be")
    assert near(after, "#aa3300"), "the theme in use takes the edited file's colours"
    assert "greet" in names


async def test_an_extension_commands_reload_rereads_keys_and_drops_a_removed_theme(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        async def reload(_args: str, ctx: Any) -> None:
            await ctx.reload()

        api.register_command("do-reload", reload)

    theme = write_theme("#0077be")
    write_settings(theme="ocean")
    keys = agent_dir() / "keybindings.json"
    app, _ = make_app(tmp_path, extensions=[inline_extension(register)])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: app.theme == "ocean")
        theme.unlink()
        keys.write_text(json.dumps({"app.tools.expand": "f2"}))
        await submit(pilot, app, "/do-reload")
        await until(pilot, lambda: RELOADED in statuses(app))
        await pilot.press("f2")
        expanded = app.view.tools_expanded
        names = app.themes.names()
        current = app.theme
    assert expanded, "keybindings.json is read again when an extension reloads"
    assert "ocean" not in names and current == "dark", "a removed theme file is gone after the reload"
