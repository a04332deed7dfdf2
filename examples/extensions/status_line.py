"""Turn progress in the status bar (Pi's status-line example): ``Ready``, then ``● Turn N...`` while a turn
runs and ``✓ Turn N complete`` after it."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext


def register(api: ExtensionAPI) -> None:
    turns = [0]

    def ready(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("status-demo", "Ready")

    def started(event: object, ctx: ExtensionContext) -> None:
        turns[0] += 1
        ctx.ui.set_status("status-demo", f"● Turn {turns[0]}...")

    def ended(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("status-demo", f"✓ Turn {turns[0]} complete")

    api.on("session_start", ready)
    api.on("turn_start", started)
    api.on("turn_end", ended)
