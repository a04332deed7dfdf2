"""The tools' parameter schemas (JSON Schema, as TypeBox emits them for the TypeScript original)."""

from __future__ import annotations

from typing import Any


def _string(description: str | None = None) -> dict[str, Any]:
    return {"type": "string", "description": description} if description else {"type": "string"}


def _literals(*values: str, description: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"anyOf": [{"const": v, "type": "string"} for v in values]}
    if description:
        schema["description"] = description
    return schema


def _object(
    properties: dict[str, Any], required: list[str], description: str | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if description:
        schema["description"] = description
    return schema


REWIND_PARAMETERS = _object(
    {
        "note": _object(
            {
                "what_happened": _string(
                    "Past tense: what went wrong and wasted context — and what to avoid doing again. "
                    "Be concrete; generalize the lesson."
                ),
                "true_current_state": _string(
                    "The TRUE current state as of this rewind — task progress, decisions, and conclusions "
                    "(files/commands are auto-captured in the ledger below). This prevents redoing work."
                ),
                "next": _string("Imperative: the immediate next action to take when you resume."),
            },
            ["what_happened", "true_current_state", "next"],
            "The note your resumed self will read. All three fields required.",
        ),
        "granularity": _literals(
            "last_tool_call_group",
            "last_turn",
            "checkpoint",
            description=(
                "last_tool_call_group = hide just the most recent tool interaction (the assistant turn that "
                "issued tool calls + their results). Surgical. last_turn = hide all your work after the most "
                "recent user message, landing back at that prompt to re-attempt the turn. checkpoint = hide back "
                "to a named checkpoint you set earlier (requires `checkpoint`)."
            ),
        ),
        "checkpoint": _string(
            "Required when granularity=checkpoint. The name of a checkpoint set via mulligan_checkpoint."
        ),
    },
    ["note", "granularity"],
)


def _target_union(call_id: str, content: str, description: str) -> dict[str, Any]:
    return {
        "anyOf": [
            _object({"by_tool_call_id": _string(call_id)}, ["by_tool_call_id"]),
            _object(
                {"by_tool_name": _string("e.g. 'read', 'bash'"), "occurrence": _literals("last", "first")},
                ["by_tool_name", "occurrence"],
            ),
            _object({"by_content_includes": _string(content)}, ["by_content_includes"]),
        ],
        "description": description,
    }


SHRINK_PARAMETERS = _object(
    {
        "target": _target_union(
            "The toolCallId of the result to shrink.",
            "Shrink the (first) message whose text contains this substring.",
            "How to identify the message to shrink. Resolved live each turn (robust to compaction).",
        ),
        "replacement": _string(
            "The compact text that replaces the matched message's content. Make it a faithful summary — the model "
            "will treat it as ground truth from now on."
        ),
        "reason": _string("Why (surfaced in audit). Optional."),
    },
    ["target", "replacement"],
)

CANCEL_PARAMETERS = _object(
    {
        "target": _target_union(
            "The toolCallId of a message the marker affected.",
            "Match a marker whose affected message(s) include this substring.",
            "How to identify the marker to cancel — the SAME hint shape mulligan_shrink uses. Resolved live each "
            "turn (robust to compaction). The most recent active marker (shrink or rewind) whose target/span "
            "covers the matched message is retired.",
        ),
        "markerId": _string(
            "Optional explicit fallback: the markerId returned by mulligan_rewind/mulligan_shrink in "
            "details.markerId. If both target and markerId are given, markerId wins."
        ),
    },
    [],
    "Cancel accepts a `target` (preferred) or an explicit `markerId` (fallback). At least one MUST be present.",
)

AUDIT_PARAMETERS = _object(
    {"top": {"type": "number", "description": "Report only the top N messages by token size. Default 8."}},
    [],
)
