"""Show the system prompt's size (Pi's system-prompt-header example): at the start of every run the
``system-prompt`` status says how many characters the model is sent as its system prompt."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext


def register(api: ExtensionAPI) -> None:
    def on_start(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("system-prompt", f"System: {len(ctx.get_system_prompt())} chars")

    def on_shutdown(event: object, ctx: ExtensionContext) -> None:
        ctx.ui.set_status("system-prompt", None)

    api.on("agent_start", on_start)
    api.on("session_shutdown", on_shutdown)
