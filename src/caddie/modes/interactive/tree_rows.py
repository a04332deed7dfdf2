"""The session tree as rows for the /tree navigator: one line per entry, indented where branches split.

A straight run of entries stays at one indent; the children of an entry with several children are each
indented one step further. Rows are computed without recursion, so a session of 100,000 entries in one
chain is fine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ToolResultMessage,
    UserMessage,
)
from caddie.modes.interactive.render import content_text, one_line
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
)
from caddie.session.store import TreeNode

TreeFilter: TypeAlias = Literal["default", "no-tools", "user", "all"]
TREE_FILTERS: tuple[TreeFilter, ...] = ("default", "no-tools", "user", "all")


@dataclass(slots=True)
class TreeRow:
    entry_id: str
    depth: int
    text: str
    kind: str
    """``user``, ``assistant``, ``tool``, ``bash``, ``custom``, ``summary`` or ``meta``."""
    on_path: bool
    """On the branch from the root to the current leaf."""
    is_leaf: bool
    label: str | None = None
    parent_id: str | None = None
    """The nearest shown entry above this one (None at the top)."""


def describe_entry(entry: SessionEntry) -> tuple[str, str] | None:
    """``(kind, text)`` for an entry worth showing in the tree, None for bookkeeping entries."""
    if isinstance(entry, MessageEntry):
        m = entry.message
        if isinstance(m, UserMessage):
            return "user", "user: " + one_line(content_text(m.content), 200)
        if isinstance(m, AssistantMessage):
            text = one_line(m.text(), 200)
            if m.stop_reason in ("error", "aborted"):
                return "assistant", f"assistant ({m.stop_reason}): {one_line(m.error_message or text, 160)}"
            if not text:
                calls = ", ".join(c.name for c in m.tool_calls())
                return "assistant", f"assistant: [{calls or 'no text'}]"
            return "assistant", "assistant: " + text
        if isinstance(m, ToolResultMessage):
            first = one_line(content_text(m.content), 120)
            return "tool", f"{m.tool_name}{' (error)' if m.is_error else ''}: {first}"
        if isinstance(m, BashExecutionMessage):
            return "bash", f"$ {one_line(m.command, 160)}"
        if isinstance(m, CustomMessage):
            return "custom", f"[{m.custom_type}] {one_line(content_text(m.content), 160)}"
        return "summary", one_line(getattr(m, "summary", ""), 160)
    if isinstance(entry, CustomMessageEntry):
        return "custom", f"[{entry.custom_type}] {one_line(content_text(entry.content), 160)}"
    if isinstance(entry, CompactionEntry):
        return "summary", f"compaction ({entry.tokens_before} tokens before)"
    if isinstance(entry, BranchSummaryEntry):
        return "summary", "branch summary: " + one_line(entry.summary, 160)
    if isinstance(entry, ModelChangeEntry):
        return "meta", f"model: {entry.provider}/{entry.model_id}"
    if isinstance(entry, ThinkingLevelChangeEntry):
        return "meta", f"thinking: {entry.thinking_level}"
    return None


def _visible(kind: str, mode: TreeFilter) -> bool:
    if mode == "all":
        return True
    if mode == "user":
        return kind == "user"
    if kind == "meta":
        return False
    return not (mode == "no-tools" and kind == "tool")


def tree_rows(
    roots: list[TreeNode], leaf_id: str | None, path_ids: set[str], mode: TreeFilter = "default"
) -> list[TreeRow]:
    rows: list[TreeRow] = []
    stack: list[tuple[TreeNode, int, str | None]] = [(r, 0, None) for r in reversed(roots)]
    while stack:
        node, depth, shown_parent = stack.pop()
        entry = node.entry
        described = describe_entry(entry)
        if described is None and mode == "all":
            described = ("meta", entry.type)
        if described is not None and _visible(described[0], mode):
            kind, text = described
            rows.append(
                TreeRow(entry.id, depth, text, kind, entry.id in path_ids, entry.id == leaf_id, node.label,
                        shown_parent)
            )  # fmt: skip
            shown_parent = entry.id
        child_depth = depth + 1 if len(node.children) > 1 else depth
        stack.extend((child, child_depth, shown_parent) for child in reversed(node.children))
    return rows
