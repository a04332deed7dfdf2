"""Themes in a real terminal: the first run's theme follows the terminal's background (tmux answers OSC 11
with its pane's background colour when one is set, and only DA1 otherwise); an edited theme file is
redrawn."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tui.tmux import Tmux, caddie_command, tmux_server


def run_caddie_once(tmux: Tmux, project: Path, home: Path, typed_ahead: str = "") -> str:
    """Start caddie (typing ``typed_ahead`` at once, before it is up), wait for its UI, take the screen with
    its colours, quit."""
    tmux.type(caddie_command(project, home, "--model faux/echo"))
    tmux.keys("Enter")
    if typed_ahead:
        tmux.type(typed_ahead)
        # The shell echoes it first; once caddie's screen is up it is in the editor (or lost).
        tmux.wait_for(
            lambda s: "esc to interrupt" in s and typed_ahead in s, "the typed-ahead text in the editor"
        )
    else:
        tmux.wait_for(lambda s: "faux/echo" in s and "Type a message" in s, "the interactive UI")
    coloured = tmux.run("capture-pane", "-t", "smoke", "-p", "-e")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell after caddie quit")
    return coloured


def test_the_first_run_picks_light_on_a_light_terminal_and_leaves_no_reply_behind(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "caddie-home"
    project.mkdir()
    settings = home / "agent" / "settings.json"
    with tmux_server(tmp_path) as tmux:
        # No background known: tmux answers DA1 only; the wait ends, nothing is typed, nothing saved.
        dark_screen = run_caddie_once(tmux, project, home, typed_ahead="typed while starting")
        saved_before = json.loads(settings.read_text()).get("theme") if settings.exists() else None
        tmux.run("select-pane", "-t", "smoke", "-P", "bg=#fafafa")
        light_screen = run_caddie_once(tmux, project, home)
        saved = json.loads(settings.read_text())
    for screen in (dark_screen, light_screen):
        assert "11;rgb" not in screen and "?1;2c" not in screen, "a terminal reply reached the screen"
    assert saved_before is None
    assert saved["theme"] == "light"
    assert dark_screen.startswith("\x1b[48;5;233m")  # the dark theme's background (#121212, 256 colours)
    assert light_screen.startswith("\x1b[48;5;231m")  # the light theme's (#fafafa)
    assert "48;5;233" not in light_screen, "blocks drawn before the theme was applied kept the dark colours"


def test_an_edited_theme_file_is_redrawn_in_a_real_terminal(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "caddie-home"
    project.mkdir()
    theme = home / "agent" / "themes" / "mine.json"
    theme.parent.mkdir(parents=True)
    colours = {"accent": "#3399cc", "text": "#d0d0d0", "userMessageBg": "#102030"}
    theme.write_text(json.dumps({"name": "mine", "colors": colours}))
    (home / "agent" / "settings.json").write_text(json.dumps({"theme": "mine"}))
    with tmux_server(tmp_path) as tmux:
        tmux.type(caddie_command(project, home, "--model faux/echo"))
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "[Themes]" in s and "Type a message" in s, "the UI with its theme")
        theme.write_text(json.dumps({"name": "mine", "colors": {**colours, "text": "#ff0000"}}))

        def header(_screen: str) -> str:
            return tmux.run("capture-pane", "-t", "smoke", "-p", "-e").splitlines()[0]

        tmux.wait_for(lambda s: "38;5;196m" in header(s), "the header redrawn in the new text colour")
        tmux.keys("C-c")
        tmux.keys("C-c")
        tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell after caddie quit")
