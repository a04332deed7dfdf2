"""What the app asks of the terminal itself, beside drawing: escape sequences (title, OSC 9;4 progress),
lending the terminal to another program (Ctrl+G's editor) and redrawing after Ctrl+Z."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.widget import Widget

PROGRESS_BUSY = "\x1b]9;4;3\x07"
"""OSC 9;4 state 3: an indeterminate progress indicator (the terminal's tab or taskbar shows work)."""
PROGRESS_CLEAR = "\x1b]9;4;0\x07"


class TerminalControl:
    """The app's terminal; in a headless test every sequence is dropped."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.progress_enabled = False
        """``terminal.showTerminalProgress`` (Pi's setting, off by default)."""
        self._progress_shown = False
        app.app_resume_signal.subscribe(app, self._after_suspend)

    def write(self, sequence: str) -> None:
        """An escape sequence straight to the terminal."""
        driver = self.app._driver  # Textual offers no public way to write an escape sequence
        if driver is not None and not self.app.is_headless:
            driver.write(sequence)

    def progress(self, busy: bool) -> None:
        """Show (or clear) the terminal's progress indicator while the agent works (OSC 9;4)."""
        if not self.progress_enabled or busy == self._progress_shown:
            return
        self._progress_shown = busy
        self.write(PROGRESS_BUSY if busy else PROGRESS_CLEAR)

    async def run_suspended(self, run: Callable[[], int]) -> int:
        """Give the terminal to a full-screen program (``run`` blocks until it exits), then repaint."""
        app = self.app
        driver = app._driver
        if app.is_headless or driver is None or not driver.can_suspend:
            return await asyncio.to_thread(run)
        with app.suspend():
            return run()

    def _after_suspend(self, _app: App[Any]) -> None:
        """Back from Ctrl+Z (``fg``): the terminal was someone else's meanwhile, so redraw everything."""
        app = self.app
        app.refresh(layout=True)
        app.screen.refresh(repaint=True, layout=True)
        for widget in app.screen.walk_children(Widget):
            widget.refresh()
