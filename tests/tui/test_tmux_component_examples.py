"""Pi's terminal-component examples that need a real terminal, in tmux (tests/tui/tmux.py): the
interactive shell hands the whole terminal to a program and takes it back (``tui.suspend()``); a status card
(``register_entry_renderer``) shows on a real screen, expands with Ctrl+O and comes back on resume."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tui.tmux import Tmux, caddie_command, tmux_server

EXAMPLES = Path(__file__).parents[2] / "examples" / "extensions"


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    with tmux_server(tmp_path) as server:
        yield server


def test_interactive_shell_hands_the_terminal_over_and_takes_it_back(tmux: Tmux, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    args = f"--model faux/echo -e {EXAMPLES / 'interactive_shell.py'}"
    tmux.type(caddie_command(project, tmp_path / "caddie-home", args))
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "faux/echo" in s and "Type a message" in s, "the interactive UI")

    # printed as "handed over", typed as "handed%s": the screen shows the former only once the program runs
    tmux.type("!i printf 'handed%s\\n' ' over'; read answer; echo \"$answer\" > answer.txt; exit 4")
    tmux.keys("Enter")
    tmux.wait_for(
        lambda s: "handed over" in s and "Type a message" not in s, "the program on a clear terminal"
    )
    tmux.type("typed in the program")
    tmux.keys("Enter")
    tmux.wait_for(
        lambda s: "(interactive command exited with code 4)" in s and "Type a message" in s,
        "caddie's screen again, with the program's exit code",
    )
    assert (project / "answer.txt").read_text() == "typed in the program\n"  # the keys went to the program

    tmux.type("hello")  # caddie reads keys again
    tmux.wait_for(lambda s: "hello" in s, "typing in caddie's editor")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt after quitting")


def test_a_status_card_is_drawn_expanded_and_redrawn_on_resume(tmux: Tmux, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    args = f"--model faux/echo -e {EXAMPLES / 'entry_renderer.py'}"
    tmux.type(caddie_command(project, tmp_path / "caddie-home", args))
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "faux/echo" in s and "Type a message" in s, "the interactive UI")
    tmux.type("ship it")  # a session is saved from its first answer on (as Pi's)
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("ship it") >= 2, "the echoed answer")
    tmux.type("/status-card deploy is green")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "[status] deploy is green" in s, "the card")
    tmux.keys("C-o")
    tmux.wait_for(lambda s: s.count(":") >= 2 and "[status] deploy is green" in s, "the card with its time")
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt after quitting")
    tmux.type(caddie_command(project, tmp_path / "caddie-home", args + " -c"))
    tmux.keys("Enter")
    tmux.wait_for(
        lambda s: "[status] deploy is green" in s and s.index("ship it") < s.index("[status]"),
        "the card again in the resumed session, after the conversation before it",
    )
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt after quitting")
