"""Status cards in the conversation that the model never sees (Pi's entry-renderer example):
``/status-card deploy is green`` adds a card to the chat; it stays in the session (and comes back when the
session is resumed), Ctrl+O shows when it was made, and no request to the model contains it.

Pi does this with a ``custom`` entry (``appendEntry``) and ``registerEntryRenderer``. caddie's interactive
transcript draws messages, not ``custom`` entries, and has no entry renderers, so this twin uses what caddie
draws — a custom message (``send_message(display=True)``) with a message renderer — and keeps it from the
model with a ``context`` handler, answering ``entry_visibility`` from the same rule so that exports and
``/context`` say it was never sent.

Load it with ``caddie -e examples/extensions/entry_renderer.py``.
"""

from __future__ import annotations

import time
from datetime import datetime

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from caddie.extensions.api import (
    CommandContext,
    ContextEvent,
    ContextResult,
    CustomMessage,
    EntryVisibility,
    EntryVisibilityEvent,
    ExtensionAPI,
    ExtensionContext,
    MessageRenderOptions,
)

CARD = "status-card"


def is_card(message: object) -> bool:
    return isinstance(message, CustomMessage) and message.custom_type == CARD


def register(api: ExtensionAPI) -> None:
    async def status_card(args: str, ctx: CommandContext) -> None:
        text = args.strip() or "Status card"
        api.send_message(CARD, text, display=True, details={"message": text, "timestamp": time.time()})

    def render(message: CustomMessage, options: MessageRenderOptions) -> object:
        details = message.details if isinstance(message.details, dict) else {}
        body: list[Text] = [Text.assemble(("[status] ", "bold cyan"), str(details.get("message", "No data")))]
        if options.expanded and isinstance(details.get("timestamp"), int | float):
            made = datetime.fromtimestamp(details["timestamp"]).strftime("%Y-%m-%d %H:%M:%S")
            body.append(Text(made, style="dim"))
        return Panel(Group(*body), expand=False)

    async def keep_from_model(event: ContextEvent, ctx: ExtensionContext) -> ContextResult | None:
        if not any(is_card(m) for m in event.messages):
            return None
        return ContextResult([m for m in event.messages if not is_card(m)])

    def visibility(event: EntryVisibilityEvent, ctx: ExtensionContext) -> None:
        for message, entry_id in zip(event.messages, event.entry_ids, strict=True):
            if is_card(message):
                event.mark(entry_id, EntryVisibility("hidden", "a status card, for you only"))

    api.register_command(CARD, status_card, "Render a durable status card that is not sent to the LLM")
    api.register_message_renderer(CARD, render)
    api.on("context", keep_from_model)
    api.on("entry_visibility", visibility)
