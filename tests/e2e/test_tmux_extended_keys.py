"""docs/terminals.md's tmux setting, checked in a real tmux: with ``extended-keys always`` Shift+Enter reaches
caddie as Shift+Enter (a newline in the editor), as Pi's tmux guide promises for Pi."""

from __future__ import annotations

from pathlib import Path

from tests.tui.tmux import caddie_command, tmux_server


def test_shift_enter_in_tmux_with_extended_keys_always_is_a_newline(tmp_path: Path) -> None:
    with tmux_server(tmp_path, size=(100, 30)) as tmux:
        tmux.run("set-option", "-s", "extended-keys", "always")  # for panes started from now on
        project = tmp_path / "project"
        project.mkdir()
        command = caddie_command(project, tmp_path / "caddie-home", "--model faux/echo")
        tmux.run("respawn-pane", "-k", "-t", "smoke", command)
        tmux.wait_for(lambda s: "faux/echo" in s and "Type a message" in s, "the interactive UI")
        tmux.type("first line")
        tmux.keys("S-Enter")  # an extended key: without the setting tmux sends no Shift+Enter at all
        tmux.type("second line")
        screen = tmux.wait_for(lambda s: "second line" in s, "the second line in the editor")
        lines = screen.splitlines()
        first = next(i for i, line in enumerate(lines) if "first line" in line)
        assert "second line" in lines[first + 1] and "second line" not in lines[first]
        assert screen.count("first line") == 1  # not sent: the model would have echoed it
        tmux.keys("Enter")
        tmux.wait_for(lambda s: s.count("second line") >= 2, "the two-line prompt's answer")
        tmux.keys("C-q")
