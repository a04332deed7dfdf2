"""Let another program prompt the agent (Pi's file-trigger example): write a line to the trigger file
(``/tmp/agent-trigger.txt``, or the ``--trigger-file`` option) and it arrives as a message that starts a
turn; the file is emptied after reading. The file is checked twice a second."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from caddie.extensions.api import ExtensionAPI, ExtensionContext

DEFAULT_TRIGGER = "/tmp/agent-trigger.txt"
POLL_S = 0.5


def register(api: ExtensionAPI) -> None:
    api.register_flag("trigger-file", "File whose contents are sent to the agent", default=DEFAULT_TRIGGER)
    watcher: list[asyncio.Task[None]] = []

    async def watch(path: Path) -> None:
        while True:
            with contextlib.suppress(OSError):
                content = path.read_text(encoding="utf-8").strip()
                if content:
                    path.write_text("", encoding="utf-8")
                    api.send_message("file-trigger", f"External trigger: {content}", trigger_turn=True)
            await asyncio.sleep(POLL_S)

    def on_start(event: object, ctx: ExtensionContext) -> None:
        path = Path(str(api.get_flag("trigger-file") or DEFAULT_TRIGGER))
        watcher[:] = [asyncio.ensure_future(watch(path))]
        if ctx.has_ui:
            ctx.ui.notify(f"Watching {path}", "info")

    def on_shutdown(event: object, ctx: ExtensionContext) -> None:
        for task in watcher:
            task.cancel()
        watcher.clear()

    api.on("session_start", on_start)
    api.on("session_shutdown", on_shutdown)
