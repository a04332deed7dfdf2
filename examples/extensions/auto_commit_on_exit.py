"""Commit the work when caddie exits (Pi's auto-commit-on-exit example): on quit, if the git repository has
changes, everything is committed with the first line of the last answer as the message
(``[caddie] <line>``)."""

from __future__ import annotations

from caddie.extensions.api import (
    AssistantMessage,
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    SessionShutdownEvent,
)


def commit_message(last_answer: str) -> str:
    first = last_answer.split("\n")[0] or "Work in progress"
    return f"[caddie] {first[:50]}{'...' if len(first) > 50 else ''}"


def register(api: ExtensionAPI) -> None:
    async def on_shutdown(event: SessionShutdownEvent, ctx: ExtensionContext) -> None:
        if event.reason != "quit":
            return
        status = await api.exec("git", ["status", "--porcelain"], cwd=ctx.cwd)
        if status.code != 0 or not status.stdout.strip():
            return
        last = ""
        for entry in reversed(ctx.session.entries()):
            if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                last = entry.message.text()
                break
        message = commit_message(last)
        await api.exec("git", ["add", "-A"], cwd=ctx.cwd)
        committed = await api.exec("git", ["commit", "-m", message], cwd=ctx.cwd)
        if committed.code == 0 and ctx.has_ui:
            ctx.ui.notify(f"Auto-committed: {message}", "info")

    api.on("session_shutdown", on_shutdown)
