"""What a collapsed thinking block says (Pi's hidden-thinking-label example): "Pondering..." from the
session's start; ``/thinking-label <text>`` sets another label, ``/thinking-label`` alone goes back to
"Pondering...".

``ui.set_hidden_thinking_label(label)`` changes the label of every thinking block shown collapsed (Ctrl+T
hides or shows thinking); ``None`` restores caddie's "Thinking".

Load it with ``caddie -e examples/extensions/hidden_thinking_label.py``.
"""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI, ExtensionContext

DEFAULT_LABEL = "Pondering..."


def register(api: ExtensionAPI) -> None:
    label = [DEFAULT_LABEL]

    async def on_start(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_hidden_thinking_label(label[0])

    async def thinking_label(args: str, ctx: CommandContext) -> None:
        label[0] = args.strip() or DEFAULT_LABEL
        ctx.ui.set_hidden_thinking_label(label[0])
        verb = "set to" if args.strip() else "reset to"
        ctx.ui.notify(f"Hidden thinking label {verb}: {label[0]}")

    api.on("session_start", on_start)
    api.register_command(
        "thinking-label", thinking_label, "Set the hidden thinking label. Use without args to reset."
    )
