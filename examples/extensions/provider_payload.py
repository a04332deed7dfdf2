"""Log what is sent to the model and what comes back (Pi's provider-payload example): every request body
and every response's status and headers go to ``.caddie/provider-payload.log`` in the project. Handy when
you wonder what a ``context`` handler or a setting changed on the wire.

To change the request instead of only logging it, return a new payload from the ``before_provider_request``
handler (``return {**event.payload, "temperature": 0}``)."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.extensions.api import (
    AfterProviderResponseEvent,
    BeforeProviderRequestEvent,
    ExtensionAPI,
    ExtensionContext,
)


def _log(ctx: ExtensionContext, text: str) -> None:
    path = Path(ctx.cwd) / ".caddie" / "provider-payload.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as log:
        log.write(text + "\n\n")


def register(api: ExtensionAPI) -> None:
    def on_request(event: BeforeProviderRequestEvent, ctx: ExtensionContext) -> None:
        _log(ctx, json.dumps(event.payload, indent=2, default=str))

    def on_response(event: AfterProviderResponseEvent, ctx: ExtensionContext) -> None:
        _log(ctx, f"[{event.status}] {json.dumps(event.headers)}")

    api.on("before_provider_request", on_request)
    api.on("after_provider_response", on_response)
