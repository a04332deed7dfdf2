"""``mulligan_audit``: a token breakdown of what the model carries, the biggest messages, the active markers.

Read-only. The view is the last filtered context (exactly what the model saw); before the first inference it
is rebuilt by running the pipeline over the session's context (confidence ``low``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    AgentMessage,
    ExtensionContext,
    ToolDefinition,
    ToolResult,
    is_js_number,
    text_result,
)
from caddie.extensions.bundled.mulligan.audit import DEFAULT_TOP, build_audit, list_checkpoints
from caddie.extensions.bundled.mulligan.markers import MarkerBundle, read_markers
from caddie.extensions.bundled.mulligan.snapshot import context_snapshot
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.tools import refusal
from caddie.extensions.bundled.mulligan.tools.schemas import AUDIT_PARAMETERS
from caddie.extensions.bundled.mulligan.transforms import filter_pipeline

AUDIT_DESCRIPTION = (
    "Show a token breakdown of the context you're currently carrying (what the model actually sees), flag the "
    "biggest contributors, and list active Mulligan markers. Use this to decide whether to rewind or shrink."
)


def zeroed_details(**extra: Any) -> dict[str, Any]:
    return {
        "totalTokens": 0,
        "confidence": "low",
        "source": "fallback",
        "nRewinds": 0,
        "nShrinks": 0,
        "nCheckpoints": 0,
        "nCancelled": 0,
        "top": [],
        **extra,
    }


def make_audit_tool(m: Mulligan) -> ToolDefinition:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: Callable[[ToolResult], None],
        ctx: ExtensionContext,
    ) -> ToolResult:
        return run_audit(m, params, ctx)

    return ToolDefinition(
        name="mulligan_audit",
        label="Mulligan Audit",
        description=AUDIT_DESCRIPTION,
        parameters=AUDIT_PARAMETERS,
        execute=execute,
    )


def safe_markers(ctx: ExtensionContext) -> MarkerBundle:
    try:
        return read_markers(ctx.session.entries())
    except Exception:  # the audit reports what it can read: no markers rather than no audit
        return MarkerBundle()


def audit_view(m: Mulligan, ctx: ExtensionContext) -> tuple[list[AgentMessage], str, str]:
    """(view, source, confidence): the cached filtered view, else the pipeline over the current context."""
    rt = m.runtime(ctx)
    if rt.last_filtered is not None:
        return rt.last_filtered, "cached", m.config.audit.estimate_confidence
    snap = context_snapshot(ctx)
    markers = safe_markers(ctx)
    view = filter_pipeline(
        snap.messages, markers.rewinds, markers.shrinks, m.config.rewind.protected_roles, ctx.session.branch()
    )
    return view, "fallback", "low"


def requested_top(params: object) -> int | None:
    """``top`` when it is a positive number (floored), else the default; None means "all" (infinite)."""
    top = params.get("top") if isinstance(params, Mapping) else None
    if not is_js_number(top) or not top > 0:
        return DEFAULT_TOP
    return None if math.isinf(top) else math.floor(top)


def run_audit(m: Mulligan, params: Any, ctx: ExtensionContext) -> ToolResult:
    try:
        if not m.config.enabled:
            return refusal("Mulligan is disabled", zeroed_details())
        view, source, confidence = audit_view(m, ctx)
        top = requested_top(params)
        markers = safe_markers(ctx)
        names = list_checkpoints(ctx.session.entries())
        audit = build_audit(view, markers, names, m.config, confidence, len(view) if top is None else top)
        details = {
            "totalTokens": audit.total_tokens,
            "confidence": confidence,
            "source": source,
            "nRewinds": len(markers.rewinds),
            "nShrinks": len(markers.shrinks),
            "nCheckpoints": len(names),
            "nCancelled": len(markers.cancelled_ids),
            "top": [r.to_json() for r in audit.rows],
        }
        return text_result(audit.report, details)
    except Exception as e:
        return text_result(f"Mulligan: audit failed — {e}", zeroed_details(error=str(e)))
