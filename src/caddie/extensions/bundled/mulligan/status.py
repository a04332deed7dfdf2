"""What mulligan saved, as people see it: the footer status (``mulligan −48k tok · −$0.14``) and the
``mulligan_savings`` event (``--mode json``, RPC), refreshed after every turn, and the answer to the host's
``savings`` event (``/context``, ``caddie session show --stats``, the export). All net: what the bill shows.

The footer keeps one ``SavingsTracker`` per session, so each turn only looks at the requests made since the
last one; it prices requests with the current model's catalogue prices. Nothing is written to the session.
"""

from __future__ import annotations

from caddie.extensions.api import (
    ExtensionAPI,
    ExtensionContext,
    Savings,
    SavingsEvent,
    ToolDefinition,
    utf16_len,
)
from caddie.extensions.bundled.mulligan.savings import (
    SavingsTotals,
    SavingsTracker,
    compute_savings,
    schema_tokens,
)
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.tool_gate import TOOL_NAMES

STATUS_KEY = "mulligan"
EVENT = "mulligan_savings"


def base_tokens(api: ExtensionAPI, ctx: ExtensionContext) -> int:
    """The system prompt and the other active tools: what every request carries besides the messages."""
    try:
        active = set(api.get_active_tools())
        others = [t for t in api.get_all_tools() if t.name in active and t.name not in TOOL_NAMES]
        return -(-utf16_len(ctx.get_system_prompt()) // 4) + schema_tokens(others)
    except Exception:  # a host that cannot say: the figure leaves them out (they cancel out but once)
        return 0


class SavingsStatus:
    def __init__(self, m: Mulligan, api: ExtensionAPI, tools: list[ToolDefinition]) -> None:
        self._m = m
        self._api = api
        self.schema = schema_tokens(tools)
        """Tokens of mulligan's four tool schemas on a request that carries them."""
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
        except Exception as e:  # the footer figure must never fail a turn: logged (mulligan's debug log)
            self._m.log.error("savings.status", "", {"error": str(e)})

    def _refresh(self, ctx: ExtensionContext) -> None:
        model = ctx.model
        key = (ctx.session.session_id, model.ref if model is not None else None)
        if self._tracker is None or key != self._key:
            self._tracker = SavingsTracker(model=model, config=self._m.config, schema=self.schema)
            self._key = key
        self._tracker.base = base_tokens(self._api, ctx)  # as the views will count it if asked now
        self._tracker.advance(ctx.session.entries(), ctx.session.branch())
        totals = self._tracker.summary()
        current = (totals.tokens, round(totals.cost, 6), totals.priced)
        if current == self._last:
            return
        self._last = current
        if totals.gross_tokens <= 0:  # nothing kept off yet: no figure to show (its costs still count)
            if ctx.has_ui:
                ctx.ui.set_status(STATUS_KEY, None)
            return
        if ctx.has_ui:
            ctx.ui.set_status(STATUS_KEY, status_text(totals))
        self._api.publish(EVENT, savings_json(totals))

    def answer(self, event: SavingsEvent, ctx: ExtensionContext) -> None:
        """The ``savings`` event: the figures of the asked branch, priced from the catalogue."""
        m = self._m
        if not m.config.enabled:
            return
        model = event.find_model or ctx.model
        savings = compute_savings(
            ctx.session.entries(),
            event.branch,
            model=model,
            config=m.config,
            schema=self.schema,
            base=base_tokens(self._api, ctx),
        )
        totals = savings.totals()
        event.report(
            Savings(
                source="mulligan",
                tokens=totals.tokens,
                gross_tokens=totals.gross_tokens,
                cost=totals.cost if totals.priced else None,
                cached=totals.cached,
                requests=totals.lighter,
                requests_total=totals.requests_total,
                status=status_text(totals),
                details=savings_details(totals),
                series=savings.series,
            )
        )


def format_tokens(n: int) -> str:
    """950, 1.2k, 48k, 1.5M (of the absolute value)."""
    n = abs(n)
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{round(n / 1000)}k"
    return f"{n / 1_000_000:.1f}M"


def _signed(amount: float) -> str:
    """A saving shows as a minus (off the bill), a cost as a plus (onto it)."""
    return "\u2212" if amount >= 0 else "+"


def format_savings_status(tokens: int, cost: float | None) -> str:
    """``mulligan −48k tok · −$0.14`` (net; ``+`` when mulligan cost more than it saved; the cost part only
    when the model has prices)."""
    text = f"mulligan {_signed(tokens)}{format_tokens(tokens)} tok"
    if cost is not None:
        amount = abs(cost)
        shown = f"${amount:.2f}" if amount >= 0.01 or amount == 0 else f"${amount:.3f}"
        text += f" · {_signed(cost)}{shown}"
    return text


def status_text(totals: SavingsTotals) -> str:
    return format_savings_status(totals.tokens, totals.cost if totals.priced else None)


def savings_details(totals: SavingsTotals) -> str:
    """One line: the gross beside the net, and what the net counts."""
    cached = "; prompt cache priced as the provider reported it" if totals.cached else ""
    return (
        f"net of its tool schemas, notes, calls and nudges; gross {totals.gross_tokens:,} tokens kept off "
        f"{totals.lighter} of {totals.requests_total} requests{cached}"
    )


def savings_json(totals: SavingsTotals) -> dict[str, object]:
    """The figures as the ``mulligan_savings`` event carries them (``--mode json``, RPC)."""
    return {
        "tokens": totals.tokens,
        "grossTokens": totals.gross_tokens,
        "overheadTokens": totals.overhead_tokens,
        "cost": round(totals.cost, 6) if totals.priced else None,
        "cached": totals.cached,
        "requests": totals.lighter,
        "requestsTotal": totals.requests_total,
        "status": status_text(totals),
    }
