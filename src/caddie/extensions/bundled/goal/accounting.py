"""Budget accounting and the goal's state transitions, as pure functions over ``Goal``.

A *goal turn* is one low-level agent run (``agent_start`` … ``agent_end``) while the goal is active: the
first answer to a prompt or one continuation. Only ``input`` and ``output`` tokens of assistant messages
count toward the budget; cache reads and writes never do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from caddie.extensions.bundled.goal.model import (
    BLOCKED_TURNS,
    BUDGET_RESUME_RAISE,
    RUNAWAY_REPEATS,
    Goal,
    GoalStatus,
)


def counted_tokens(input_tokens: int, output_tokens: int) -> int:
    """What one response costs the budget: its input and output tokens (never cache reads or writes)."""
    return max(0, input_tokens) + max(0, output_tokens)


def budget_reached(goal: Goal) -> bool:
    return goal.token_budget is not None and goal.tokens_used >= goal.token_budget


def add_tokens(goal: Goal, tokens: int, estimated: bool = False) -> Goal:
    """Charge ``tokens`` to an active goal (``estimated``: caddie's estimate, the server reported none);
    reaching the budget makes it ``budget_limited``."""
    if goal.status != "active" or tokens <= 0:
        return goal
    charged = replace(
        goal, tokens_used=goal.tokens_used + tokens, tokens_estimated=goal.tokens_estimated or estimated
    )
    return replace(charged, status="budget_limited") if budget_reached(charged) else charged


def normalize_output(text: str) -> str:
    """Whitespace-insensitive form of an answer, for runaway comparison."""
    return " ".join(text.split())


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """What happened in one goal turn that the guards care about."""

    had_tool_call: bool
    had_change: bool
    """A successful ``edit`` or ``write`` result."""
    blocked_reported: bool
    final_text: str
    """The text of the answer that ended the turn."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    goal: Goal
    last_output: str | None
    """The normalised tool-free answer to compare the next one with (None after any tool call)."""
    runaway: bool


def end_goal_turn(goal: Goal, facts: TurnFacts, last_output: str | None) -> TurnOutcome:
    """Advance the stagnation, runaway and blocked counters after a goal turn that ended normally."""
    turns_without_change = 0 if facts.had_change else goal.turns_without_change + 1
    blocked_streak = goal.blocked_streak if facts.blocked_reported else 0
    if facts.had_tool_call:
        streak, output = 0, None
    else:
        output = normalize_output(facts.final_text)
        streak = goal.runaway_streak + 1 if output == last_output and goal.runaway_streak > 0 else 1
    runaway = streak >= RUNAWAY_REPEATS and goal.status == "active"
    updated = replace(
        goal,
        turns_without_change=turns_without_change,
        blocked_streak=blocked_streak,
        runaway_streak=streak,
        status="paused" if runaway else goal.status,
    )
    return TurnOutcome(updated, output, runaway)


def report_blocked(goal: Goal, already_this_turn: bool) -> tuple[Goal, bool]:
    """Count a blocked report (once per goal turn); the goal is ``blocked`` from the third in a row."""
    streak = goal.blocked_streak if already_this_turn else goal.blocked_streak + 1
    accepted = streak >= BLOCKED_TURNS
    return replace(goal, blocked_streak=streak, status="blocked" if accepted else goal.status), accepted


def resume_goal(goal: Goal) -> Goal:
    """``/goal resume``: active again; a reached budget is raised to spend + 50,000; a blocker is forgotten."""
    resumed = replace(goal, status="active", runaway_streak=0, blocked_streak=0)
    if goal.status == "budget_limited" or budget_reached(goal):
        raised = goal.tokens_used + BUDGET_RESUME_RAISE
        resumed = replace(resumed, token_budget=raised, budget_raised_to=raised)
    return resumed


def set_budget(goal: Goal, budget: int | None) -> Goal:
    """Set, raise or remove the budget. Raising it past spend resumes a ``budget_limited`` goal; lowering
    it to spend or below stops an active one."""
    updated = replace(goal, token_budget=budget, budget_raised_to=None)
    if goal.status == "budget_limited" and not budget_reached(updated):
        return replace(updated, status="active", runaway_streak=0)
    if goal.status == "active" and budget_reached(updated):
        return replace(updated, status="budget_limited")
    return updated


# --------------------------------------------------------------------------------------------------
# Failed runs

_QUOTA = re.compile(
    r"insufficient_quota|quota exceeded|exceeded your current quota|usage limit|out of budget|"
    r"spend limit|monthly limit|UsageLimitError",
    re.IGNORECASE,
)
_BILLING = re.compile(
    r"billing|payment required|credit balance|insufficient (?:credits|balance|funds)|add credits|"
    r"available balance",
    re.IGNORECASE,
)
_RATE = re.compile(r"rate.?limit|too many requests|\b429\b|throttl|resource.?exhausted", re.IGNORECASE)


def is_usage_limit(error_message: str | None, error_status: int | None) -> bool:
    """A rate-limit, quota or billing failure (by HTTP status when known, else by wording)."""
    if error_status in (402, 429):
        return True
    text = error_message or ""
    return bool(_BILLING.search(text) or _QUOTA.search(text) or _RATE.search(text))


def status_after_failure(
    stop_reason: str, error_message: str | None, error_status: int | None
) -> GoalStatus | None:
    """What a run that ended this way does to an active goal: ``usage_limited``, ``paused``, or nothing."""
    if stop_reason == "aborted":
        return "paused"
    if stop_reason == "error":
        return "usage_limited" if is_usage_limit(error_message, error_status) else "paused"
    return None


EXIT_CODES: dict[GoalStatus, int] = {
    "complete": 0,
    "blocked": 2,
    "budget_limited": 3,
    "paused": 4,
    "usage_limited": 5,
}


def exit_code(status: GoalStatus) -> int:
    """The headless exit code for a goal's outcome; a goal still ``active`` when the run ends counts as paused."""
    return EXIT_CODES.get(status, 4)
