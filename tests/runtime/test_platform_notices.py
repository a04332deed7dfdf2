"""Started on a system caddie is not built and tested on (Windows, Termux), caddie says so in one line with
what to expect: a notice in the terminal UI, ``caddie: warning: …`` on stderr everywhere else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from caddie.config import platforms
from caddie.config.platforms import TERMUX, WINDOWS, platform_notice
from caddie.runtime.request import SessionRequest


@pytest.mark.parametrize(
    ("platform", "env", "line"),
    [
        ("linux", {}, None),
        ("darwin", {}, None),
        ("win32", {}, WINDOWS),
        ("cygwin", {}, WINDOWS),
        ("msys", {}, WINDOWS),
        ("android", {}, TERMUX),
        ("linux", {"TERMUX_VERSION": "0.118.1"}, TERMUX),
        ("linux", {"PREFIX": "/data/data/com.termux/files/usr"}, TERMUX),
        ("linux", {"PREFIX": "/usr/local"}, None),
    ],
)
def test_the_line_names_the_system_and_what_to_expect(
    platform: str, env: dict[str, str], line: str | None
) -> None:
    assert platform_notice(platform, env) == line


def test_the_lines_say_where_caddie_is_tested_and_what_fails() -> None:
    assert WINDOWS.startswith("caddie is built and tested on Linux and macOS only; on Windows")
    for words in ("Git Bash", '"shellPath"', "no powershell tool", "--sandbox", "WSL"):
        assert words in WINDOWS
    assert TERMUX.startswith("caddie is built and tested on Linux and macOS only; on Termux (Android)")
    assert "\n" not in WINDOWS + TERMUX


async def test_the_terminal_ui_shows_it_as_the_first_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import caddie.modes.interactive as interactive
    from caddie.cli_run import run_main

    seen: dict[str, Any] = {}

    async def fake_ui(request: SessionRequest, **kwargs: Any) -> int:
        seen["notices"] = list(request.notices)
        return 0

    monkeypatch.setattr(interactive, "run_interactive", fake_ui)
    monkeypatch.setattr(platforms, "sys", SimpleNamespace(platform="win32"))
    monkeypatch.chdir(tmp_path)
    assert await run_main(["--tui-mode", "regular", "--model", "faux/echo"]) == 0
    assert seen["notices"] == [
        WINDOWS,
        "--tui-mode regular is ignored: caddie's terminal UI is always a full-screen Textual app",
    ]


def test_subcommands_say_it_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from caddie.cli import main

    monkeypatch.setattr(platforms, "sys", SimpleNamespace(platform="win32"))
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == f"caddie: warning: {WINDOWS}"
    monkeypatch.setattr(platforms, "sys", SimpleNamespace(platform="linux"))
    assert main(["list"]) == 0
    assert "built and tested" not in capsys.readouterr().err


def test_a_headless_run_on_termux_says_it_once_on_stderr(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "TERMUX_VERSION": "0.118.1", "CADDIE_DIR": str(tmp_path / "home")}
    proc = subprocess.run(
        [sys.executable, "-m", "caddie", "-p", "--model", "faux/echo", "hello"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines().count(f"caddie: warning: {TERMUX}") == 1
    assert "hello" in proc.stdout
