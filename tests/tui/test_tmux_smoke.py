"""End to end in a real terminal (tmux): prompt, slash command, Ctrl+Z suspend and fg, quit; the terminal
is sane afterwards and the last exchange plus the resume command stay in the scrollback (tests/tui/tmux.py
says how the terminal is driven)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.tmux import Tmux, caddie_command, tmux_server


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    with tmux_server(tmp_path) as server:
        yield server


def start_caddie(tmux: Tmux, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    tmux.type(caddie_command(project, tmp_path / "caddie-home", "--model faux/echo"))
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "faux/echo" in s and "Type a message" in s, "the interactive UI")


def terminal_modes(tmux: Tmux) -> list[str]:
    """``icanon``/``echo`` (or ``-icanon``/``-echo`` when left in raw mode) as the shell's stty reports them."""
    tmux.type("clear; stty -a | tr ' ' '\\n' | grep -x -e '-\\?icanon' -e '-\\?echo'; echo END")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "\nEND" in s, "the stty report")
    return [
        line.strip() for line in screen.splitlines() if line.strip() in ("icanon", "-icanon", "echo", "-echo")
    ]


def test_prompt_answer_slash_command_and_quit_leave_a_sane_terminal(tmux: Tmux, tmp_path: Path) -> None:
    start_caddie(tmux, tmp_path)

    tmux.type("hello from tmux")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("hello from tmux") >= 2, "the echoed answer")

    tmux.type("first line")
    tmux.keys("M-Enter")  # Alt+Enter while idle: a newline, not a send
    tmux.type("second line")
    before_send = tmux.wait_for(lambda s: "second line" in s, "the second line in the editor")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("second line") >= 2, "the two-line prompt's answer")

    tmux.type("/session")
    tmux.keys("Enter")
    session_screen = tmux.wait_for(lambda s: "Session id" in s and "faux/echo" in s, "the /session output")
    session_id = re.search(r"Session id\s+(\S+)", session_screen)

    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: "To resume this session:" in s, "caddie to exit")
    history = tmux.scrollback()
    modes = terminal_modes(tmux)

    editor = [line.strip() for line in before_send.splitlines()]
    assert editor.count("first line") == 1, "Alt+Enter sent the message instead of adding a newline"
    assert editor[editor.index("first line") + 1] == "second line"
    assert sorted(modes) == ["echo", "icanon"], "the terminal was left in raw mode"
    assert session_id is not None
    after_exit = history[history.rindex("--model faux/echo") :]
    assert "first line" in after_exit and "second line" in after_exit, (
        "the last exchange is not in the scrollback"
    )
    hint = re.search(r"To resume this session: (.+ --session (\S+))", after_exit)
    assert hint is not None and hint.group(2) == session_id.group(1)

    # The hint works as printed, in the same shell (caddie ran as `python -m caddie` here).
    tmux.type(f"cd {tmp_path / 'project'} && CADDIE_DIR={tmp_path / 'caddie-home'} {hint.group(1)}")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "faux/echo" in s and "hello from tmux" in s, "the resumed session")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell after the resumed caddie quit")


def test_ctrl_z_suspends_and_fg_resumes(tmux: Tmux, tmp_path: Path) -> None:
    start_caddie(tmux, tmp_path)
    tmux.type("before suspending")
    tmux.keys("C-z")
    tmux.wait_for(lambda s: "Stopped" in s and s.rstrip().endswith("$"), "the shell after Ctrl+Z")
    tmux.type("fg")
    tmux.keys("Enter")
    back = tmux.wait_for(lambda s: "faux/echo" in s and "before suspending" in s, "caddie again after fg")
    tmux.keys("M-Left")  # tmux sends CSI 1;3 D, which Textual alone reads as Esc then Left
    tmux.type("X")
    tmux.wait_for(lambda s: "before Xsuspending" in s, "Alt+Left moving a word back")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("before Xsuspending") >= 2, "the answer after resuming")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: "To resume this session:" in s, "caddie to exit")
    assert "before suspending" in back, "the editor lost its text across suspend"
    assert sorted(terminal_modes(tmux)) == ["echo", "icanon"]


def test_sigterm_quits_and_restores_the_terminal(tmux: Tmux, tmp_path: Path) -> None:
    start_caddie(tmux, tmp_path)
    shell = int(tmux.run("display-message", "-p", "-t", "smoke", "#{pane_pid}").strip())
    children = Path(f"/proc/{shell}/task/{shell}/children")
    if not children.exists():
        pytest.skip("needs /proc to find caddie's process id")
    caddie_pid = int(children.read_text().split()[0])
    os.kill(caddie_pid, signal.SIGTERM)
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt after SIGTERM")
    assert sorted(terminal_modes(tmux)) == ["echo", "icanon"]


def test_a_large_bracketed_paste_collapses_to_a_marker_and_is_sent_whole(tmux: Tmux, tmp_path: Path) -> None:
    start_caddie(tmux, tmp_path)
    lines = [f"pasted line {i:02d}" for i in range(15)]
    tmux.run("set-buffer", "-b", "big", "\n".join(lines))
    tmux.run("paste-buffer", "-p", "-b", "big", "-t", "smoke")  # -p: as bracketed paste, as a terminal does
    tmux.wait_for(lambda s: "[paste #1 +15 lines]" in s, "the paste marker in the editor")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: s.count("pasted line 14") >= 2, "the pasted lines sent and echoed")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: "To resume this session:" in s, "caddie to exit")
    assert "pasted line 00" in screen


def test_extension_components_and_an_editor_component_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    """ctx.ui from the examples, through a real terminal: a picker in place of the editor, an overlay, a key
    hook and a vim-mode editor component (examples/extensions/ui_tour.py and vim_mode.py)."""
    examples = Path(__file__).parents[2] / "examples" / "extensions"
    project = tmp_path / "project"
    project.mkdir()
    args = f"--model faux/echo -e {examples / 'ui_tour.py'} -e {examples / 'vim_mode.py'}"
    tmux.type(caddie_command(project, tmp_path / "caddie-home", args))
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "faux/echo" in s and "INSERT" in s, "the UI with the vim editor")

    tmux.type("/ui-pick")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "Pick a colour" in s and "› red" in s, "the picker in place of the editor")
    tmux.keys("Down")
    tmux.wait_for(lambda s: "› green" in s, "the picker's highlight moved")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "picked green" in s and "INSERT" in s, "the choice, and the editor back")

    tmux.type("/ui-overlay")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "ui-tour overlay" in s, "the overlay")
    tmux.type("q")
    tmux.wait_for(lambda s: "overlay closed" in s and "ui-tour overlay" not in s, "the overlay closed")

    tmux.keys("F7")
    tmux.wait_for(lambda s: "keys seen" in s, "the key hook's notice")

    tmux.type("abcd")
    tmux.keys("Escape")
    tmux.wait_for(lambda s: "NORMAL" in s, "vim's normal mode")
    tmux.type("0x$iZ")
    tmux.wait_for(lambda s: "bcZd" in s and "INSERT" in s, "the vim edits")
    tmux.keys("C-c")  # clears the editor
    tmux.keys("C-c")
    tmux.keys("C-c")  # twice on an empty editor: quit
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt after quitting")
