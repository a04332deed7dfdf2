"""/changelog and the start-up "What's New" in the terminal UI, from caddie's own CHANGELOG.md (as Pi's)."""

from __future__ import annotations

import json
from pathlib import Path

import caddie
from caddie.config.paths import agent_dir
from caddie.modes.interactive.conversation import InfoBlock
from tests.tui.harness import SMALL, make_app, ready, submit, until, widget_text, write_settings


def infos(app: object) -> list[str]:
    return [" ".join(widget_text(b).split()) for b in app.conversation.blocks_of(InfoBlock)]  # type: ignore[attr-defined]


async def test_slash_changelog_shows_the_entries(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert not any("What's New" in text for text in infos(app))  # a first run shows nothing…
        await submit(pilot, app, "/changelog")
        await until(pilot, lambda: any("What's New" in text for text in infos(app)))
        shown = next(text for text in infos(app) if "What's New" in text)
    assert f"[{caddie.__version__}]" in shown and "2026-11-30" in shown
    saved = json.loads((agent_dir() / "settings.json").read_text())
    assert saved["lastChangelogVersion"] == caddie.__version__  # …and records the version it saw


async def test_a_new_session_after_an_update_shows_what_is_new(tmp_path: Path) -> None:
    write_settings(lastChangelogVersion="0.0.1")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: any("What's New" in text for text in infos(app)))
    assert (
        json.loads((agent_dir() / "settings.json").read_text())["lastChangelogVersion"] == caddie.__version__
    )


async def test_collapse_changelog_makes_it_one_line(tmp_path: Path) -> None:
    write_settings(lastChangelogVersion="0.0.1", collapseChangelog=True)
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        line = f"Updated to v{caddie.__version__}. Use /changelog to view full changelog."
        await until(pilot, lambda: line in infos(app))
        assert not any("What's New" in text for text in infos(app))
