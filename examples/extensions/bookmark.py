"""Bookmarks in the session tree (Pi's bookmark example): ``/bookmark [label]`` labels the last assistant
message (labels show in ``/tree``), ``/unbookmark`` removes the most recent label."""

from __future__ import annotations

import time

from caddie.extensions.api import CommandContext, ExtensionAPI, MessageEntry


def register(api: ExtensionAPI) -> None:
    def bookmark(args: str, ctx: CommandContext) -> None:
        label = args.strip() or f"bookmark-{int(time.time() * 1000)}"
        for entry in reversed(ctx.session.entries()):
            if isinstance(entry, MessageEntry) and entry.message.role == "assistant":
                api.set_label(entry.id, label)
                ctx.ui.notify(f"Bookmarked as: {label}", "info")
                return
        ctx.ui.notify("No assistant message to bookmark", "warning")

    def unbookmark(args: str, ctx: CommandContext) -> None:
        for entry in reversed(ctx.session.entries()):
            label = ctx.session.get_label(entry.id)
            if label:
                api.set_label(entry.id, None)
                ctx.ui.notify(f"Removed bookmark: {label}", "info")
                return
        ctx.ui.notify("No bookmarked entry found", "warning")

    api.register_command("bookmark", bookmark, "Bookmark last message (usage: /bookmark [label])")
    api.register_command("unbookmark", unbookmark, "Remove bookmark from last labeled entry")
