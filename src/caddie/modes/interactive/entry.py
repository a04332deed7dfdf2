"""``run_interactive``: what ``caddie`` without ``-p`` runs, from a ``SessionRequest`` to an exit code.

The terminal is always given back in a usable state: Textual restores it when the app ends, crashes or
gets SIGTERM/SIGHUP (which end the app like /quit); the session is shut down afterwards if the app could
not do it itself. Afterwards the last exchange and the command that resumes the session are printed to the
normal screen, so they stay in the terminal's scrollback (see ``scrollback``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.modes.interactive.images import image_kind, prepare_terminal
from caddie.modes.interactive.keys import enable_legacy_keys
from caddie.modes.interactive.startup import thaw_startup_objects
from caddie.modes.interactive.ui import TextualUI

if TYPE_CHECKING:
    from caddie.runtime.request import SessionRequest


async def run_interactive(
    request: SessionRequest, *, resume_picker: bool = False, initial_prompts: Sequence[str] = ()
) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(
            'caddie: the interactive mode needs a terminal; for scripts and pipes use: caddie -p "your task"',
            file=sys.stderr,
        )
        return 2
    from caddie.modes.interactive.terminal_background import startup_theme
    from caddie.runtime.trust import default_trust, remembered_trust

    trusted = request.trust if request.trust is not None else remembered_trust(request.cwd)
    trusted = trusted if trusted is not None else default_trust() == "always"
    decided = startup_theme(request.cwd, request.settings_overrides, os.environ, project_trusted=trusted)
    if decided.theme is not None:  # asked before anything is drawn
        request.settings_overrides = {**(request.settings_overrides or {}), "theme": decided.theme}
    ui = TextualUI()
    request.ui = ui
    app = CaddieApp(Startup(request, resume_picker, list(initial_prompts), decided.typed_ahead), ui)
    enable_legacy_keys()
    prepare_terminal(image_kind())  # before the app reads the keyboard
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, app.request_quit)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
            pass
    try:
        with _screen_on_stderr():
            code = await app.run_async()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        thaw_startup_objects()
        ui.detach()
        if app.session is not None and not app.shutdown_done:
            app.shutdown_done = True
            await app.session.shutdown("quit")
    try:
        _print_after(app, request)
    except OSError:  # the terminal is gone (closed without a SIGHUP): nothing left to print to
        pass
    if code is None:
        return 1 if app.return_code else 0
    return code


def _print_after(app: CaddieApp, request: SessionRequest) -> None:
    """What stays in the terminal's scrollback once the screen is gone: a start-up problem, the last
    exchange and the command that resumes the session."""
    if app.exit_message:
        print(f"caddie: {app.exit_message}", file=sys.stderr)
    session = app.session
    if session is not None:
        from caddie.modes.interactive.scrollback import print_farewell

        saved = session.store.file_exists
        print_farewell(
            Console(file=sys.stdout, soft_wrap=False),
            session.messages,
            cwd=session.cwd,
            session_id=session.store.session_id if saved else None,
            session_dir=request.session_dir,
        )


@contextlib.contextmanager
def _screen_on_stderr() -> Iterator[None]:
    """Textual draws on stderr. With stderr redirected (``caddie 2>caddie.log``) the screen would go into the
    file and the terminal would stay blank, so while the app runs stderr is the terminal (stdout's); the
    redirection is back for what is printed after it."""
    try:
        redirected = not os.isatty(2) and os.isatty(1)
    except OSError:
        redirected = False
    if not redirected:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(1, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
