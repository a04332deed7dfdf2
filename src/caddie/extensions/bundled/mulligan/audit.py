"""The audit report: what the model is carrying, its biggest messages, and the active markers (pure).

Shared by the ``mulligan_audit`` tool (the model's view) and the ``/mulligan_audit`` command (the human's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    LabelEntry,
    SessionEntry,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    estimate_message_tokens_utf16,
    estimate_tokens_utf16,
    js_round,
    message_bytes,
    utf16_len,
    utf16_prefix,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.markers import CHECKPOINT_LABEL_PREFIX, MarkerBundle
from caddie.extensions.bundled.mulligan.nudges import bloat_threshold_for

ARG_KEYS = ("path", "file_path", "command", "query", "pattern", "search_query")
DEFAULT_TOP = 8
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class AuditRow:
    tokens: int
    role: str
    label: str
    bloaty: bool
    threshold_bytes: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "role": self.role,
            "label": self.label,
            "bloaty": self.bloaty,
            "thresholdBytes": self.threshold_bytes,
        }


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    name: str
    args: Mapping[str, Any]


def truncate(s: str, limit: int) -> str:
    """At most ``limit`` characters, the last one an ellipsis when cut."""
    return s if utf16_len(s) <= limit else utf16_prefix(s, limit - 1) + "…"


def build_call_lookup(messages: Iterable[AgentMessage]) -> dict[str, ToolCallInfo]:
    """Tool call id → (name, arguments), over every assistant message."""
    lookup: dict[str, ToolCallInfo] = {}
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            for block in msg.content:
                if isinstance(block, ToolCall) and block.id:
                    args = block.arguments if isinstance(block.arguments, Mapping) else {}
                    lookup[block.id] = ToolCallInfo(block.name, args)
    return lookup


def _pick_arg(args: Mapping[str, Any] | None) -> str:
    if not args:
        return ""
    for key in ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return truncate(value, 40)
    return ""


def _first_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, TextContent):
                return block.text
            if isinstance(block, ThinkingContent):
                return block.thinking
    return ""


def _snippet(text: str) -> str:
    collapsed = _WHITESPACE.sub(" ", text).strip()
    return f' "{truncate(collapsed, 40)}"' if collapsed else ""


def _assistant_summary(msg: AssistantMessage) -> str:
    text = thinking = calls = other = 0
    for block in msg.content:
        if isinstance(block, TextContent):
            text += 1
        elif isinstance(block, ThinkingContent):
            thinking += 1
        elif isinstance(block, ToolCall):
            calls += 1
        else:
            other += 1
    parts: list[str] = []
    if thinking:
        parts.append("thinking")
    if calls:
        parts.append("toolCall" + (f" x{calls}" if calls > 1 else ""))
    if text:
        parts.append("text" + (f" x{text}" if text > 1 else ""))
    if other:
        parts.append(f"{other} other")
    return f"({' + '.join(parts)})" if parts else "(assistant)"


def describe_message(msg: AgentMessage, calls: Mapping[str, ToolCallInfo]) -> str:
    """A short human label: ``read src/a.ts``, ``(thinking + toolCall)``, ``user "fix the…"``, a custom type."""
    if isinstance(msg, ToolResultMessage):
        call = calls.get(msg.tool_call_id) if msg.tool_call_id else None
        arg = _pick_arg(call.args) if call else ""
        return f"{msg.tool_name} {arg}" if arg else msg.tool_name
    if isinstance(msg, AssistantMessage):
        return _assistant_summary(msg)
    if isinstance(msg, UserMessage):
        return "user" + _snippet(_first_text(msg.content))
    if isinstance(msg, CustomMessage):
        return msg.custom_type
    return str(getattr(msg, "role", "message"))


def list_checkpoints(entries: Iterable[SessionEntry]) -> list[str]:
    """Active checkpoint names in first-set order: a target's latest label must still be the checkpoint's."""
    labels = [e for e in entries if isinstance(e, LabelEntry) and e.target_id]
    latest: dict[str, str | None] = {}
    for e in labels:
        latest[e.target_id] = e.label
    names: dict[str, None] = {}
    for e in labels:
        label = e.label
        if label and label.startswith(CHECKPOINT_LABEL_PREFIX) and latest.get(e.target_id) == label:
            names.setdefault(label[len(CHECKPOINT_LABEL_PREFIX) :], None)
    return list(names)


def audit_rows(view: Sequence[AgentMessage], config: MulliganConfig, top: int) -> list[AuditRow]:
    """The ``top`` biggest messages (ties keep their order), each flagged when above its bloat threshold."""
    calls = build_call_lookup(view)
    sized = sorted(((estimate_message_tokens_utf16(m), m) for m in view), key=lambda pair: -pair[0])
    rows: list[AuditRow] = []
    for tokens, msg in sized[:top]:
        threshold = bloat_threshold_for(msg.tool_name if isinstance(msg, ToolResultMessage) else None, config)
        rows.append(
            AuditRow(
                tokens, msg.role, describe_message(msg, calls), message_bytes(msg) > threshold, threshold
            )
        )
    return rows


def render_audit_report(
    *,
    total_tokens: int,
    confidence: str,
    markers: MarkerBundle,
    checkpoint_names: Sequence[str],
    protected_roles: Sequence[str],
    rows: Sequence[AuditRow],
    view_size: int,
) -> str:
    granularities = list(dict.fromkeys(r.granularity for r in markers.rewinds if r.granularity))
    gran = f" ({', '.join(granularities)})" if granularities else ""
    n_cp = len(checkpoint_names)
    names = f" [{', '.join(checkpoint_names)}]"
    cp_word = "checkpoint" if n_cp == 1 else "checkpoints"
    user_set = " (user-set)" if n_cp > 0 else ""
    n_cancelled = len(markers.cancelled_ids)
    cancelled = f", {n_cancelled} cancelled (retired)" if n_cancelled > 0 else ""
    lines = [
        "## Mulligan audit — context you are currently carrying",
        f"Total (filtered): ~{total_tokens} tokens  (estimate, confidence: {confidence})",
        f"Active markers: {len(markers.rewinds)} rewind{gran}, {len(markers.shrinks)} shrink, "
        f"{n_cp} {cp_word}{names}{user_set}{cancelled}",
        f"Protected: will not rewind past {'/'.join(protected_roles) if protected_roles else 'none'}.",
        "",
    ]
    if view_size == 0:
        lines.append("No messages in filtered view.")
        return "\n".join(lines)
    lines.append("Top messages by size:")
    for r in rows:
        flag = f"  ⚠ above bloat threshold ({js_round(r.threshold_bytes / 1024)} KB)" if r.bloaty else ""
        lines.append(f"  {str(r.tokens).rjust(6)}  {r.role.ljust(11)} {r.label}{flag}")
    lines.append("")
    largest = rows[0].label if rows else "message"
    lines.append(f"Suggestion: the `{largest}` result is the largest contributor. Consider mulligan_shrink.")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Audit:
    report: str
    total_tokens: int
    rows: list[AuditRow]


def build_audit(
    view: Sequence[AgentMessage],
    markers: MarkerBundle,
    checkpoint_names: Sequence[str],
    config: MulliganConfig,
    confidence: str,
    top: int = DEFAULT_TOP,
) -> Audit:
    total = estimate_tokens_utf16(view)
    rows = audit_rows(view, config, top)
    report = render_audit_report(
        total_tokens=total,
        confidence=confidence,
        markers=markers,
        checkpoint_names=checkpoint_names,
        protected_roles=config.rewind.protected_roles,
        rows=rows,
        view_size=len(view),
    )
    return Audit(report, total, rows)
