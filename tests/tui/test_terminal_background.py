"""The first run's terminal background detection (OSC 11, then COLORFGBG), against a fake terminal on a pty."""

from __future__ import annotations

import json
import os
import select
import threading
import time
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.modes.interactive.terminal_background import (
    QUERY,
    detect_background,
    parse_background_reply,
    query_background,
    shade_from_colorfgbg,
    shade_of,
    startup_theme,
    typed_text,
)

DA1 = b"\x1b[?62;22c"


class FakeTerminal:
    """The terminal side of a pty: reads what the program writes and answers the queries it knows."""

    def __init__(self, answer: bytes | None, delay: float = 0.0) -> None:
        self.answer = answer
        """The reply to the whole query (None: a terminal that answers nothing)."""
        self.delay = delay
        """Seconds between the query and the reply (a slow ssh round trip)."""
        self.master, self.slave = os.openpty()
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            if not select.select([self.master], [], [], 0.02)[0]:
                continue
            try:
                self.received += os.read(self.master, 1024)
            except OSError:
                return
            if QUERY in self.received and self.answer is not None:
                time.sleep(self.delay)
                os.write(self.master, self.answer)
                self.answer = None

    def unread(self) -> bytes:
        """What is left for the program to read (a late or unconsumed reply would be typed text)."""
        tty.setraw(self.slave)  # canonical mode would hold back a reply without a newline
        left = b""
        while select.select([self.slave], [], [], 0.05)[0]:
            left += os.read(self.slave, 1024)
        return left

    def close(self) -> None:
        self._stop.set()
        self._thread.join(1)
        os.close(self.master)
        os.close(self.slave)


@contextmanager
def fake_terminal(answer: bytes | None, delay: float = 0.0) -> Iterator[FakeTerminal]:
    terminal = FakeTerminal(answer, delay)
    try:
        yield terminal
    finally:
        terminal.close()


@pytest.mark.parametrize(
    ("reply", "rgb"),
    [
        (b"\x1b]11;rgb:ffff/ffff/ffff\x07", (255, 255, 255)),
        (b"\x1b]11;rgb:1e1e/1e1e/2e2e\x1b\\", (30, 30, 46)),
        (b"\x1b]11;rgba:f/8/0/ffff\x07", (255, 136, 0)),
        (b"\x1b]11;#fafafa\x07", (250, 250, 250)),
        (b"\x1b]11;#00000000ffff\x07", (0, 0, 255)),
        (b"\x1b]11;rgb:zz/00/00\x07", None),
        (b"\x1b]11;#fff\x07", None),
        (b"\x1b[?1;2c", None),
    ],
)
def test_osc_11_replies_are_read_as_pi_reads_them(reply: bytes, rgb: tuple[int, int, int] | None) -> None:
    assert parse_background_reply(b"noise" + reply + DA1) == rgb


def test_light_and_dark_follow_the_colours_luminance() -> None:
    assert shade_of((250, 250, 250)) == "light"
    assert shade_of((30, 30, 46)) == "dark"
    assert shade_of((128, 128, 128)) == "dark"  # sRGB-linear luminance 0.22
    assert shade_from_colorfgbg("0;15") == "light"
    assert shade_from_colorfgbg("15;default;0") == "dark"
    assert shade_from_colorfgbg("0;7") == "light"  # #c0c0c0, as in Pi
    assert shade_from_colorfgbg("default") is None and shade_from_colorfgbg("") is None


def test_a_terminal_that_answers_is_read_and_nothing_is_left_to_type() -> None:
    with fake_terminal(b"\x1b]11;rgb:fafa/fafa/fafa\x07" + DA1) as terminal:
        rgb, typed, silent = query_background(terminal.slave, terminal.slave, timeout=5)
        left = terminal.unread()
        asked = terminal.received
    assert rgb == (250, 250, 250) and typed == "" and not silent
    assert asked == QUERY
    assert left == b""


def test_a_terminal_without_osc_11_ends_the_wait_with_its_da1_answer() -> None:
    with fake_terminal(DA1) as terminal:
        background = detect_background({"TERM": "xterm"}, terminal.slave, terminal.slave, timeout=5)
        left = terminal.unread()
    assert (background.theme, background.source, background.confident) == ("dark", "fallback", False)
    assert left == b""


def test_the_default_wait_outlasts_a_slow_ssh_round_trip() -> None:
    """Over ssh the replies come a round trip later: with the default wait they are read, not typed."""
    with fake_terminal(b"\x1b]11;rgb:ffff/ffff/ffff\x07" + DA1, delay=0.5) as terminal:
        rgb, typed, silent = query_background(terminal.slave, terminal.slave)
        left = terminal.unread()
    assert (rgb, typed, silent) == ((255, 255, 255), "", False)
    assert left == b""


def test_a_reply_cut_off_by_the_end_of_the_wait_is_not_typed() -> None:
    with fake_terminal(b"ab\x1b]11;rgb:ffff/ff") as terminal:  # the rest would come after the wait
        rgb, typed, silent = query_background(terminal.slave, terminal.slave, timeout=0.2)
    assert (rgb, typed, silent) == (None, "ab", True)
    assert typed_text(b"ab\x1b]11;rgb:0/0/0\x07\x1b[?62;2") == "ab"
    assert typed_text(b"ab\x1b]11;rgb:0/0/0\x1b") == "ab"
    assert typed_text(b"ab\x1b[?") == "ab"


def test_a_silent_terminal_is_waited_for_briefly_then_colorfgbg_decides() -> None:
    with fake_terminal(None) as terminal:
        env = {"TERM": "xterm", "COLORFGBG": "0;15"}
        background = detect_background(env, terminal.slave, terminal.slave, timeout=0.05)
    assert (background.theme, background.source) == ("light", "COLORFGBG")


def ask(terminal: FakeTerminal, cwd: Path, overrides: dict[str, object] | None = None) -> str | None:
    """``startup_theme`` as caddie's start-up calls it, with the fake terminal as the terminal: the theme
    it passes for the run."""
    return startup_theme(
        str(cwd), overrides, {"TERM": "xterm"}, project_trusted=True, fd_in=terminal.slave,
        fd_out=terminal.slave, timeout=5,
    ).theme  # fmt: skip


def test_the_first_run_saves_the_detected_theme_and_later_runs_do_not_ask(tmp_path: Path) -> None:
    light = b"\x1b]11;rgb:ffff/ffff/ffff\x07" + DA1
    with fake_terminal(light) as terminal:
        unsaved = ask(terminal, tmp_path)
    saved = json.loads((agent_dir() / "settings.json").read_text())
    with fake_terminal(light) as terminal:
        again = ask(terminal, tmp_path)
        asked_again = terminal.received
    assert unsaved is None and saved == {"theme": "light"}
    assert again is None and asked_again == b"", "a theme is set: the terminal is not asked"


def test_a_command_line_theme_or_an_unanswered_query_saves_nothing(tmp_path: Path) -> None:
    with fake_terminal(DA1) as terminal:
        told = ask(terminal, tmp_path, {"theme": "dark"})
        asked = terminal.received
        unknown = ask(terminal, tmp_path)
    assert told is None and asked == b""
    assert unknown is None and not (agent_dir() / "settings.json").exists()


def test_a_terminal_that_answers_nothing_gets_dark_saved_and_is_not_waited_for_again(tmp_path: Path) -> None:
    def start(terminal: FakeTerminal) -> str | None:
        return startup_theme(
            str(tmp_path), None, {"TERM": "xterm"}, project_trusted=True, fd_in=terminal.slave,
            fd_out=terminal.slave, timeout=0.1,
        ).theme  # fmt: skip

    with fake_terminal(None) as terminal:
        first = start(terminal)
    saved = json.loads((agent_dir() / "settings.json").read_text())
    with fake_terminal(None) as terminal:
        again = start(terminal)
        asked_again = terminal.received
    assert first is None and saved == {"theme": "dark"}
    assert again is None and asked_again == b""


def test_a_theme_that_cannot_be_saved_is_still_used_for_this_run(tmp_path: Path) -> None:
    (agent_dir()).mkdir(parents=True, exist_ok=True)
    (agent_dir() / "settings.json").write_text("{ broken")
    with fake_terminal(b"\x1b]11;#ffffff\x07" + DA1) as terminal:
        unsaved = ask(terminal, tmp_path)
    assert unsaved == "light"
    assert (agent_dir() / "settings.json").read_text() == "{ broken"


def test_a_light_dark_pair_is_decided_by_the_terminal_at_every_start(tmp_path: Path) -> None:
    project_settings = tmp_path / ".caddie" / "settings.json"
    project_settings.parent.mkdir()
    project_settings.write_text(json.dumps({"theme": "paper / night"}))  # a trusted project's, as Pi
    with fake_terminal(b"\x1b]11;rgb:ffff/ffff/ffff\x07" + DA1) as terminal:
        on_light = ask(terminal, tmp_path)
    with fake_terminal(b"\x1b]11;rgb:0000/0000/0000\x07" + DA1) as terminal:
        on_dark = ask(terminal, tmp_path)
    with fake_terminal(DA1) as terminal:
        unknown = ask(terminal, tmp_path)
    assert (on_light, on_dark, unknown) == ("paper", "night", "night")
    assert not (agent_dir() / "settings.json").exists(), "a pair's pick is not saved"


def test_keys_typed_ahead_are_kept_for_the_editor(tmp_path: Path) -> None:
    typed = (
        b"fix the \x1b[Dbug\r\x1b]11;rgb:0000/0000/0000\x07" + DA1
    )  # an arrow key, Enter, then the replies
    with fake_terminal(typed) as terminal:
        decided = startup_theme(
            str(tmp_path), None, {"TERM": "xterm"}, project_trusted=True, fd_in=terminal.slave,
            fd_out=terminal.slave, timeout=5,
        )  # fmt: skip
    assert decided.typed_ahead == "fix the bug"
    assert typed_text(b"cafe\x7f\xc3\xa9\ttwo\rlines\r") == "caf\u00e9two\nlines"
