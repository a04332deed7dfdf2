"""The four agent tools: ``mulligan_rewind``, ``mulligan_shrink``, ``mulligan_cancel``, ``mulligan_audit``."""

from __future__ import annotations

from caddie.extensions.api import ToolResult, text_result


def refusal(reason: str, details: dict[str, object] | None = None) -> ToolResult:
    """``Mulligan: refused — <reason>.``; every result carries ``details`` (here ``{}`` unless given)."""
    return text_result(f"Mulligan: refused — {reason}.", {} if details is None else details)
