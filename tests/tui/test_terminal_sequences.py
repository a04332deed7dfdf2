"""What the app writes to a real terminal beside text (on a pseudo-terminal, read byte for byte): Pi's terminal
progress (OSC 9;4) while the agent works when ``terminal.showTerminalProgress`` is on, and links in answers as
OSC 8 hyperlinks (the link text shown, the URL clickable)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.support.pty_term import PtyProgram


def test_progress_and_hyperlinks_reach_the_terminal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "agent").mkdir(parents=True)
    settings = {"terminal": {"showTerminalProgress": True}, "disabledExtensions": ["mulligan", "goal"]}
    (home / "agent" / "settings.json").write_text(json.dumps(settings))
    env = {**os.environ, "CADDIE_DIR": str(home), "CADDIE_OLLAMA_URL": "http://127.0.0.1:9"}
    program = PtyProgram(
        [sys.executable, "-m", "caddie", "--model", "faux/echo", "--no-session"], env, str(tmp_path)
    )
    try:
        program.wait_for(lambda text: "faux/echo" in text)
        start = program.size
        program.send("see [the docs](https://example.com/docs) now\r")
        program.wait_for(lambda text: text.count("the docs") >= 2, start)
        program.wait_for(lambda _text: b"\x1b]9;4;0" in bytes(program.raw[start:]), start)
        program.wait_for(lambda _text: b"example.com/docs\x1b\\" in bytes(program.raw[start:]), start)
        raw = bytes(program.raw[start:])
    finally:
        program.close()
    busy, done = raw.find(b"\x1b]9;4;3\x07"), raw.find(b"\x1b]9;4;0\x07")
    assert 0 <= busy < done, "the progress indicator is set while the agent works, then cleared"
    assert b"https://example.com/docs\x1b\\" in raw and b"\x1b]8;" in raw
    assert b"(https://example.com/docs)" not in raw.split(b"the docs")[-1], (
        "the answer shows the text, not the URL"
    )


def test_the_screen_reaches_the_terminal_when_stderr_is_redirected(tmp_path: Path) -> None:
    # `caddie 2>caddie.log`: Textual draws on stderr, so without care the UI would go into the file
    home = tmp_path / "home"
    (home / "agent").mkdir(parents=True)
    env = {**os.environ, "CADDIE_DIR": str(home), "CADDIE_OLLAMA_URL": "http://127.0.0.1:9"}
    log = tmp_path / "caddie.log"
    with log.open("wb") as err:
        program = PtyProgram(
            [sys.executable, "-m", "caddie", "--model", "faux/echo", "--no-session"],
            env,
            str(tmp_path),
            stderr=err.fileno(),
        )
        try:
            program.wait_for(lambda text: "faux/echo" in text)
            start = program.size
            program.send("hello from a redirected run\r")
            program.wait_for(lambda text: "hello from a redirected run" in text, start)
            program.send("/quit\r")
            assert program.proc.wait(30) == 0
        finally:
            program.close()
    assert b"faux/echo" not in log.read_bytes()  # nothing of the screen went into the file


def test_caddie_quits_and_keeps_the_session_when_its_terminal_goes_away(tmp_path: Path) -> None:
    # the terminal closed with no SIGHUP reaching caddie: stdin is hung up. caddie used to spin on it forever
    home = tmp_path / "home"
    (home / "agent").mkdir(parents=True)
    env = {**os.environ, "CADDIE_DIR": str(home), "CADDIE_OLLAMA_URL": "http://127.0.0.1:9"}
    sessions = tmp_path / "sessions"
    program = PtyProgram(
        [sys.executable, "-m", "caddie", "--model", "faux/echo", "--session-dir", str(sessions)],
        env,
        str(tmp_path),
    )
    try:
        program.wait_for(lambda text: "faux/echo" in text)
        start = program.size
        program.send("remember this line\r")
        program.wait_for(lambda text: text.count("remember this line") >= 2, start)
        os.close(program.fd)  # the terminal is gone
        assert program.proc.wait(15) == 0
    finally:
        program.close()
    saved = "".join(p.read_text() for p in sessions.rglob("*.jsonl"))
    assert "remember this line" in saved
