"""The interactive ``caddie demo``: the real TUI, with the tour typed into the editor for you."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Protocol

from rich.text import Text

from caddie.agent.events import AgentStartEvent
from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.modes.interactive.ui import TextualUI
from caddie.runtime.session_api import Session

TYPE_DELAY_S = 0.012
STEP_PAUSE_S = 0.9
RUN_START_TIMEOUT_S = 60.0


class Step(Protocol):
    """One step of the tour (demo.py's ``Step``): ``say`` a line, type a ``prompt`` or a ``command``."""

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...


class DemoApp(CaddieApp):
    """A ``CaddieApp`` that plays ``steps`` once it is ready, then leaves the session to the user."""

    def __init__(
        self,
        startup: Startup,
        ui: TextualUI | None,
        steps: Sequence[Step],
        *,
        type_delay: float = TYPE_DELAY_S,
        pause: float = STEP_PAUSE_S,
    ) -> None:
        super().__init__(startup, ui)
        self.steps = list(steps)
        self.type_delay = type_delay
        self.pause = pause
        self.tour_done = asyncio.Event()

    def on_mount(self) -> None:
        # Textual calls every class's ``on_mount`` along the MRO, so CaddieApp's runs without a super() call
        # (one here started a second session beside the first, which the tour then lost track of).
        self.run_worker(self._tour(), name="demo-tour", exit_on_error=False)

    async def _tour(self) -> None:
        await self.ready.wait()
        session = self.session
        if session is None:
            return
        try:
            for step in self.steps:
                if step.kind == "say":
                    self.show_info(Text(step.text, style="bold magenta"))
                    await asyncio.sleep(self.pause)
                    continue
                for n in range(1, len(step.text) + 1):
                    self.editor.set_text(step.text[:n])
                    await asyncio.sleep(self.type_delay)
                self.editor.set_text("")
                self.conversation.follow()
                await self._enter(session, step)
                work = [w for w in self.workers if w.group == "work"]
                if work:
                    await self.workers.wait_for_complete(work)
                await session.wait_for_idle()
                await asyncio.sleep(self.pause)
            self.show_info(
                Text(
                    "That was the tour. Scroll up to see it again; /context, /tree and /goal work as usual. "
                    "Ctrl+D quits (the throwaway repository goes with it).",
                    style="bold",
                )
            )
        finally:
            self.tour_done.set()

    async def _enter(self, session: Session, step: Step) -> None:
        """Submit the typed step; for a prompt, return once its run has started (``agent_start``: on a
        loaded machine it may not have yet, and ``wait_for_idle`` would return at once)."""
        started = asyncio.Event()

        def on_event(event: object) -> None:
            if isinstance(event, AgentStartEvent):
                started.set()

        unsubscribe = session.subscribe(on_event)
        try:
            self.handle_input(step.text)
            await asyncio.sleep(0.05)
            if step.kind == "prompt":
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(started.wait(), RUN_START_TIMEOUT_S)
        finally:
            unsubscribe()
