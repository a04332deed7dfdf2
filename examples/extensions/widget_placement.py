"""Widgets above and below the editor (Pi's widget-placement example)."""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext


def register(api: ExtensionAPI) -> None:
    def on_start(event: object, ctx: ExtensionContext) -> None:
        if not ctx.has_ui:
            return
        ctx.ui.set_widget("widget-above", ["Above editor widget"])
        ctx.ui.set_widget("widget-below", ["Below editor widget"], "belowEditor")

    api.on("session_start", on_start)
