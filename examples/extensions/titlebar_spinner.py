"""A spinner in the terminal title while the agent works (Pi's titlebar-spinner example): from the start of
a run until it has settled, the title cycles through braille frames; then it is ``caddie - <session> -
<folder>`` again."""

from __future__ import annotations

import asyncio
from pathlib import Path

from caddie.extensions.api import ExtensionAPI, ExtensionContext

FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
INTERVAL_S = 0.08


def register(api: ExtensionAPI) -> None:
    spinner: list[asyncio.Task[None]] = []

    def base_title(ctx: ExtensionContext) -> str:
        session = api.get_session_name()
        folder = Path(ctx.cwd).name
        return f"caddie - {session} - {folder}" if session else f"caddie - {folder}"

    def stop(ctx: ExtensionContext) -> None:
        for task in spinner:
            task.cancel()
        spinner.clear()
        ctx.ui.set_title(base_title(ctx))

    async def spin(ctx: ExtensionContext) -> None:
        frame = 0
        while True:
            ctx.ui.set_title(f"{FRAMES[frame % len(FRAMES)]} {base_title(ctx)}")
            frame += 1
            await asyncio.sleep(INTERVAL_S)

    def start(event: object, ctx: ExtensionContext) -> None:
        stop(ctx)
        spinner.append(asyncio.ensure_future(spin(ctx)))

    api.on("agent_start", start)
    api.on("agent_settled", lambda event, ctx: stop(ctx))
    api.on("session_shutdown", lambda event, ctx: stop(ctx))
