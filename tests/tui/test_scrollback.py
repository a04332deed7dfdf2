"""What is printed to the normal screen when the UI quits: the last exchange and how to resume."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from caddie.ai.messages import AgentMessage, ToolResultMessage, UserMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.config.launch import launch_command
from caddie.modes.interactive.scrollback import last_exchange, print_farewell, resume_command


def test_the_last_exchange_and_the_resume_command_are_printed() -> None:
    messages: list[AgentMessage] = [
        UserMessage("an older question"),
        faux_message("an older answer"),
        UserMessage("read the notes"),
        faux_message([faux_tool_call("read", {"path": "notes.txt"}, id="r1")]),
        ToolResultMessage("r1", "read", [], is_error=False),
        faux_message("The notes say **hello**."),
    ]
    out = io.StringIO()
    print_farewell(
        Console(file=out, width=60, color_system=None),
        messages,
        cwd="/p",
        session_id="0190abcd-ef",
        session_dir=None,
        caddie="caddie",
    )
    text = out.getvalue()
    assert "an older" not in text
    assert "read the notes" in text and "● read notes.txt" in text and "The notes say hello." in text
    assert text.rstrip().endswith("To resume this session: caddie --session 0190abcd-ef")
    assert last_exchange(messages)[0] == messages[2]


def test_without_a_saved_session_there_is_no_resume_line_and_special_dirs_are_named() -> None:
    out = io.StringIO()
    print_farewell(Console(file=out, width=60), [UserMessage("hi")], cwd=None, session_id=None)
    assert "To resume" not in out.getvalue()
    assert (
        resume_command("abc", "/tmp/my sessions", "caddie")
        == "caddie --session-dir '/tmp/my sessions' --session abc"
    )


def test_the_resume_command_starts_caddie_the_way_it_was_started(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("caddie", "python3"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    path = {"PATH": str(bin_dir)}
    caddie, python = str(bin_dir / "caddie"), str(bin_dir / "python3")
    assert launch_command([caddie], path, python) == "caddie"
    assert launch_command([caddie], {**path, "UV_RUN_RECURSION_DEPTH": "1"}, python) == "uv run caddie"
    assert launch_command(["/src/caddie/__main__.py"], path, python) == "python3 -m caddie"
    assert launch_command(["/src/caddie/__main__.py"], {"PATH": "/nowhere"}, python) == f"{python} -m caddie"
    assert launch_command([caddie], {"PATH": "/nowhere"}, python) == caddie
