"""End to end in a real terminal (tmux): prompt, slash command, Ctrl+Z suspend and fg, quit; the terminal
is sane afterwards and the last exchange plus the resume command stay in the scrollback.

Deterministic on a loaded machine: every test has its own tmux server (its own socket), tmux's stderr is
shown when a tmux command fails, the shell is waited for before anything is typed, and waits are for what
the screen shows (``CADDIE_TMUX_TIMEOUT`` seconds at most, default 60), never fixed sleeps.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.interop.pi import skip_or_fail


@pytest.fixture(autouse=True)
def _needs_tmux() -> None:
    """Skipped with the reason without tmux; failed under ``CI=1``, where ``.ci/run`` installs it."""
    if shutil.which("tmux") is None:
        skip_or_fail("tmux is not installed (Debian: apt-get install tmux)")


TIMEOUT_S = float(os.environ.get("CADDIE_TMUX_TIMEOUT", "60"))
_servers = itertools.count()


class TmuxError(AssertionError):
    pass


class Tmux:
    """One private tmux server with one 80x24 pane running a plain shell."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise TmuxError(f"tmux {' '.join(args[:2])} exited {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "smoke", "-l", text)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "smoke", *keys)

    def screen(self) -> str:
        return self.run("capture-pane", "-t", "smoke", "-p")

    def scrollback(self) -> str:
        """The whole pane history, scrollback included, with wrapped lines joined."""
        return self.run("capture-pane", "-t", "smoke", "-p", "-J", "-S", "-")

    def wait_for(self, condition: Callable[[str], bool], what: str, timeout: float = TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{text}")
            time.sleep(0.05)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux(f"caddie-smoke-{os.getpid()}-{next(_servers)}")
    env = {"PS1": "$ ", "TERM": "xterm-256color", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env_args = [f"{k}={v}" for k, v in env.items()]
    command = ["env", "-i", f"PATH={os.environ.get('PATH', '')}", *env_args, "bash", "--norc", "--noprofile"]
    last: TmuxError | None = None
    for attempt in range(3):  # a server that could not start (rare, under heavy load) is retried, loudly
        try:
            server.run("new-session", "-d", "-s", "smoke", "-x", "80", "-y", "24", *command)
            break
        except TmuxError as e:
            last = e
            server.run("kill-server", check=False)
            time.sleep(0.5 * (attempt + 1))
    else:
        raise AssertionError(f"tmux could not start a session three times: {last}")
    try:
        server.wait_for(lambda s: s.rstrip().endswith("$"), "the shell prompt")
        yield server
    finally:
        server.run("kill-server", check=False)


def start_caddie(tmux: Tmux, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    caddie_dir = tmp_path / "caddie-home"
    command = (
        f"cd {shlex.quote(str(project))} && CADDIE_DIR={shlex.quote(str(caddie_dir))} "
        f"CADDIE_OLLAMA_URL=http://127.0.0.1:9 {shlex.quote(sys.executable)} -m caddie --model faux/echo"
    )
    tmux.type(command)
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
    assert f"To resume this session: caddie --session {session_id.group(1)}" in after_exit


def test_ctrl_z_suspends_and_fg_resumes(tmux: Tmux, tmp_path: Path) -> None:
    start_caddie(tmux, tmp_path)
    tmux.type("before suspending")
    tmux.keys("C-z")
    tmux.wait_for(lambda s: "Stopped" in s and s.rstrip().endswith("$"), "the shell after Ctrl+Z")
    tmux.type("fg")
    tmux.keys("Enter")
    back = tmux.wait_for(lambda s: "faux/echo" in s and "before suspending" in s, "caddie again after fg")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: s.count("before suspending") >= 2, "the answer after resuming")
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
