"""Branch summaries, the pure part: what to summarise when the tree navigator leaves a branch, and the prompt.

Leaving leaf ``D`` for ``F``::

         ┌─ B ─ C ─ D   (old leaf: B, C, D are summarised)
    A ───┤
         └─ E ─ F ─ [summary of B..D]   (new leaf)

The entries between the old leaf and the common ancestor are summarised newest first within a token
budget (tool results are left out: the calls say what was done). A ``view`` (entry id → messages as the
model sees them, see ``caddie.session.compaction``) makes the summary read only what the model saw: hidden
entries contribute nothing, entries already compacted away are represented by their compaction summary.
``caddie.runtime.auto_compaction`` makes the model call and appends the ``branch_summary`` entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from caddie.ai.messages import AgentMessage, ToolResultMessage, UserMessage, convert_to_llm
from caddie.ai.tokens import estimate_message_tokens
from caddie.session.compaction import (
    ContextView,
    FileOps,
    add_previous_details,
    extract_file_ops,
    serialize_conversation,
)
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    entry_to_context_messages,
)

BRANCH_SUMMARY_PREAMBLE = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"

BRANCH_SUMMARY_PROMPT = """Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

BRANCH_SUMMARY_MAX_TOKENS = 2048
NO_CONTENT = "No content to summarize"


class EntryLookup(Protocol):
    def get_entry(self, entry_id: str) -> SessionEntry | None: ...

    def branch(self, from_id: str | None = None) -> list[SessionEntry]: ...


@dataclass(slots=True)
class BranchEntries:
    entries: list[SessionEntry]
    """Old leaf back to (not including) the common ancestor, oldest first."""
    common_ancestor_id: str | None


def collect_entries_for_branch_summary(
    session: EntryLookup, old_leaf_id: str | None, target_id: str
) -> BranchEntries:
    """The entries the navigation from ``old_leaf_id`` to ``target_id`` leaves behind."""
    if not old_leaf_id:
        return BranchEntries([], None)
    old_path = session.branch(old_leaf_id)
    old_ids = {e.id for e in old_path}
    common: str | None = next((e.id for e in reversed(session.branch(target_id)) if e.id in old_ids), None)
    # the part of the old path below the common ancestor (a walk over the path: finite whatever the file holds)
    cut = next((i + 1 for i in range(len(old_path) - 1, -1, -1) if old_path[i].id == common), 0)
    return BranchEntries(list(old_path[cut:]), common)


def navigation_leaf(entry: SessionEntry) -> str | None:
    """Where the leaf goes when navigating to ``entry``: a user or extension message is re-edited, so the leaf
    goes to its parent; any other entry becomes the leaf itself."""
    if isinstance(entry, MessageEntry) and isinstance(entry.message, UserMessage):
        return entry.parent_id
    if isinstance(entry, CustomMessageEntry):
        return entry.parent_id
    return entry.id


def _summary_message(entry: SessionEntry, view: ContextView | None) -> list[AgentMessage]:
    messages = entry_to_context_messages(entry) if view is None else list(view.get(entry.id, ()))
    return [m for m in messages if not isinstance(m, ToolResultMessage)]


@dataclass(slots=True)
class BranchPreparation:
    messages: list[AgentMessage]
    file_ops: FileOps = field(default_factory=FileOps)
    total_tokens: int = 0


def prepare_branch_entries(
    entries: Sequence[SessionEntry], token_budget: int = 0, view: ContextView | None = None
) -> BranchPreparation:
    """The newest messages of ``entries`` that fit ``token_budget`` (0: no limit), oldest first, and the
    file operations of all of them (including earlier branch summaries' lists)."""
    ops = FileOps()
    for entry in entries:
        if isinstance(entry, BranchSummaryEntry) and not entry.from_hook:
            add_previous_details(entry.details, ops)
    kept: list[AgentMessage] = []
    total = 0
    for entry in reversed(entries):
        messages = _summary_message(entry, view)
        for message in messages:
            extract_file_ops(message, ops)
        if not messages:
            continue
        tokens = sum(estimate_message_tokens(m) for m in messages)
        if token_budget > 0 and total + tokens > token_budget:
            # A summary is dense context: squeeze it in while there is clearly room left.
            if isinstance(entry, CompactionEntry | BranchSummaryEntry) and total < token_budget * 0.9:
                kept[:0] = messages
                total += tokens
            break
        kept[:0] = messages
        total += tokens
    return BranchPreparation(kept, ops, total)


def branch_summary_prompt(
    messages: Sequence[AgentMessage],
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> str:
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    conversation = serialize_conversation(convert_to_llm(list(messages)))
    return f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"
