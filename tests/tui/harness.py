"""Building the interactive app against the faux provider, and waiting for it, in Pilot tests."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget

from caddie.ai.providers.faux import FauxProvider, FauxStep
from caddie.config.paths import agent_dir
from caddie.extensions.api import EventBus, ExtensionAPI
from caddie.extensions.runner import Extension
from caddie.modes.interactive.app import CaddieApp, Startup
from caddie.modes.interactive.transcript_view import Block, TranscriptView
from caddie.runtime.factory import SessionRequest

SMALL = (80, 24)
LARGE = (200, 60)


def write_settings(**values: Any) -> None:
    """Global settings for the test's CADDIE_DIR; the bundled extensions stay off unless a test asks."""
    path = agent_dir() / "settings.json"
    current = (
        json.loads(path.read_text()) if path.exists() else {"disabledExtensions": ["mulligan", "goal", "mcp"]}
    )
    current.update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current))


def inline_extension(register: Callable[[ExtensionAPI], Any], name: str = "testext") -> Extension:
    extension = Extension(path=f"/inline/{name}.py", name=name)
    api = ExtensionAPI(extension, EventBus())
    extension.api = api
    register(api)
    return extension


def make_app(
    cwd: Path,
    steps: Sequence[FauxStep] = (),
    *,
    extensions: Sequence[Extension] = (),
    model: str | None = "faux/faux-1",
    session: str = "new",
    session_file: str | None = None,
    resume_picker: bool = False,
    prompts: Sequence[str] = (),
    trust: bool | None = None,
    faux: FauxProvider | None = None,
) -> tuple[CaddieApp, FauxProvider]:
    if not (agent_dir() / "settings.json").exists():
        write_settings()  # bundled extensions would add their own entries, commands and messages
    faux = faux or FauxProvider()
    faux.set_responses(list(steps))
    request = SessionRequest(
        cwd=str(cwd),
        mode="tui",
        model=model,
        session=session,  # type: ignore[arg-type]
        session_file=session_file,
        require_model=False,
        stream_fn=faux.stream,
        inline_extensions=list(extensions),
        trust=trust,
        no_context_files=True,
    )
    return CaddieApp(Startup(request, resume_picker, list(prompts))), faux


async def ready(app: CaddieApp, pilot: Pilot[Any]) -> None:
    await asyncio.wait_for(app.ready.wait(), 10)
    await pilot.pause()


async def settle(app: CaddieApp, pilot: Pilot[Any]) -> None:
    """Until the agent is idle and the screen has caught up (pending timers flushed)."""
    assert app.session is not None
    await asyncio.sleep(0)
    await asyncio.wait_for(app.session.wait_for_idle(), 30)  # generous: CI machines are shared
    await pilot.pause(0.1)


async def until(pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Pause the pilot until ``condition()`` holds (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.02)


async def type_text(pilot: Pilot[Any], text: str) -> None:
    """Type like a user (each character a key press; newlines as Shift+Enter)."""
    for ch in text:
        if ch == "\n":
            await pilot.press("shift+enter")
        elif ch == " ":
            await pilot.press("space")
        else:
            await pilot.press(ch)


async def submit(pilot: Pilot[Any], app: CaddieApp, text: str, key: str = "enter") -> None:
    """Put ``text`` in the editor (faster than typing it) and press ``key``."""
    app.editor.set_text(text)
    await pilot.press(key)


def screen_text(app: CaddieApp) -> str:
    """What the screen shows right now, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def widget_text(widget: Widget | Block) -> str:
    """A widget's (or a transcript block's) rendering as plain text, whether or not it is scrolled into view."""
    if isinstance(widget, Block):
        view = widget.view
        assert view is not None, "the block is not in the transcript"
        return "\n".join(strip.text.rstrip() for strip in widget.lines(view, view._content_width()))
    if isinstance(widget, TranscriptView):
        return "\n".join(widget_text(block) for block in widget.blocks)
    if widget.children:
        return "\n".join(widget_text(child) for child in widget.children if child.display)
    region = Region(0, 0, widget.outer_size.width, widget.outer_size.height)
    return "\n".join(strip.text.rstrip() for strip in widget.render_lines(region))


def plain(renderable: RenderableType, width: int = 78) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def statuses(app: CaddieApp) -> list[str]:
    """The short confirmations ("Model: …") shown in the transcript, oldest first."""
    from caddie.modes.interactive.conversation import StatusLine

    return [line.message for line in app.conversation.blocks_of(StatusLine)]
