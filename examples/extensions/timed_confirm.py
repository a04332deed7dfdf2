"""Dialogs that answer themselves (Pi's timed-confirm example): ``/timed`` asks for a confirmation that
counts as "no" after 5 seconds, ``/timed-select`` offers three options for 10 seconds. (Pi's third variant
closes a dialog from an ``AbortSignal``; caddie's dialogs take a timeout only.)"""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI


def register(api: ExtensionAPI) -> None:
    async def timed(args: str, ctx: CommandContext) -> None:
        confirmed = await ctx.ui.confirm(
            "Timed Confirmation", "This dialog will auto-cancel in 5 seconds. Confirm?", timeout=5
        )
        ctx.ui.notify("Confirmed by user!" if confirmed else "Cancelled or timed out", "info")

    async def timed_select(args: str, ctx: CommandContext) -> None:
        choice = await ctx.ui.select("Pick an option", ["Option A", "Option B", "Option C"], timeout=10)
        ctx.ui.notify(f"Selected: {choice}" if choice else "Selection cancelled or timed out", "info")

    api.register_command("timed", timed, "Show a timed confirmation dialog (auto-cancels in 5s)")
    api.register_command("timed-select", timed_select, "Show a timed select dialog (auto-cancels in 10s)")
