"""Every dialog and display call an RPC client answers or draws (Pi's rpc-demo example), for trying a client:
a title, a widget and a turn counter in the status; ``select`` before a dangerous ``bash`` command,
``confirm`` before ``/new`` clears the session, and ``/rpc-input``, ``/rpc-editor`` and ``/rpc-prefill`` for
``input``, ``editor`` and ``set_editor_text``; a notice after each. Run it with ``caddie --mode rpc -e
examples/extensions/rpc_demo.py`` (docs/rpc.md describes the ``extension_ui_request`` lines); in the
terminal UI the same calls open caddie's own dialogs."""

from __future__ import annotations

import re

from caddie.extensions.api import (
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    SessionBeforeSwitchEvent,
    SessionBeforeSwitchResult,
    SessionStartEvent,
    ToolCallEvent,
    ToolCallResult,
)

DANGEROUS = re.compile(r"\brm\s+(-rf?|--recursive)|\bsudo\b", re.IGNORECASE)


def register(api: ExtensionAPI) -> None:
    turns = 0

    def started(event: SessionStartEvent, ctx: ExtensionContext) -> None:
        ctx.ui.set_title("caddie RPC Demo (new session)" if event.reason == "new" else "caddie RPC Demo")
        ctx.ui.set_widget("rpc-demo", ["--- RPC Extension UI Demo ---", "Loaded and ready."])
        ctx.ui.set_status("rpc-demo", f"Turns: {turns}")

    def turn_started(_event: object, ctx: ExtensionContext) -> None:
        nonlocal turns
        turns += 1
        ctx.ui.set_status("rpc-demo", f"Turn {turns} running...")

    def turn_ended(_event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("rpc-demo", f"Turn {turns} done")

    async def guard(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        command = str(event.input.get("command", "")) if event.tool_name == "bash" else ""
        if not DANGEROUS.search(command):
            return None
        if not ctx.has_ui:
            return ToolCallResult(block=True, reason="Dangerous command blocked (no UI)")
        if await ctx.ui.select(f"Dangerous command: {command}", ["Allow", "Block"]) != "Allow":
            ctx.ui.notify("Command blocked by user", "warning")
            return ToolCallResult(block=True, reason="Blocked by user")
        ctx.ui.notify("Command allowed", "info")
        return None

    async def before_switch(
        event: SessionBeforeSwitchEvent, ctx: ExtensionContext
    ) -> SessionBeforeSwitchResult | None:
        if event.reason != "new" or not ctx.has_ui:
            return None
        if not await ctx.ui.confirm("Clear session?", "All messages will be lost."):
            ctx.ui.notify("Clear cancelled", "info")
            return SessionBeforeSwitchResult(cancel=True)
        return None

    async def ask_input(args: str, ctx: CommandContext) -> None:
        value = await ctx.ui.input("Enter a value", "type something...")
        ctx.ui.notify(f"You entered: {value}" if value else "Input cancelled", "info")

    async def ask_editor(args: str, ctx: CommandContext) -> None:
        text = await ctx.ui.editor("Edit some text", "Line 1\nLine 2\nLine 3")
        ctx.ui.notify(
            f"Editor submitted ({len(text.split(chr(10)))} lines)" if text else "Editor cancelled", "info"
        )

    def prefill(args: str, ctx: CommandContext) -> None:
        ctx.ui.set_editor_text("This text was set by the rpc-demo extension.")
        ctx.ui.notify("Editor prefilled", "info")

    api.on("session_start", started)
    api.on("turn_start", turn_started)
    api.on("turn_end", turn_ended)
    api.on("tool_call", guard)
    api.on("session_before_switch", before_switch)
    api.register_command("rpc-input", ask_input, "Prompt for text input (demonstrates ctx.ui.input in RPC)")
    api.register_command(
        "rpc-editor", ask_editor, "Open multi-line editor (demonstrates ctx.ui.editor in RPC)"
    )
    api.register_command(
        "rpc-prefill", prefill, "Prefill the input editor (demonstrates ctx.ui.set_editor_text in RPC)"
    )
