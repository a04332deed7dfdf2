"""``run_interactive_mode`` (Pi's ``InteractiveMode``): a program opens caddie's terminal UI in a real terminal
(tmux), its first prompt is answered, /quit returns the exit code to the program."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.tui.tmux import tmux_server

PROGRAM = """
import asyncio
import gc
import sys

from caddie.sdk import run_interactive_mode

code = asyncio.run(run_interactive_mode(sys.argv[1], ["hello from the program"], model="faux/echo"))
print(f"program got {code}, frozen {gc.get_freeze_count()}")
"""


def test_a_program_runs_the_terminal_ui_and_gets_the_exit_code(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    env = f"CADDIE_DIR={shlex.quote(str(tmp_path / 'home'))} CADDIE_OLLAMA_URL=http://127.0.0.1:9"
    with tmux_server(tmp_path) as tmux:
        tmux.type(
            f"{env} {shlex.quote(sys.executable)} {shlex.quote(str(program))} {shlex.quote(str(project))}"
        )
        tmux.keys("Enter")
        tmux.wait_for(lambda s: s.count("hello from the program") >= 2, "the first prompt's echoed answer")
        tmux.type("/quit")
        tmux.keys("Enter")
        # the UI froze its start-up objects while it ran; the program's collector sees everything again
        tmux.wait_for(lambda s: "program got 0, frozen 0" in s, "the program's line after the UI closed")
