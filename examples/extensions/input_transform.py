"""Intercept what the user types (Pi's input-transform example): ``?quick <question>`` asks for a brief
answer, ``ping`` and ``time`` answer at once without the model. Messages extensions send pass untouched."""

from __future__ import annotations

from datetime import datetime

from caddie.extensions.api import ExtensionAPI, ExtensionContext, InputEvent, InputResult


def register(api: ExtensionAPI) -> None:
    def on_input(event: InputEvent, ctx: ExtensionContext) -> InputResult:
        if event.source == "extension":
            return InputResult("continue")
        if event.text.startswith("?quick "):
            query = event.text[len("?quick ") :].strip()
            if not query:
                ctx.ui.notify("Usage: ?quick <question>", "warning")
                return InputResult("handled")
            return InputResult("transform", f"Respond briefly in 1-2 sentences: {query}")
        if event.text.lower() == "ping":
            ctx.ui.notify("pong", "info")
            return InputResult("handled")
        if event.text.lower() == "time":
            ctx.ui.notify(datetime.now().strftime("%c"), "info")
            return InputResult("handled")
        return InputResult("continue")

    api.on("input", on_input)
