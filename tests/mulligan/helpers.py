"""Fixture builders for the pure-function tests: branch entries aligned with message lists, markers."""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    SessionEntry,
    TextContent,
    ToolCall,
    ToolResultMessage,
)
from caddie.extensions.bundled.mulligan.markers import RewindMarker, ShrinkMarker
from caddie.extensions.bundled.mulligan.transforms import stamp_shrink
from tests.mulligan.fakehost import text_of, user

PROTECT = ("first:user", "latest:user")


def entry(
    entry_id: str, kind: str = "message", message: AgentMessage | None = None, **extra: Any
) -> SessionEntry:
    """A branch entry of the given type (only ids and types matter to the resolvers)."""
    if kind == "message":
        return MessageEntry(entry_id, None, "t", message or user("x"))
    if kind == "custom_message":
        return CustomMessageEntry(entry_id, None, "t", extra.get("custom_type", "mulligan:note"), "n")
    if kind == "compaction":
        return CompactionEntry(entry_id, None, "t", "summary", extra.get("first_kept", ""), 1)
    if kind == "branch_summary":
        return BranchSummaryEntry(entry_id, None, "t", "root", extra.get("summary", "s"))
    if kind == "custom":
        return CustomEntry(entry_id, None, "t", extra.get("custom_type", "mulligan:rewind"), {})
    if kind == "label":
        return LabelEntry(entry_id, None, "t", extra["target"], extra.get("label"))
    raise ValueError(kind)


def entries(*ids: str) -> list[SessionEntry]:
    return [entry(i) for i in ids]


def checkpoint_label(entry_id: str, target: str, name: str) -> SessionEntry:
    return entry(entry_id, "label", target=target, label=f"mulligan:checkpoint:{name}")


def rewind(seq: float, granularity: str = "last_tool_call_group", **kw: Any) -> RewindMarker:
    hide = kw.pop("hide", None)
    if hide is not None:
        kw["hide_entry_ids"] = tuple(hide)
        kw["pinned"] = len(hide) > 0
    return RewindMarker(seq=seq, granularity=granularity, **kw)


def shrink(seq: float, target: Any, replacement: str, **kw: Any) -> ShrinkMarker:
    return ShrinkMarker(target=target, replacement=replacement, seq=seq, **kw)


def result_with(call_id: str, text: str, tool_name: str = "tool") -> ToolResultMessage:
    return ToolResultMessage(call_id, tool_name, [TextContent(text)], timestamp=1)


def is_stamped(message: AgentMessage, replacement: str) -> bool:
    return text_of(message) == stamp_shrink(replacement)


def call_ids(messages: list[AgentMessage]) -> tuple[set[str], set[str]]:
    """(tool call ids issued, tool call ids answered) in a message list."""
    calls = {
        b.id
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolCall)
    }
    results = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return calls, results


def contains(messages: list[AgentMessage], message: AgentMessage) -> bool:
    """Identity membership (``toContain`` in the TypeScript tests)."""
    return any(m is message for m in messages)
