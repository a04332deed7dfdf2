"""Show the model in the status bar (Pi's model-status example): every model change (``/model``, Ctrl+P,
``set_model``) updates the ``model`` status and, unless it is a resumed session's model, says so."""

from __future__ import annotations

import logging

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ModelSelectEvent

log = logging.getLogger(__name__)


def register(api: ExtensionAPI) -> None:
    def on_model(event: ModelSelectEvent, ctx: ExtensionContext) -> None:
        chosen = f"{event.model.provider}/{event.model.id}"
        before = (
            f"{event.previous_model.provider}/{event.previous_model.id}" if event.previous_model else "none"
        )
        if event.source != "restore":
            ctx.ui.notify(f"Model: {chosen}", "info")
        ctx.ui.set_status("model", f"🤖 {event.model.id}")
        log.info("[model_select] %s → %s (%s)", before, chosen, event.source)

    api.on("model_select", on_model)
