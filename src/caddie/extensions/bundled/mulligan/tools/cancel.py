"""``mulligan_cancel``: retract a rewind or shrink marker (forward-only; the marker stays on disk).

The marker is named by ``markerId`` (its entry id, which wins when given) or found through a ``target``: the
newest rewind or shrink covering the message the target matches. The cancel appends a ``mulligan:cancel``
naming the marker's uuid; from the next fire on the marker no longer applies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    CustomEntry,
    ExtensionContext,
    SessionEntry,
    ToolDefinition,
    ToolResult,
    is_finite_number,
    js_truthy,
    text_result,
)
from caddie.extensions.bundled.mulligan.markers import SHRINK, cancelled_target_ids, marker_uuid
from caddie.extensions.bundled.mulligan.prepare_args import prepare_object_args
from caddie.extensions.bundled.mulligan.snapshot import context_snapshot
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.tools import refusal
from caddie.extensions.bundled.mulligan.tools.schemas import CANCEL_PARAMETERS
from caddie.extensions.bundled.mulligan.transforms import resolve_shrink_target

CANCEL_DESCRIPTION = (
    "Retract (cancel) a mulligan_rewind or mulligan_shrink marker so it no longer applies going forward. Use when "
    "you issued a rewind or shrink against the wrong target and need to undo it — without it, the mistaken "
    "transform would apply on every turn for the rest of the session. Identify the marker by `target` "
    "(same hint shape as mulligan_shrink: by_tool_call_id, by_tool_name+occurrence, or by_content_includes) — "
    "the most recent marker affecting that content is retired; or pass an explicit `markerId` if you have one. "
    "The transform stops applying from the next turn on (cancelled markers stay on disk for the audit trail). "
    "Cancelling a non-existent or already-cancelled marker is a safe no-op."
)


def make_cancel_tool(m: Mulligan) -> ToolDefinition:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: Callable[[ToolResult], None],
        ctx: ExtensionContext,
    ) -> ToolResult:
        return run_cancel(m, params, ctx)

    return ToolDefinition(
        name="mulligan_cancel",
        label="Mulligan Cancel",
        description=CANCEL_DESCRIPTION,
        parameters=CANCEL_PARAMETERS,
        execute=execute,
        prepare_arguments=prepare_object_args(["target"]),
    )


def run_cancel(m: Mulligan, params: Any, ctx: ExtensionContext) -> ToolResult:
    try:
        args: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
        if not m.config.enabled:
            return refusal("Mulligan is disabled")
        try:
            entries: Sequence[SessionEntry] = ctx.session.entries()
        except Exception:  # an unreadable session means nothing to cancel; the tool says so
            entries = []

        marker_id = args.get("markerId")
        by_id = isinstance(marker_id, str) and bool(marker_id)
        uuid: str | None = None
        if by_id:
            uuid = next((u for e in entries if e.id == marker_id and (u := marker_uuid(e))), None)
        elif js_truthy(args.get("target")):
            uuid = covering_marker(ctx, entries, args["target"])
        if uuid is None:
            where = "with that id" if by_id else "for that target"
            return text_result(
                f"Mulligan: no active marker found {where} — nothing to cancel.", {"cancelled": False}
            )
        if uuid in cancelled_target_ids(entries):
            return text_result("Mulligan: that marker is already cancelled.", {"cancelled": False})
        new_id = m.writer(ctx).cancel(uuid)
        return text_result(
            "Mulligan: marker cancelled. The transform will no longer apply from the next turn on.",
            {"cancelled": True, "markerId": new_id},
        )
    except Exception as e:
        return refusal(f"unexpected error: {e}")


def covering_marker(ctx: ExtensionContext, entries: Sequence[SessionEntry], target: object) -> str | None:
    """The uuid of the highest-seq rewind or shrink covering the message ``target`` matches now.

    A shrink covers it when its own selector resolves to that message; a rewind when its pinned entry ids
    include that message's entry. Already-cancelled markers are candidates too (the caller reports them).
    """
    try:
        snap = context_snapshot(ctx)
        index = resolve_shrink_target(snap.messages, target)
        if index is None:
            return None
        entry_id = snap.entry_id_at(index)
        best: str | None = None
        best_seq = float("-inf")
        for entry in entries:
            uuid = marker_uuid(entry)
            if uuid is None:
                continue
            assert isinstance(entry, CustomEntry) and isinstance(entry.data, Mapping)
            data = entry.data
            if entry.custom_type == SHRINK:
                covers = resolve_shrink_target(snap.messages, data.get("target")) == index
            else:
                hidden = data.get("hideEntryIds")
                covers = entry_id is not None and isinstance(hidden, list) and entry_id in hidden
            if not covers:
                continue
            seq = data.get("seq")
            seq_value = float(seq) if is_finite_number(seq) else 0.0
            if seq_value > best_seq:
                best, best_seq = uuid, seq_value
        return best
    except Exception:  # unreadable markers: no rewind covers the entry, as pi-mulligan decides
        return None
