"""Full-screen programs from ``!`` (Pi's interactive-shell example): ``!vim notes.txt``, ``!git rebase -i
HEAD~3``, ``!htop`` get the whole terminal — caddie's screen is put away while they run and comes back when
they exit. ``!i <command>`` does the same for any command. Other ``!`` commands run as always.

It answers the ``user_bash`` event for the commands it knows (editors, pagers, interactive git, monitors,
file managers, database clients …; ``INTERACTIVE_COMMANDS`` adds more, ``INTERACTIVE_EXCLUDE`` removes
some, both comma-separated) and runs them inside ``tui.suspend()`` (a component factory's ``tui``; Textual's
``App.suspend``). Only your ``!`` commands go through it, not the model's bash tool.

Load it with ``caddie -e examples/extensions/interactive_shell.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from caddie.extensions.api import (
    BashResult,
    ExtensionAPI,
    ExtensionContext,
    TerminalNotSuspendable,
    TuiHandle,
    UserBashEvent,
    UserBashResult,
)

INTERACTIVE = [
    "vim", "nvim", "vi", "nano", "emacs", "pico", "micro", "helix", "hx", "kak",  # editors
    "less", "more", "most",  # pagers
    "git commit", "git rebase", "git merge", "git cherry-pick", "git revert", "git add -p", "git add --patch",
    "git add -i", "git add --interactive", "git stash -p", "git stash --patch", "git reset -p",
    "git reset --patch", "git checkout -p", "git checkout --patch", "git difftool", "git mergetool",
    "htop", "top", "btop", "glances",  # monitors
    "ranger", "nnn", "lf", "mc", "vifm", "tig", "lazygit", "gitui", "fzf", "sk",
    "ssh", "telnet", "mosh", "psql", "mysql", "sqlite3", "mongosh", "redis-cli",
    "kubectl edit", "kubectl exec -it", "docker exec -it", "docker run -it", "tmux", "screen", "ncdu",
]  # fmt: skip


def interactive_commands(environ: dict[str, str] | os._Environ[str] = os.environ) -> list[str]:
    extra = [c.strip() for c in environ.get("INTERACTIVE_COMMANDS", "").split(",") if c.strip()]
    excluded = {c.strip().lower() for c in environ.get("INTERACTIVE_EXCLUDE", "").split(",")}
    return [c for c in [*INTERACTIVE, *extra] if c.lower() not in excluded]


def is_interactive(command: str, known: list[str]) -> bool:
    """Whether ``command`` starts with a known program (or pipes into one: ``git log | less``)."""
    text = command.strip().lower()
    after_pipe = text.rsplit("|", 1)[-1].strip() if "|" in text else None
    for name in (c.lower() for c in known):
        for part in (text, after_pipe):
            if part is not None and (part == name or part.startswith((f"{name} ", f"{name}\t"))):
                return True
    return False


class Nothing:
    def render(self, width: int) -> list[str]:
        return []


def run_in_terminal(command: str, cwd: str, tui: TuiHandle) -> int | str:
    """The command's exit code, run with the whole terminal; or why it could not be."""
    try:
        with tui.suspend():
            terminal = sys.__stdout__
            if terminal is not None:
                terminal.write("\x1b[2J\x1b[H")  # a clear screen for the program
                terminal.flush()
            shell = os.environ.get("SHELL") or "/bin/sh"
            return subprocess.run([shell, "-c", command], cwd=cwd, check=False).returncode
    except TerminalNotSuspendable as e:
        return str(e)


def register(api: ExtensionAPI) -> None:
    async def on_user_bash(event: UserBashEvent, ctx: ExtensionContext) -> UserBashResult | None:
        command, forced = event.command, False
        if command.startswith(("i ", "i\t")):
            command, forced = command[2:].strip(), True
        if not forced and not is_interactive(command, interactive_commands()):
            return None  # caddie runs it as usual
        if not ctx.ui.supports("custom"):
            return UserBashResult(BashResult("(interactive commands require the terminal UI)", 1))

        def take_terminal(tui: TuiHandle, theme: Any, keys: Any, done: Any) -> Nothing:
            done(run_in_terminal(command, event.cwd, tui))
            return Nothing()

        outcome = await ctx.ui.custom(take_terminal)
        if isinstance(outcome, str):
            return UserBashResult(BashResult(f"(not run: {outcome})", 1))
        if outcome == 0:
            return UserBashResult(BashResult("(interactive command completed successfully)", 0))
        return UserBashResult(BashResult(f"(interactive command exited with code {outcome})", outcome))

    api.on("user_bash", on_user_bash)
