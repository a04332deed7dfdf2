"""Send messages as the user would (Pi's send-user-message example): ``/ask <text>`` when idle,
``/steer <text>`` interrupts the running turn, ``/followup <text>`` waits for it, ``/askwith <text>`` sends
structured content (two text blocks)."""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI, TextContent


def register(api: ExtensionAPI) -> None:
    def ask(args: str, ctx: CommandContext) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /ask <message>", "warning")
        elif not ctx.is_idle():
            ctx.ui.notify("Agent is busy. Use /steer or /followup instead.", "warning")
        else:
            api.send_user_message(args)

    def steer(args: str, ctx: CommandContext) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /steer <message>", "warning")
        else:
            api.send_user_message(args, None if ctx.is_idle() else "steer")

    def followup(args: str, ctx: CommandContext) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /followup <message>", "warning")
        elif ctx.is_idle():
            api.send_user_message(args)
        else:
            api.send_user_message(args, "follow_up")
            ctx.ui.notify("Follow-up queued", "info")

    def askwith(args: str, ctx: CommandContext) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /askwith <message>", "warning")
        elif not ctx.is_idle():
            ctx.ui.notify("Agent is busy", "warning")
        else:
            api.send_user_message(
                [TextContent(f"User request: {args}"), TextContent("Please respond concisely.")]
            )

    api.register_command("ask", ask, "Send a user message to the agent")
    api.register_command("steer", steer, "Send a steering message (interrupts current processing)")
    api.register_command("followup", followup, "Queue a follow-up message (waits for current processing)")
    api.register_command("askwith", askwith, "Send a user message with structured content")
