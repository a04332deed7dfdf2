"""From a session tree to the model context, exactly as Pi builds it (``buildContextEntries`` and friends).

A branch is the path root → leaf. If it holds compactions, the latest one stands in for everything before
its ``first_kept_entry_id``: the context is [compaction, kept entries before the compaction, every entry
after it]. Each entry then contributes zero or one message (``entry_to_context_messages``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from caddie.ai.messages import AgentMessage, AssistantMessage
from caddie.session.entries import (
    CompactionEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    ThinkingLevelChangeEntry,
    entry_to_context_messages,
)


def branch_path(
    by_id: Mapping[str, SessionEntry], leaf_id: str | None, entries: Sequence[SessionEntry] | None = None
) -> list[SessionEntry]:
    """Entries from the root to ``leaf_id`` (inclusive), in order.

    ``None`` (a reset leaf) gives an empty path; an id that is not in the session falls back to the last
    entry of ``entries``, as Pi does.
    """
    if leaf_id is None:
        return []
    current = by_id.get(leaf_id)
    if current is None and entries:
        current = entries[-1]
    path: list[SessionEntry] = []
    seen: set[str] = set()
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    return path


def context_entries_of_path(path: Sequence[SessionEntry]) -> list[SessionEntry]:
    """The compaction-aware selection of a branch (see module docstring)."""
    compaction_index = -1
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], CompactionEntry):
            compaction_index = i
            break
    if compaction_index < 0:
        return list(path)
    compaction = path[compaction_index]
    assert isinstance(compaction, CompactionEntry)
    selected: list[SessionEntry] = [compaction]
    found_first_kept = False
    for entry in path[:compaction_index]:
        if entry.id == compaction.first_kept_entry_id:
            found_first_kept = True
        if found_first_kept:
            selected.append(entry)
    selected.extend(path[compaction_index + 1 :])
    return selected


def messages_of_entries(entries: Sequence[SessionEntry]) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for entry in entries:
        out.extend(entry_to_context_messages(entry))
    return out


@dataclass(slots=True)
class BranchContext:
    """What the current branch amounts to for the model: its context messages, and the thinking level and
    model last recorded on it (Pi's ``SessionContext``)."""

    messages: list[AgentMessage]
    thinking_level: str
    model: tuple[str, str] | None
    """(provider, model id) from the last model change or assistant message on the branch."""


def settings_of_path(path: Sequence[SessionEntry]) -> tuple[str, tuple[str, str] | None]:
    thinking_level = "off"
    model: tuple[str, str] | None = None
    for entry in path:
        if isinstance(entry, ThinkingLevelChangeEntry):
            thinking_level = entry.thinking_level
        elif isinstance(entry, ModelChangeEntry):
            model = (entry.provider, entry.model_id)
        elif isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            model = (entry.message.provider, entry.message.model)
    return thinking_level, model


def build_branch_context(path: Sequence[SessionEntry]) -> BranchContext:
    thinking_level, model = settings_of_path(path)
    return BranchContext(messages_of_entries(context_entries_of_path(path)), thinking_level, model)
