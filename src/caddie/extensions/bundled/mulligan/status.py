"""What mulligan saved, kept current: the footer status (``mulligan −48k tok · −$0.14``) and the
``mulligan_savings`` event (``--mode json``, RPC), refreshed after every turn from the session itself.

One ``SavingsTracker`` per session, so each turn only looks at the requests made since the last one. Requests
are priced with the current model's catalogue prices. Nothing is written to the session.
"""

from __future__ import annotations

from caddie.extensions.api import ExtensionAPI, ExtensionContext
from caddie.extensions.bundled.mulligan.savings import SavingsTracker, format_savings_status, savings_json
from caddie.extensions.bundled.mulligan.state import Mulligan

STATUS_KEY = "mulligan"
EVENT = "mulligan_savings"


class SavingsStatus:
    def __init__(self, m: Mulligan, api: ExtensionAPI) -> None:
        self._m = m
        self._api = api
        self._tracker: SavingsTracker | None = None
        self._key: tuple[str, str | None] | None = None
        self._last: tuple[int, float, bool] | None = None

    def reset(self) -> None:
        self._tracker = None
        self._key = None
        self._last = None

    def refresh(self, ctx: ExtensionContext) -> None:
        """Recompute (incrementally) and show; never raises."""
        try:
            self._refresh(ctx)
        except Exception:  # the footer figure is cosmetic; a turn must never fail because of it
            pass

    def _refresh(self, ctx: ExtensionContext) -> None:
        model = ctx.model
        key = (ctx.session.session_id, model.ref if model is not None else None)
        if self._tracker is None or key != self._key:
            self._tracker = SavingsTracker(model=model, config=self._m.config)
            self._key = key
        self._tracker.advance(ctx.session.entries(), ctx.session.branch())
        tokens, cost, priced = self._tracker.totals()  # the full figures are built only when they changed
        current = (tokens, round(cost, 6), priced)
        if current == self._last:
            return
        self._last = current
        if tokens <= 0:
            if ctx.has_ui:
                ctx.ui.set_status(STATUS_KEY, None)
            return
        if ctx.has_ui:
            ctx.ui.set_status(STATUS_KEY, format_savings_status(tokens, cost if priced else None))
        self._api.publish(EVENT, savings_json(self._tracker.savings()))
