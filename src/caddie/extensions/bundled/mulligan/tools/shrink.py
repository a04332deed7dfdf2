"""``mulligan_shrink``: replace a past message's content with the model's own compact summary, going forward.

The target is resolved on a snapshot now and pinned by entry id when it matches (a target that matches
nothing is still recorded and resolved live every fire). The operator sees the replacement in a
notification; the model gets a terse result plus a re-orientation line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from caddie.extensions.api import (
    CHARS_PER_TOKEN,
    AbortSignal,
    ExtensionContext,
    ToolDefinition,
    ToolResult,
    estimate_message_tokens_utf16,
    text_result,
    utf16_len,
    utf16_prefix,
)
from caddie.extensions.bundled.mulligan.prepare_args import prepare_object_args
from caddie.extensions.bundled.mulligan.snapshot import context_snapshot
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.tools import refusal
from caddie.extensions.bundled.mulligan.tools.schemas import SHRINK_PARAMETERS
from caddie.extensions.bundled.mulligan.transforms import resolve_shrink_target

SHRINK_DESCRIPTION = (
    "Replace a specific past tool result with a compact summary you provide, in your view, going forward. "
    "Use when the call was fine but its output is too big to keep carrying. Unlike rewind, the call stays in "
    "context (just with your summary as its result)."
)
DISCRIMINATORS = ("by_tool_call_id", "by_tool_name", "by_content_includes")


def shrink_orientation_line(k: int, tokens_shed: int) -> str:
    return (
        f"Context updated: {k} result(s) summarized (~{tokens_shed} tokens shed). Continue exactly where you left "
        "off — no re-verification or re-reading is needed."
    )


def make_shrink_tool(m: Mulligan) -> ToolDefinition:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: Callable[[ToolResult], None],
        ctx: ExtensionContext,
    ) -> ToolResult:
        return run_shrink(m, params, ctx)

    return ToolDefinition(
        name="mulligan_shrink",
        label="Mulligan Shrink",
        description=SHRINK_DESCRIPTION,
        parameters=SHRINK_PARAMETERS,
        execute=execute,
        prepare_arguments=prepare_object_args(["target"]),
    )


def _non_blank(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def target_is_well_formed(target: object) -> bool:
    """The first discriminator key present (in precedence order) must hold non-blank text."""
    if not isinstance(target, Mapping):
        return False
    for key in DISCRIMINATORS:
        if key in target:
            return _non_blank(target[key])
    return False


def describe_target(target: object) -> str:
    if isinstance(target, Mapping):
        if "by_tool_call_id" in target:
            return f"tool call {target['by_tool_call_id']}"
        if "by_tool_name" in target:
            return f"{target['by_tool_name']} result"
        if "by_content_includes" in target:
            return f'message containing "{utf16_prefix(str(target["by_content_includes"]), 40)}"'
    return "message"


def cap_for_notify(text: str, limit: float) -> str:
    """The text, or its first ``limit`` characters followed by ``…(<N> chars total)``."""
    length = utf16_len(text)
    if length <= limit:
        return text
    return utf16_prefix(text, int(limit)) + f"…({length} chars total)"


def _match(ctx: ExtensionContext, target: object) -> tuple[str | None, int]:
    """(entry id of the message the target matches now, that message's token estimate); (None, 0) if none."""
    try:
        snap = context_snapshot(ctx)
        index = resolve_shrink_target(snap.messages, target)
        if index is None:
            return None, 0
        return snap.entry_id_at(index), estimate_message_tokens_utf16(snap.messages[index])
    except Exception:  # a target that cannot be resolved is reported to the model as not found
        return None, 0


def run_shrink(m: Mulligan, params: Any, ctx: ExtensionContext) -> ToolResult:
    try:
        args: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
        config = m.config
        if not config.enabled:
            return refusal("Mulligan is disabled")
        if not config.shrink.enabled:
            return refusal("shrink is disabled")
        replacement = args.get("replacement")
        if not _non_blank(replacement):
            return refusal("replacement must be non-empty")
        assert isinstance(replacement, str)
        target = args.get("target")
        if not target_is_well_formed(target):
            return refusal("target discriminator must be non-empty")

        entry_id, original_tokens = _match(ctx, target)
        payload: dict[str, Any] = {"target": target, "replacement": replacement}
        if args.get("reason") is not None:
            payload["reason"] = args["reason"]
        if entry_id:
            payload["pinnedEntryId"] = entry_id
        marker_id = m.writer(ctx).shrink(payload)

        try:
            if ctx.has_ui:
                capped = cap_for_notify(replacement, config.shrink.notify_max_chars)
                ctx.ui.notify(f"Shrunk {describe_target(target)} — replacement:\n<<<\n{capped}\n>>>", "info")
        except Exception:  # the notice is a courtesy; the shrink marker is written already
            pass

        matched = entry_id is not None
        text = f"Mulligan: shrink recorded. Matched: {'yes' if matched else 'no'}."
        if marker_id:
            shed = max(0, original_tokens - math.ceil(utf16_len(replacement) / CHARS_PER_TOKEN))
            text += "\n" + shrink_orientation_line(1, shed)
        return text_result(text, {"matched": matched, "markerId": marker_id})
    except Exception as e:
        return refusal(f"unexpected error: {e}")
