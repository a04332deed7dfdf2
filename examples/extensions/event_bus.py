"""Extensions talking to each other (Pi's event-bus example): ``api.events`` is shared by every extension
of the session. This one announces ``my:notification`` at start-up and on ``/emit <message>``, and shows
every such notification, from whichever extension, as a notice."""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import CommandContext, ExtensionAPI, ExtensionContext


def register(api: ExtensionAPI) -> None:
    current: list[ExtensionContext] = []

    def on_start(event: object, ctx: ExtensionContext) -> None:
        current[:] = [ctx]
        api.events.emit("my:notification", {"message": "Session started", "from": "event-bus-example"})

    def on_notification(data: Any) -> None:
        if current and isinstance(data, dict):
            current[0].ui.notify(f"Event from {data.get('from')}: {data.get('message')}", "info")

    def emit(args: str, ctx: CommandContext) -> None:
        api.events.emit("my:notification", {"message": args.strip() or "hello", "from": "/emit command"})

    api.on("session_start", on_start)
    api.events.on("my:notification", on_notification)
    api.register_command("emit", emit, "Emit my:notification event (usage: /emit message)")
