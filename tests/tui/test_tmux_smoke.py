"""End to end in a real terminal: start caddie in tmux, prompt, run a slash command, quit, check the tty."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Tmux:
    """One private tmux server with one 80x24 pane running a plain shell."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
        return done.stdout

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "smoke", "-l", text)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "smoke", *keys)

    def screen(self) -> str:
        return self.run("capture-pane", "-t", "smoke", "-p")

    def wait_for(self, condition: Callable[[str], bool], what: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    server = Tmux(f"caddie-smoke-{os.getpid()}")
    env = {"PS1": "$ ", "TERM": "xterm-256color", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env_args = [f"{k}={v}" for k, v in env.items()]
    server.run(
        "new-session", "-d", "-s", "smoke", "-x", "80", "-y", "24",
        "env", "-i", f"PATH={os.environ.get('PATH', '')}", *env_args, "bash", "--norc", "--noprofile",
    )  # fmt: skip
    try:
        yield server
    finally:
        subprocess.run(["tmux", "-L", server.socket, "kill-server"], capture_output=True, timeout=10)


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
    tmux.wait_for(lambda s: "Session id" in s and "faux/echo" in s, "the /session output")

    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: "session saved to" in s, "caddie to exit")
    modes = terminal_modes(tmux)

    editor = [line.strip() for line in before_send.splitlines()]
    assert editor.count("first line") == 1, "Alt+Enter sent the message instead of adding a newline"
    assert editor[editor.index("first line") + 1] == "second line"
    assert sorted(modes) == ["echo", "icanon"], "the terminal was left in raw mode"


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
