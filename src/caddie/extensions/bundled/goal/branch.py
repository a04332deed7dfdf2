"""Reading a branch back: the goal and loop it holds, spend not yet saved, and whether a turn was cut off.

Pure functions over the branch's entries (root to leaf).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from caddie.extensions.api import (
    AssistantMessage,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    ToolResultMessage,
    UserMessage,
)
from caddie.extensions.bundled.goal.accounting import add_tokens, counted_tokens, normalize_output
from caddie.extensions.bundled.goal.model import (
    CLEARED,
    CONTINUE_MESSAGE,
    GOAL_ENTRY,
    LOOP_ENTRY,
    Goal,
    LoopState,
    goal_from_json,
    loop_from_json,
)


@dataclass(frozen=True, slots=True)
class BranchState:
    goal: Goal | None
    loop: LoopState | None
    """The latest loop state, unless it was stopped."""
    last_output: str | None
    """The normalised text of the branch's last assistant answer when it called no tool."""
    unsaved_tokens: int = 0
    """Spend of an active goal found after its last ``goal:state`` (charged to ``goal`` already)."""


def restore(entries: Sequence[SessionEntry]) -> BranchState:
    """The goal and loop as of the end of ``entries``.

    Assistant messages after the last ``goal:state`` of an active goal were produced while it was active
    (a process killed mid-turn never saved them), so their tokens are charged here.
    """
    goal: Goal | None = None
    goal_at = -1
    loop: LoopState | None = None
    for index, entry in enumerate(entries):
        if not isinstance(entry, CustomEntry):
            continue
        if entry.custom_type == GOAL_ENTRY:
            parsed = goal_from_json(entry.data)
            if parsed == CLEARED:
                goal, goal_at = None, index
            elif isinstance(parsed, Goal):
                goal, goal_at = parsed, index
        elif entry.custom_type == LOOP_ENTRY:
            parsed_loop = loop_from_json(entry.data)
            if parsed_loop is not None:
                loop = parsed_loop
    unsaved = 0
    if goal is not None and goal.status == "active":
        replies = [
            e.message.usage
            for e in entries[goal_at + 1 :]
            if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        ]
        unsaved = sum(counted_tokens(u.input, u.output) for u in replies)
        goal = add_tokens(goal, unsaved, any(u.estimated is True for u in replies))
    if loop is not None and loop.stopped:
        loop = None
    return BranchState(goal, loop, _last_output(entries), unsaved)


def _last_output(entries: Sequence[SessionEntry]) -> str | None:
    for entry in reversed(entries):
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            message = entry.message
            if message.tool_calls() or message.stop_reason in ("error", "aborted"):
                return None
            return normalize_output(message.text())
    return None


def turn_was_cut_off(entries: Sequence[SessionEntry]) -> bool:
    """Whether the branch ends mid-turn: on a user message, a tool result, a goal continuation nobody
    answered, or an assistant tool call that never ran. An aborted or failed reply is not cut off."""
    for entry in reversed(entries):
        if isinstance(entry, CustomMessageEntry):
            if entry.custom_type == CONTINUE_MESSAGE:
                return True
            continue
        if not isinstance(entry, MessageEntry):
            continue
        message = entry.message
        if isinstance(message, UserMessage | ToolResultMessage):
            return True
        if isinstance(message, CustomMessage):
            if message.custom_type == CONTINUE_MESSAGE:
                return True
            continue
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                return False
            return bool(message.tool_calls())
    return False
