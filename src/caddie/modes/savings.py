"""What the loaded extensions saved the bill on a branch: their answers to the ``savings`` event.

``/context``, ``caddie context --stats``, ``caddie session show --stats`` and the HTML export all ask here, so
they show the same figures as each other and as the extension's own footer status. The host knows no
extension's rules: an extension that keeps content off requests (mulligan, or a third party's) answers from
the session itself (docs/extensions.md#reporting-savings).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from caddie.ai.model import Model
from caddie.extensions.api import Savings, SavingsEvent
from caddie.extensions.runner import ExtensionRunner
from caddie.session.entries import SessionEntry


def model_finder(registry: Any, fallback: Model | None) -> Callable[[str, str], Model | None] | None:
    """``(provider, model id) → Model`` from the catalogue (``registry.find``), else the session's model."""
    if registry is None:
        if fallback is None:
            return None
        return lambda provider, model_id: fallback

    def find(provider: str, model_id: str) -> Model | None:
        found: Model | None = registry.find(provider, model_id)
        return found or fallback

    return find


async def ask_savings(
    runner: ExtensionRunner,
    branch: Sequence[SessionEntry],
    find_model: Callable[[str, str], Model | None] | None = None,
) -> list[Savings]:
    """Every loaded extension's answer for ``branch`` (none when no extension answers)."""
    if not runner.has_handlers("savings"):
        return []
    event = SavingsEvent(list(branch), find_model)
    await runner.emit("savings", event)
    return [r for r in event.reports if isinstance(r, Savings)]


def savings_line(savings: Savings) -> str:
    """``mulligan −48k tok · −$0.14  (net of …; gross …)`` for a plain-text view."""
    status = savings.status or f"{savings.source} {savings.tokens:,} tok"
    return f"{status}  ({savings.details})" if savings.details else status


def savings_json(savings: Savings) -> dict[str, Any]:
    return {
        "source": savings.source,
        "tokens": savings.tokens,
        "grossTokens": savings.gross_tokens,
        "cost": round(savings.cost, 6) if savings.cost is not None else None,
        "cached": savings.cached,
        "requests": savings.requests,
        "requestsTotal": savings.requests_total,
        "status": savings.status,
        "details": savings.details,
    }
