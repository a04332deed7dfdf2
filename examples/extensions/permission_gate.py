"""Ask before dangerous shell commands (Pi's permission-gate example).

``rm -r``/``rm -rf``, ``sudo`` and ``chmod``/``chown … 777`` in a ``bash`` call need a "Yes" first; without a
UI to ask (print and json modes) they are blocked. Load with ``caddie -e examples/extensions/permission_gate.py``.
"""

from __future__ import annotations

import re

from caddie.extensions.api import ExtensionAPI, ExtensionContext, ToolCallEvent, ToolCallResult

DANGEROUS = (
    re.compile(r"\brm\s+(-rf?|--recursive)", re.IGNORECASE),
    re.compile(r"\bsudo\b", re.IGNORECASE),
    re.compile(r"\b(chmod|chown)\b.*777", re.IGNORECASE),
)


def is_dangerous(command: str) -> bool:
    return any(pattern.search(command) for pattern in DANGEROUS)


def register(api: ExtensionAPI) -> None:
    async def gate(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        if event.tool_name != "bash":
            return None
        command = str(event.input.get("command", ""))
        if not is_dangerous(command):
            return None
        if not ctx.has_ui:
            return ToolCallResult(block=True, reason="Dangerous command blocked (no UI for confirmation)")
        choice = await ctx.ui.select(f"⚠️ Dangerous command:\n\n  {command}\n\nAllow?", ["Yes", "No"])
        if choice != "Yes":
            return ToolCallResult(block=True, reason="Blocked by user")
        return None

    api.on("tool_call", gate)
