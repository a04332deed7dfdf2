"""/export draws the page in the theme in use's ``export`` colours (Pi's theme ``export`` section)."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.providers.faux import faux_message
from caddie.config.paths import agent_dir
from caddie.modes.interactive.conversation import InfoBlock
from tests.export.test_theme_colours import HARBOUR, style_of, theme_file
from tests.tui.harness import SMALL, make_app, ready, settle, submit, until, widget_text, write_settings


def exported_notices(app: object) -> int:
    blocks = app.conversation.blocks_of(InfoBlock)  # type: ignore[attr-defined]
    return sum("Exported the session to" in " ".join(widget_text(b).split()) for b in blocks)


async def test_export_follows_the_theme_in_use(tmp_path: Path) -> None:
    theme_file(agent_dir() / "themes", HARBOUR)
    write_settings(theme="harbour")
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        await submit(pilot, app, "/export themed.html")
        await until(pilot, lambda: exported_notices(app) == 1)
        app.themes.use("light")  # switched in the session (not saved): the page follows what is on screen
        await submit(pilot, app, "/export plain.html")
        await until(pilot, lambda: exported_notices(app) == 2)
    themed = style_of((tmp_path / "themed.html").read_text())
    plain = style_of((tmp_path / "plain.html").read_text())
    assert "--bg:#101820;--card:#182430" in themed
    assert "--bg:#101820" not in plain and "{color-scheme:" not in plain
