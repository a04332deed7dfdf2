"""``mulligan_rewind``: hide a span the model produced by mistake, leaving itself a note.

Guards, in order (the first refusal wins; every refusal mutes the drift nudge for the rest of the turn):
master switch, rewind switch, note, checkpoint name and existence, session depth, per-prompt retry budget,
context fraction. Then the span is resolved on a snapshot and pinned by entry id, the marker persisted, the
note sent, and a used checkpoint consumed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    CustomEntry,
    ExtensionContext,
    LabelEntry,
    MessageEntry,
    SessionEntry,
    ToolDefinition,
    ToolResult,
    UserMessage,
    entry_to_context_messages,
    estimate_tokens_utf16,
    js_number,
    js_round,
    text_result,
)
from caddie.extensions.bundled.mulligan.config import GRANULARITIES
from caddie.extensions.bundled.mulligan.file_restore import files_note, restore_span_files
from caddie.extensions.bundled.mulligan.ledger import FileLedger, extract_file_ledger
from caddie.extensions.bundled.mulligan.markers import (
    CHECKPOINT_LABEL_PREFIX,
    REWIND,
    cancelled_target_ids,
    leave_note,
    read_markers,
)
from caddie.extensions.bundled.mulligan.notes import NOTE_INVALID_REASON, render_note, validate_note
from caddie.extensions.bundled.mulligan.prepare_args import prepare_object_args
from caddie.extensions.bundled.mulligan.snapshot import context_snapshot
from caddie.extensions.bundled.mulligan.state import Mulligan, SessionRuntime
from caddie.extensions.bundled.mulligan.tools import refusal
from caddie.extensions.bundled.mulligan.tools.schemas import REWIND_PARAMETERS
from caddie.extensions.bundled.mulligan.transforms import (
    partition_into_units,
    resolve_checkpoint,
    resolve_last_tool_call_group,
    resolve_last_turn,
)

REWIND_DESCRIPTION = (
    "Shed recent context you produced by mistake (a bloated tool result, or a whole wrong-direction turn) and "
    "leave yourself a note so you can try again with a clean view. The content is hidden from your context going "
    "forward (it stays on disk for the human). Costs only a short note. Use granularity 'last_tool_call_group' to "
    "undo just the last tool interaction, or 'last_turn' to redo the whole turn from the user's last message."
)
MUTATION_WARNING = (
    "⚠ The hidden span modified files/ran side-effecting commands (see note). "
    "Those effects PERSIST on disk; do not blindly redo them."
)


FILES_RESTORED = (
    "The workspace's files the hidden span changed were restored (see note); what its commands did beyond "
    "them persists."
)


def make_rewind_tool(m: Mulligan) -> ToolDefinition:
    async def execute(
        tool_call_id: str,
        params: Any,
        signal: AbortSignal,
        on_update: Callable[[ToolResult], None],
        ctx: ExtensionContext,
    ) -> ToolResult:
        return await run_rewind(m, tool_call_id, params, ctx)

    return ToolDefinition(
        name="mulligan_rewind",
        label="Mulligan Rewind",
        description=REWIND_DESCRIPTION,
        parameters=REWIND_PARAMETERS,
        execute=execute,
        prepare_arguments=prepare_object_args(["note"]),
    )


async def run_rewind(m: Mulligan, tool_call_id: str, params: Any, ctx: ExtensionContext) -> ToolResult:
    args: Mapping[str, Any] = params if isinstance(params, Mapping) else {}
    requested = args.get("granularity")
    granularity = requested if requested in GRANULARITIES else "last_tool_call_group"
    rt: SessionRuntime | None = None
    turn_index: Any = None
    try:
        rt = m.runtime(ctx)
        metric = read_markers(ctx.session.entries()).metric
        turn_index = metric.turn_index if metric is not None and metric.turn_index is not None else None
        if turn_index is None:
            turn_index = rt.last_turn_index
    except Exception:  # no turn index known: the rewind is recorded without one, as in pi-mulligan
        pass

    def refuse(reason: str, gran: str = granularity) -> ToolResult:
        if rt is not None and turn_index is not None:
            rt.rewind_refused_turn_index = turn_index
        return refusal(reason, {"granularity": gran})

    try:
        config = m.config
        if not config.enabled:
            return refuse("Mulligan is disabled")
        if not config.rewind.enabled:
            return refuse("rewind is disabled")
        note = args.get("note")
        if not validate_note(note):
            return refuse(NOTE_INVALID_REASON)
        assert isinstance(note, Mapping)
        name = args.get("checkpoint")
        if granularity == "checkpoint":
            if not isinstance(name, str) or not name:
                return refuse("checkpoint granularity requires a checkpoint name", "checkpoint")
            if not checkpoint_targets(ctx, name):
                return refuse(f"checkpoint '{name}' not found on this branch", "checkpoint")

        entries = _entries_or_empty(ctx)
        depth = count_active_rewinds(entries)
        if depth >= config.rewind.max_depth:
            return refuse(
                f"max rewind depth ({js_number(config.rewind.max_depth)}) reached — {depth} active rewind "
                "marker(s). Consider mulligan_shrink or just continuing; if stuck in a loop, the human should "
                "intervene"
            )
        retries = count_retries_at_latest_prompt(entries)
        if retries >= config.rewind.max_retries_per_prompt:
            return refuse(
                f"hit the per-prompt retry budget ({retries}/{config.rewind.max_retries_per_prompt} rewinds "
                "re-landing at this prompt). Commit to the current state, ask the human, or use mulligan_shrink "
                "instead of rewinding again"
            )
        total, window = filtered_total(m, ctx)
        if window > 0 and total / window >= config.rewind.abort_context_fraction:
            return refuse(
                f"context is at {js_round(total / window * 100)}% of the window; rewinding will not help. "
                "Run mulligan_audit and shrink the largest result"
            )

        try:
            ledger, k, hide_entry_ids = _preview(
                ctx, granularity, name if isinstance(name, str) else "", tool_call_id
            )
        except Exception:  # only the preview's counts: the rewind itself checks and reports again
            ledger, k, hide_entry_ids = FileLedger(), 0, []

        payload: dict[str, Any] = {
            "granularity": granularity,
            "options": {"protect": list(config.rewind.protected_roles)},
            "excludeToolCallId": tool_call_id,
            "note": note,
            "ledger": ledger.to_json(),
            "hideEntryIds": hide_entry_ids,
        }
        if name is not None:
            payload["checkpoint"] = name
        files = await restore_span_files(
            config.rewind.restore_files, ctx, granularity, hide_entry_ids, ledger
        )
        marker_id = m.writer(ctx).rewind(payload)
        rendered = render_note(note, ledger, granularity)
        if files is not None:
            rendered += "\n\n" + files_note(files)
        leave_note(m.api, rendered, marker_id or tool_call_id)
        if granularity == "checkpoint" and isinstance(name, str):
            _consume_checkpoint(m, ctx, name)

        if k == 0:
            text = (
                f"Mulligan: rewound {granularity}. 0 messages will be hidden from your view starting next turn "
                "(nothing matched to hide). Note left."
            )
        else:
            text = f"Mulligan: rewound {granularity}. {k} messages will be hidden from your view starting next turn. Note left."
        if files is not None and files.any_restored:
            text += " " + FILES_RESTORED
        elif config.rewind.require_mutation_warning and ledger.has_side_effects:
            text += " " + MUTATION_WARNING
        details = {
            "granularity": granularity,
            "k": k,
            "ledger": ledger.to_json(),
            "hideEntryIds": hide_entry_ids,
            "markerId": marker_id,
        }
        return text_result(text, details)
    except Exception as e:
        return refuse(f"unexpected error: {e}")


def _entries_or_empty(ctx: ExtensionContext) -> list[SessionEntry]:
    try:
        return ctx.session.entries()
    except Exception:  # tools answer the model rather than fail the turn (as the reference)
        return []


def count_active_rewinds(entries: Sequence[SessionEntry]) -> int:
    """Rewind markers in the whole session that no cancel retired (a marker without a readable id counts)."""
    cancelled = cancelled_target_ids(entries)
    return sum(1 for e in entries if _is_rewind(e) and _data_id(e) not in cancelled)


def count_retries_at_latest_prompt(entries: Sequence[SessionEntry]) -> int:
    """Non-cancelled rewinds after the latest user message (0 without one)."""
    latest = -1
    for i, e in enumerate(entries):
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage):
            latest = i
    if latest < 0:
        return 0
    after = entries[latest + 1 :]
    cancelled = cancelled_target_ids(after)
    return sum(1 for e in after if _is_rewind(e) and _data_id(e) not in cancelled)


def _is_rewind(entry: SessionEntry) -> bool:
    return isinstance(entry, CustomEntry) and entry.custom_type == REWIND


def _data_id(entry: SessionEntry) -> str | None:
    data = getattr(entry, "data", None)
    value = data.get("id") if isinstance(data, Mapping) else None
    return value if isinstance(value, str) else None


def checkpoint_targets(ctx: ExtensionContext, name: str) -> list[str]:
    """Entry ids whose current label is ``mulligan:checkpoint:<name>`` (the checkpoint is active on them)."""
    needle = CHECKPOINT_LABEL_PREFIX + name
    try:
        entries = ctx.session.entries()
    except Exception:  # no readable entries: the checkpoint is active on none
        return []
    candidates = dict.fromkeys(
        e.target_id for e in entries if isinstance(e, LabelEntry) and e.label == needle and e.target_id
    )
    active: list[str] = []
    for target in candidates:
        try:
            if ctx.session.get_label(target) == needle:
                active.append(target)
        except Exception:  # an entry whose label cannot be read does not count as carrying the checkpoint
            pass
    return active


def _consume_checkpoint(m: Mulligan, ctx: ExtensionContext, name: str) -> None:
    """Clear the checkpoint on every entry that carries it (a name re-used on two entries labels both)."""
    for target in checkpoint_targets(ctx, name):
        try:
            m.api.set_label(target, None)
        except Exception:  # one label that cannot be cleared must not stop clearing the others
            pass


def filtered_total(m: Mulligan, ctx: ExtensionContext) -> tuple[int, int]:
    """(tokens of the last filtered view — or of the unfiltered context before any —, context window or 0)."""
    try:
        rt = m.runtime(ctx)
        if rt.last_filtered is not None:
            total = estimate_tokens_utf16(rt.last_filtered)
        else:
            total = estimate_tokens_utf16(
                msg for entry in ctx.session.context_entries() for msg in entry_to_context_messages(entry)
            )
        usage = ctx.get_context_usage()
        return total, usage.context_window if usage is not None else 0
    except Exception:  # only the savings estimate: zero means "unknown" to the caller
        return 0, 0


def _preview(
    ctx: ExtensionContext, granularity: str, name: str, tool_call_id: str
) -> tuple[FileLedger, int, list[str]]:
    """Resolve the span on a snapshot: its ledger, its size, and the entry ids that pin it."""
    snap = context_snapshot(ctx)
    messages = snap.messages
    remove: Sequence[int]
    if granularity == "last_tool_call_group":
        remove = resolve_last_tool_call_group(partition_into_units(messages), messages, tool_call_id) or ()
    elif granularity == "last_turn":
        remove = resolve_last_turn(messages, tool_call_id)
    else:
        remove = resolve_checkpoint(messages, ctx.session.branch(), name, tool_call_id) or []
    return extract_file_ledger(messages, remove), len(remove), snap.entry_ids_of(remove)
