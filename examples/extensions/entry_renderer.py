"""Status cards in the conversation that the model never sees (Pi's entry-renderer example):
``/status-card deploy is green`` adds a card to the chat; it stays in the session (and comes back when the
session is resumed), Ctrl+O shows when it was made, and no request to the model contains it.

The card is a ``custom`` entry (``api.append_entry``), which is extension data, never context; the
extension's entry renderer (``api.register_entry_renderer``) draws it in the interactive transcript with the
theme's colours. In print, json and RPC modes the entry is stored all the same and nothing is drawn.

Load it with ``caddie -e examples/extensions/entry_renderer.py``.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from caddie.extensions.api import CommandContext, CustomEntry, EntryRenderOptions, ExtensionAPI, ThemeView

CARD = "status-card"


def render_card(entry: CustomEntry, options: EntryRenderOptions, theme: ThemeView) -> object:
    """The card: ``[status] message`` in a box of the theme's custom-message background; expanded, the time
    it was made too."""
    data: dict[str, Any] = entry.data if isinstance(entry.data, dict) else {}
    message = str(data.get("message", "No data"))
    timestamp = data.get("timestamp")
    milliseconds = timestamp if isinstance(timestamp, int | float) else time.time() * 1000
    lines = [Text.from_ansi(f"{theme.fg('accent', '[status]')} {message}")]
    if options.expanded:
        made = datetime.fromtimestamp(milliseconds / 1000).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(Text.from_ansi(theme.fg("dim", made)))
    background = theme.colors.get("customMessageBg")
    return Padding(Group(*lines), (1, 1), style=f"on {background}" if background else "", expand=True)


def register(api: ExtensionAPI) -> None:
    async def status_card(args: str, ctx: CommandContext) -> None:
        # Milliseconds since the epoch, as Pi's example stores it: the session file reads the same in both.
        api.append_entry(
            CARD, {"message": args.strip() or "Status card", "timestamp": int(time.time() * 1000)}
        )

    api.register_entry_renderer(CARD, render_card)
    api.register_command(CARD, status_card, "Render a durable status card that is not sent to the LLM")
