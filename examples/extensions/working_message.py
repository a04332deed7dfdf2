"""A working message and indicator that last (Pi's working-message-test example): set once at the session's
start, they are shown every time the agent works, turn after turn — not only the first time.

Load it with ``caddie -e examples/extensions/working_message.py`` and send a few messages: the line under
the conversation says "Working... (custom)" with a brown dot each time.
"""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext

BROWN = "\x1b[38;2;155;86;63m"
CUSTOM_MESSAGE = f"{BROWN}Working... (custom)\x1b[39m"
CUSTOM_FRAMES = [f"{BROWN}●\x1b[39m"]


def register(api: ExtensionAPI) -> None:
    async def on_start(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_working_message(CUSTOM_MESSAGE)
        ctx.ui.set_working_indicator(CUSTOM_FRAMES)

    api.on("session_start", on_start)
