"""Add context to a prompt, but not to a quick correction (Pi's input-transform-streaming example): a
prompt mentioning changes, a diff or modified files gets ``git diff --stat`` appended; a steering message
sent while the agent works (``streaming_behavior == "steer"``) goes through at once, untouched."""

from __future__ import annotations

import re

from caddie.extensions.api import ExtensionAPI, ExtensionContext, InputEvent, InputResult

TRIGGER = re.compile(r"\b(changes?|diff|modified)\b", re.IGNORECASE)


def register(api: ExtensionAPI) -> None:
    async def on_input(event: InputEvent, ctx: ExtensionContext) -> InputResult:
        if event.streaming_behavior == "steer" or not TRIGGER.search(event.text):
            return InputResult("continue")
        diff = await api.exec("git", ["diff", "--stat"], cwd=ctx.cwd)
        if diff.code != 0 or not diff.stdout.strip():
            return InputResult("continue")
        return InputResult(
            "transform", f"{event.text}\n\nCurrent uncommitted changes:\n```\n{diff.stdout.strip()}\n```"
        )

    api.on("input", on_input)
