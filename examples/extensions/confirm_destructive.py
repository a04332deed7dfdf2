"""Confirm before leaving the current session (Pi's confirm-destructive example): ``/new`` asks before
starting over, ``/resume`` asks when this session has messages, ``/fork`` asks which way to go. Without a
UI nothing is asked and nothing is stopped."""

from __future__ import annotations

from caddie.extensions.api import (
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    SessionBeforeForkEvent,
    SessionBeforeForkResult,
    SessionBeforeSwitchEvent,
    SessionBeforeSwitchResult,
)


def register(api: ExtensionAPI) -> None:
    async def before_switch(
        event: SessionBeforeSwitchEvent, ctx: ExtensionContext
    ) -> SessionBeforeSwitchResult | None:
        if not ctx.has_ui:
            return None
        if event.reason == "new":
            if not await ctx.ui.confirm(
                "Clear session?", "This will delete all messages in the current session."
            ):
                ctx.ui.notify("Clear cancelled", "info")
                return SessionBeforeSwitchResult(cancel=True)
            return None
        has_messages = any(
            isinstance(e, MessageEntry) and e.message.role == "user" for e in ctx.session.entries()
        )
        if has_messages and not await ctx.ui.confirm(
            "Switch session?", "You have messages in the current session. Switch anyway?"
        ):
            ctx.ui.notify("Switch cancelled", "info")
            return SessionBeforeSwitchResult(cancel=True)
        return None

    async def before_fork(
        event: SessionBeforeForkEvent, ctx: ExtensionContext
    ) -> SessionBeforeForkResult | None:
        if not ctx.has_ui:
            return None
        choice = await ctx.ui.select(
            f"Fork from entry {event.entry_id[:8]}?", ["Yes, create fork", "No, stay in current session"]
        )
        if choice != "Yes, create fork":
            ctx.ui.notify("Fork cancelled", "info")
            return SessionBeforeForkResult(cancel=True)
        return None

    api.on("session_before_switch", before_switch)
    api.on("session_before_fork", before_fork)
