"""The command line's one-line refusals (``--tui-mode regular``, ``--use-theme LIGHT/DARK`` without a known
background, images given with ``@FILE``) reach the user: on stderr in headless runs, as start-up notices in the
terminal UI, where stderr is hidden behind the full screen."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from caddie.runtime.factory import open_session
from caddie.runtime.request import SessionRequest

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


async def test_a_requests_notices_come_first_among_the_start_up_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CADDIE_DIR", str(tmp_path / "home"))
    build = await open_session(SessionRequest(str(tmp_path), model="faux/echo", notices=["first line"]))
    try:
        assert build.warnings[0] == "first line"
    finally:
        await build.session.shutdown()


async def test_the_terminal_ui_gets_the_command_lines_refusals_as_notices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import caddie.modes.interactive as interactive
    from caddie.cli_run import run_main

    seen: dict[str, Any] = {}

    async def fake_ui(request: SessionRequest, **kwargs: Any) -> int:
        seen["notices"] = list(request.notices)
        return 0

    monkeypatch.setattr(interactive, "run_interactive", fake_ui)
    monkeypatch.setenv("CADDIE_DIR", str(tmp_path / "home"))
    monkeypatch.delenv("COLORFGBG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shot.png").write_bytes(PNG)
    assert (
        await run_main(
            ["--tui-mode", "regular", "--use-theme", "light/dark", "--model", "faux/echo", "@shot.png"]
        )
        == 0
    )
    assert seen["notices"] == [
        "images given with @FILE are sent only in print mode (-p)",
        "--tui-mode regular is ignored: caddie's terminal UI is always a full-screen Textual app",
        "--use-theme light/dark: caddie cannot tell the terminal's background (no COLORFGBG); using dark",
    ]


async def test_a_pi_project_folder_caddie_does_not_read_is_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CADDIE_DIR", str(tmp_path / "home"))
    project = tmp_path / "project"
    (project / ".pi" / "skills").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text("{}")
    (project / ".pi" / "sandbox.json").write_text("{}")  # caddie reads this one
    (project / ".caddie").mkdir()
    (project / ".caddie" / "settings.json").write_text("{}")
    build = await open_session(SessionRequest(str(project), model="faux/echo"))
    try:
        lines = [w for w in build.warnings if ".pi/" in w and "Pi's" in w]
        assert lines == [
            "this project's .pi/ folder is Pi's: caddie does not read its skills; copy them to .caddie/ to use "
            "them (extensions there are Python: docs/configuration.md)"
        ]
    finally:
        await build.session.shutdown()


def test_a_project_without_pi_items_gets_no_line(tmp_path: Path) -> None:
    from caddie.config.pi_project import pi_project_notices

    assert pi_project_notices(tmp_path) == []
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "sandbox.json").write_text("{}")
    assert pi_project_notices(tmp_path) == []
