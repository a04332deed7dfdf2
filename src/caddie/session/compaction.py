"""Compaction, the pure part: when to compact, where to cut, what to summarise and the summariser's prompts.

A compaction replaces the older part of a branch's context with a summary written by the current model. This
module decides everything that needs no I/O, as Pi 0.84 does (``prepareCompaction``, ``findCutPoint``,
``serializeConversation``, the prompt texts); ``caddie.runtime.auto_compaction`` makes the model call and
appends the ``compaction`` entry.

Shape of a compaction over a branch (root → leaf)::

    [prev compaction's kept entries | prev compaction | newer entries ...........................]
     └──────────── summarised (with the previous summary) ───────────┘ └── kept: ~keep_recent ──┘
                                                                        ↑ first_kept_entry_id

The cut is made only where a context message starts (user, assistant, bash, custom or summary message) —
never at a tool result, so a tool call and its result are never separated. When the cut falls inside a
turn (at an assistant message), the part of that turn before the cut (the *turn prefix*) is summarised
separately and appended to the summary.

*Views.* Every function that reads messages from entries takes an optional ``view``: entry id → the
messages the model actually sees for that entry, after the extensions' ``context`` handlers (an entry the
handlers dropped maps to nothing, a substituted one to its substitute). With a view, the summariser reads
only what the model sees, so content an extension hid is never written back into a summary; the cut point
still follows the raw entries (so pairs stay intact) but weighs each entry by its visible size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    CustomMessage,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    convert_to_llm,
)
from caddie.ai.tokens import estimate_context_tokens, estimate_message_tokens
from caddie.session.context import build_branch_context
from caddie.session.entries import CompactionEntry, SessionEntry, entry_to_context_messages

ContextView: TypeAlias = Mapping[str, Sequence[AgentMessage]]
"""Entry id → the messages the model sees for it (see the module docstring). Missing ids show nothing."""

# ==================================================================================================
# Settings and trigger


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16_384
    """Room left for the reply (and the summary request): compact when the context grows past the window
    minus this."""
    keep_recent_tokens: int = 20_000
    """About this many tokens of the newest context survive a compaction verbatim."""


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    return (
        settings.enabled and context_window > 0 and context_tokens > context_window - settings.reserve_tokens
    )


# ==================================================================================================
# File operations (read / write / edit tool calls), cumulative across compactions


@dataclass(slots=True)
class FileOps:
    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)


def extract_file_ops(message: AgentMessage, ops: FileOps) -> None:
    """Add the ``path`` of every read/write/edit call in an assistant message."""
    if not isinstance(message, AssistantMessage):
        return
    for block in message.content:
        if not isinstance(block, ToolCall):
            continue
        path = block.arguments.get("path") if isinstance(block.arguments, dict) else None
        if not isinstance(path, str) or not path:
            continue
        if block.name == "read":
            ops.read.add(path)
        elif block.name == "write":
            ops.written.add(path)
        elif block.name == "edit":
            ops.edited.add(path)


def add_previous_details(details: Any, ops: FileOps) -> None:
    """Carry the file lists of an earlier summary (its ``details``) into ``ops``."""
    if not isinstance(details, dict):
        return
    read = details.get("readFiles")
    if isinstance(read, list):
        ops.read.update(f for f in read if isinstance(f, str))
    modified = details.get("modifiedFiles")
    if isinstance(modified, list):
        ops.edited.update(f for f in modified if isinstance(f, str))


def compute_file_lists(ops: FileOps) -> tuple[list[str], list[str]]:
    """(files only read, files modified), each sorted."""
    modified = ops.edited | ops.written
    return sorted(ops.read - modified), sorted(modified)


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` blocks appended to a summary ("" when both are empty)."""
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def file_details(read_files: Sequence[str], modified_files: Sequence[str]) -> dict[str, list[str]]:
    """The ``details`` of a generated compaction or branch summary, with Pi's field names."""
    return {"readFiles": list(read_files), "modifiedFiles": list(modified_files)}


# ==================================================================================================
# Serialising a conversation for the summariser

TOOL_RESULT_MAX_CHARS = 2000
"""Tool results are cut to this many characters in a summary request: their gist is enough."""


def _truncate_for_summary(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n\n[... {len(text) - max_chars} more characters truncated]"


def _joined_text(content: str | Sequence[object], separator: str) -> str:
    if isinstance(content, str):
        return content
    return separator.join(b.text for b in content if isinstance(b, TextContent))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def serialize_conversation(messages: Sequence[LlmMessage]) -> str:
    """The conversation as labelled text (``[User]: ...``), so the summariser reads it instead of continuing
    it. Convert host roles first (``convert_to_llm``)."""
    parts: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            text = _joined_text(m.content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif isinstance(m, AssistantMessage):
            thinking = [b.thinking for b in m.content if isinstance(b, ThinkingContent)]
            calls = [
                f"{b.name}({', '.join(f'{k}={_json(v)}' for k, v in b.arguments.items())})"
                for b in m.content
                if isinstance(b, ToolCall)
            ]
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if any(isinstance(b, TextContent) for b in m.content):
                parts.append("[Assistant]: " + _joined_text(m.content, "\n"))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(m, ToolResultMessage):
            text = _joined_text(m.content, "")
            if text:
                parts.append(f"[Tool result]: {_truncate_for_summary(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


# ==================================================================================================
# Prompts (Pi 0.84's texts, verbatim)

SUMMARIZATION_SYSTEM_PROMPT = """You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.

Do NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary."""

SUMMARIZATION_PROMPT = """The messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

UPDATE_SUMMARIZATION_INSTRUCTIONS = """Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

UPDATE_SUMMARIZATION_PROMPT = (
    "The messages above are NEW conversation messages to incorporate into the existing summary provided "
    "in <previous-summary> tags.\n\n" + UPDATE_SUMMARIZATION_INSTRUCTIONS
)

TURN_PREFIX_SUMMARIZATION_PROMPT = """This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""

NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"


def summary_prompt(
    messages: Sequence[AgentMessage], previous_summary: str | None, custom_instructions: str | None
) -> str:
    """The user message of a history summary request (the update prompt when there is a previous summary)."""
    instructions = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        instructions = f"{instructions}\n\nAdditional focus: {custom_instructions}"
    text = f"<conversation>\n{serialize_conversation(convert_to_llm(list(messages)))}\n</conversation>\n\n"
    if previous_summary:
        text += f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n"
    return text + instructions


def turn_prefix_prompt(messages: Sequence[AgentMessage]) -> str:
    conversation = serialize_conversation(convert_to_llm(list(messages)))
    return f"<conversation>\n{conversation}\n</conversation>\n\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"


def summary_max_tokens(reserve_tokens: int, model_max_tokens: int, fraction: float = 0.8) -> int:
    """Output budget of a summary request: a fraction of the reserve, capped by the model's limit."""
    budget = int(fraction * reserve_tokens)
    return min(budget, model_max_tokens) if model_max_tokens > 0 else budget


def merge_split_turn(history_summary: str, prefix_summary: str) -> str:
    return f"{history_summary}{SPLIT_TURN_SEPARATOR}{prefix_summary}"


def summarization_failure(message: AssistantMessage, label: str) -> str | None:
    """Why a summariser reply must not become a checkpoint (an error, or text cut off by the token cap)."""
    if message.stop_reason == "error":
        return f"{label} failed: {message.error_message or 'Unknown error'}"
    if message.stop_reason == "length":
        return f"{label} failed: generation hit the token cap and the summary is incomplete"
    if message.tool_calls():
        return f"{label} attempted to call a tool"
    return None


def combine_usage(first: Usage, second: Usage) -> Usage:
    def opt(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    cost = Cost(
        first.cost.input + second.cost.input,
        first.cost.output + second.cost.output,
        first.cost.cache_read + second.cost.cache_read,
        first.cost.cache_write + second.cost.cache_write,
        first.cost.total + second.cost.total,
    )
    return Usage(
        first.input + second.input,
        first.output + second.output,
        first.cache_read + second.cache_read,
        first.cache_write + second.cache_write,
        first.total_tokens + second.total_tokens,
        cost,
        opt(first.cache_write_1h, second.cache_write_1h),
        opt(first.reasoning, second.reasoning),
        True if first.estimated or second.estimated else None,
    )


# ==================================================================================================
# Cut point


def _is_cut_point(message: AgentMessage) -> bool:
    return not isinstance(message, ToolResultMessage)


def _is_turn_start(message: AgentMessage) -> bool:
    return isinstance(
        message,
        UserMessage | BashExecutionMessage | CustomMessage | BranchSummaryMessage | CompactionSummaryMessage,
    )


def _is_turn_start_entry(entry: SessionEntry) -> bool:
    return not isinstance(entry, CompactionEntry) and any(
        _is_turn_start(m) for m in entry_to_context_messages(entry)
    )


def _entry_tokens(entry: SessionEntry, view: ContextView | None) -> int:
    messages = entry_to_context_messages(entry) if view is None else view.get(entry.id, ())
    return sum(estimate_message_tokens(m) for m in messages)


@dataclass(frozen=True, slots=True)
class CutPoint:
    first_kept_index: int
    turn_start_index: int
    """Where the turn that the cut splits began; -1 when the cut starts a turn."""
    is_split_turn: bool


def find_cut_point(
    entries: Sequence[SessionEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    view: ContextView | None = None,
) -> CutPoint:
    """Where to cut ``entries[start:end]`` so that about ``keep_recent_tokens`` of the newest stay.

    Walks back from the newest entry adding sizes until the budget is reached, then cuts at the first valid
    cut point at or after that entry (a context message that is not a tool result). Settings-like entries
    just before the cut (labels, model changes, extension state) move to the kept side with it.
    """
    cut_points = [
        i
        for i in range(start, end)
        if not isinstance(entries[i], CompactionEntry)
        and any(_is_cut_point(m) for m in entry_to_context_messages(entries[i]))
    ]
    if not cut_points:
        return CutPoint(start, -1, False)
    cut = cut_points[0]
    total = 0
    for i in range(end - 1, start - 1, -1):
        tokens = _entry_tokens(entries[i], view)
        if tokens == 0:
            continue
        total += tokens
        if total >= keep_recent_tokens:
            cut = next((c for c in cut_points if c >= i), cut)
            break
    while cut > start:
        previous = entries[cut - 1]
        if isinstance(previous, CompactionEntry) or entry_to_context_messages(previous):
            break
        cut -= 1
    # Whether the cut splits a turn depends on the first message kept, not on settings entries pulled in.
    anchor = next((i for i in range(cut, end) if entry_to_context_messages(entries[i])), cut)
    if _is_turn_start_entry(entries[anchor]):
        return CutPoint(cut, -1, False)
    turn_start = next((i for i in range(cut, start - 1, -1) if _is_turn_start_entry(entries[i])), -1)
    return CutPoint(cut, turn_start, turn_start != -1)


# ==================================================================================================
# Preparation


@dataclass(slots=True)
class CompactionPreparation:
    """What a compaction will do; ``session_before_compact`` handlers receive it."""

    first_kept_entry_id: str
    messages_to_summarize: list[AgentMessage]
    turn_prefix_messages: list[AgentMessage]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOps
    settings: CompactionSettings
    summarized_entry_ids: list[str] = field(default_factory=list)
    """The entries summarised as history (their messages, as seen, are ``messages_to_summarize``)."""
    turn_prefix_entry_ids: list[str] = field(default_factory=list)


def _messages_of(entry: SessionEntry, view: ContextView | None) -> list[AgentMessage]:
    if isinstance(entry, CompactionEntry):
        return []
    if view is None:
        return entry_to_context_messages(entry)[:1]
    return list(view.get(entry.id, ()))


def _last_compaction_index(path: Sequence[SessionEntry]) -> int:
    for i in range(len(path) - 1, -1, -1):
        if isinstance(path[i], CompactionEntry):
            return i
    return -1


def previous_summary_of(compaction: CompactionEntry, view: ContextView | None) -> str | None:
    """The previous summary as the model sees it (an extension may have substituted or dropped it)."""
    if view is None:
        return compaction.summary
    for message in view.get(compaction.id, ()):
        if isinstance(message, CompactionSummaryMessage):
            return message.summary
    return None


def prepare_compaction(
    path: Sequence[SessionEntry], settings: CompactionSettings, view: ContextView | None = None
) -> CompactionPreparation | None:
    """Plan a compaction of the branch ``path`` (root → leaf); None when there is nothing to compact.

    Whether there is anything to compact is decided on the raw entries; what the summariser reads comes
    from ``view`` when given (see the module docstring).
    """
    if not path or isinstance(path[-1], CompactionEntry):
        return None
    prev_index = _last_compaction_index(path)
    previous: CompactionEntry | None = None
    start = 0
    if prev_index >= 0:
        prev = path[prev_index]
        assert isinstance(prev, CompactionEntry)
        previous = prev
        kept = next((i for i, e in enumerate(path) if e.id == prev.first_kept_entry_id), -1)
        start = kept if kept >= 0 else prev_index + 1
    end = len(path)
    tokens_before = estimate_context_tokens(build_branch_context(path).messages)
    cut = find_cut_point(path, start, end, settings.keep_recent_tokens, view)
    if cut.first_kept_index >= len(path):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index

    history_ids = [e.id for e in path[start:history_end] if _messages_of(e, None)]
    prefix_ids = (
        [e.id for e in path[cut.turn_start_index : cut.first_kept_index] if _messages_of(e, None)]
        if cut.is_split_turn
        else []
    )
    if not history_ids and not prefix_ids:
        return None
    by_id = {e.id: e for e in path}
    history = [m for eid in history_ids for m in _messages_of(by_id[eid], view)]
    prefix = [m for eid in prefix_ids for m in _messages_of(by_id[eid], view)]

    ops = FileOps()
    if previous is not None and not previous.from_hook:
        add_previous_details(previous.details, ops)
    for message in (*history, *prefix):
        extract_file_ops(message, ops)
    return CompactionPreparation(
        first_kept_entry_id=path[cut.first_kept_index].id,
        messages_to_summarize=history,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary_of(previous, view) if previous is not None else None,
        file_ops=ops,
        settings=settings,
        summarized_entry_ids=history_ids,
        turn_prefix_entry_ids=prefix_ids,
    )


def estimate_messages_tokens(messages: Iterable[AgentMessage]) -> int:
    """Sum of per-message estimates (the size of a freshly rebuilt context, before any reply)."""
    return sum(estimate_message_tokens(m) for m in messages)


@dataclass(slots=True)
class CompactionResult:
    """What a compaction produced (the ``compaction_end`` payload; Pi's ``CompactionResult``)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    estimated_tokens_after: int | None = None
    usage: Usage | None = None
    details: Any = None
