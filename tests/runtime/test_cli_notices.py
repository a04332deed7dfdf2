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
    from caddie.config.pi_folders import pi_project_notices

    assert pi_project_notices(tmp_path) == []
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "sandbox.json").write_text("{}")
    assert pi_project_notices(tmp_path) == []


def test_pis_agent_folder_files_caddie_does_not_read_are_named_until_caddie_has_its_own(
    tmp_path: Path,
) -> None:
    from caddie.config.pi_folders import pi_agent_notices

    pi, caddie = tmp_path / "pi-agent", tmp_path / "caddie-agent"
    pi.mkdir()
    caddie.mkdir()
    env = {"PI_CODING_AGENT_DIR": str(pi), "CADDIE_DIR": str(tmp_path)}
    (pi / "auth.json").write_text("{}")  # what Pi writes on its first run: nothing to bring over
    (pi / "models-store.json").write_text('{"x": 1}')  # a cache, not configuration
    assert pi_agent_notices(caddie, env) == []
    (pi / "settings.json").write_text('{"defaultModel": "x"}')
    (pi / "auth.json").write_text('{"openai": {"type": "api_key", "key": "sk-1"}}')
    (pi / "SYSTEM.md").write_text("Be terse.")
    assert pi_agent_notices(caddie, env) == [
        f"Pi's agent folder {pi} has settings.json, auth.json, SYSTEM.md, which caddie does not read: caddie "
        f"keeps its own in {caddie}; copy them there to use them (docs/configuration.md)"
    ]
    (caddie / "settings.json").write_text("{}")
    (caddie / "auth.json").write_text("{}")
    assert "has SYSTEM.md, which" in pi_agent_notices(caddie, env)[0]
    assert pi_agent_notices(caddie, {"PI_CODING_AGENT_DIR": str(pi)}) == []  # the twin line says it already
    assert pi_agent_notices(pi, env) == []  # caddie pointed at Pi's folder reads it


async def test_the_session_names_pis_agent_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    pi = Path(os.environ["PI_CODING_AGENT_DIR"])  # the test-wide isolation's (tests/conftest.py)
    pi.mkdir(parents=True, exist_ok=True)
    (pi / "models.json").write_text('{"providers": {}}')
    (pi / "settings.json").write_text('{"defaultThinkingLevel": "high"}')
    build = await open_session(SessionRequest(str(tmp_path), model="faux/echo"))
    try:
        assert [w for w in build.warnings if w.startswith("Pi's agent folder")] == [
            f"Pi's agent folder {pi} has settings.json, models.json, which caddie does not read: caddie keeps its own in "
            f"{Path(os.environ['CADDIE_DIR']) / 'agent'}; copy them there to use them (docs/configuration.md)"
        ]
    finally:
        await build.session.shutdown()
