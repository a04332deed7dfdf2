"""A private tmux server for end-to-end tests of the real app in a real terminal.

Deterministic on a loaded machine: every test has its own tmux server (its own socket), tmux's stderr is
shown when a tmux command fails, the shell is waited for before anything is typed, and waits are for what
the screen shows (``CADDIE_TMUX_TIMEOUT`` seconds at most, default 60), never fixed sleeps. Without tmux
the tests skip, and fail under ``CI=1`` (.ci/run installs it).
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.interop.pi import skip_or_fail

TIMEOUT_S = float(os.environ.get("CADDIE_TMUX_TIMEOUT", "60"))
_servers = itertools.count()


class TmuxError(AssertionError):
    pass


class Tmux:
    """One private tmux server with one pane (``smoke``) running a plain shell."""

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

    def resize(self, width: int, height: int) -> None:
        self.run("resize-window", "-t", "smoke", "-x", str(width), "-y", str(height))

    def wait_for(self, condition: Callable[[str], bool], what: str, timeout: float = TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if condition(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{text}")
            time.sleep(0.05)


@contextmanager
def tmux_server(home: Path, size: tuple[int, int] = (80, 24)) -> Iterator[Tmux]:
    """A tmux server whose pane runs ``bash`` with a clean environment (``HOME`` = ``home``)."""
    if shutil.which("tmux") is None:
        skip_or_fail("tmux is not installed")
    server = Tmux(f"caddie-smoke-{os.getpid()}-{next(_servers)}")
    env = {"PS1": "$ ", "TERM": "xterm-256color", "HOME": str(home), "LANG": "C.UTF-8"}
    env_args = [f"{k}={v}" for k, v in env.items()]
    command = ["env", "-i", f"PATH={os.environ.get('PATH', '')}", *env_args, "bash", "--norc", "--noprofile"]
    width, height = size
    last: TmuxError | None = None
    for attempt in range(3):  # a server that could not start (rare, under heavy load) is retried, loudly
        try:
            server.run("new-session", "-d", "-s", "smoke", "-x", str(width), "-y", str(height), *command)
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


def caddie_command(project: Path, caddie_dir: Path, args: str, env: Mapping[str, str] | None = None) -> str:
    """The shell line that starts this checkout's caddie in ``project`` with its own ``CADDIE_DIR``."""
    assignments = {"CADDIE_DIR": str(caddie_dir), "CADDIE_OLLAMA_URL": "http://127.0.0.1:9", **(env or {})}
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in assignments.items())
    return f"cd {shlex.quote(str(project))} && {prefix} {shlex.quote(sys.executable)} -m caddie {args}"
