"""Name the session (Pi's session-name example): ``/session-name <name>`` sets the name shown in the
session picker, ``/session-name`` alone shows it."""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI


def register(api: ExtensionAPI) -> None:
    def command(args: str, ctx: CommandContext) -> None:
        name = args.strip()
        if name:
            api.set_session_name(name)
            ctx.ui.notify(f"Session named: {name}", "info")
            return
        current = api.get_session_name()
        ctx.ui.notify(f"Session: {current}" if current else "No session name set", "info")

    api.register_command(
        "session-name", command, "Set or show session name (usage: /session-name [new name])"
    )
