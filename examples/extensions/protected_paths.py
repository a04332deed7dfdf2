"""Refuse writes and edits to sensitive paths (Pi's protected-paths example): ``.env``, ``.git/`` and
``node_modules/``. The model gets the reason as the tool's error; a UI also shows a warning."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ToolCallEvent, ToolCallResult

PROTECTED = (".env", ".git/", "node_modules/")


def register(api: ExtensionAPI) -> None:
    def guard(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        if event.tool_name not in ("write", "edit"):
            return None
        path = str(event.input.get("path", ""))
        if not any(part in path for part in PROTECTED):
            return None
        if ctx.has_ui:
            ctx.ui.notify(f"Blocked write to protected path: {path}", "warning")
        return ToolCallResult(block=True, reason=f'Path "{path}" is protected')

    api.on("tool_call", guard)
