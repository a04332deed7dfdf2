"""How your messages look in the terminal UI (Pi's message-renderer example): ``/status [warn|error]
<text>`` posts a ``status-update`` message drawn as a coloured ``[LEVEL] text`` line, with its time when
tool output is expanded (Ctrl+O). The model and the session file get the plain message."""

from __future__ import annotations

import time
from datetime import datetime

from rich.text import Text

from caddie.extensions.api import CommandContext, CustomMessage, ExtensionAPI, MessageRenderOptions, text_of

COLOURS = {"error": "red", "warn": "yellow", "info": "green"}


def render(message: CustomMessage, options: MessageRenderOptions) -> Text:
    details = message.details if isinstance(message.details, dict) else {}
    level = str(details.get("level", "info"))
    line = Text(f"[{level.upper()}]", style=COLOURS.get(level, "green"))
    line.append(f" {text_of(message.content)}")
    stamp = details.get("timestamp")
    if options.expanded and isinstance(stamp, int | float):
        line.append(f"\n  at {datetime.fromtimestamp(stamp / 1000).strftime('%X')}", style="dim")
    return line


def register(api: ExtensionAPI) -> None:
    def status(args: str, ctx: CommandContext) -> None:
        words = args.strip().split()
        level, content = "info", args.strip()
        if words and words[0] in ("warn", "error"):
            level, content = words[0], " ".join(words[1:]) or "Status update"
        api.send_message(
            "status-update", content, details={"level": level, "timestamp": int(time.time() * 1000)}
        )

    api.register_message_renderer("status-update", render)
    api.register_command("status", status, "Send a status message (usage: /status [warn|error] message)")
