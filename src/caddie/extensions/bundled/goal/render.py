"""Every text the extension shows the user or the model: status bar, standing orders, continuations,
reports, check results and tool descriptions. Pure functions; the exact status-bar texts live here."""

from __future__ import annotations

from typing import Literal, TypeAlias

from caddie.extensions.bundled.goal.check import CheckResult
from caddie.extensions.bundled.goal.model import (
    BLOCKED_TURNS,
    NOTES_LIMIT,
    OBJECTIVE_LIMIT,
    STAGNATION_TURNS,
    Goal,
    GoalStatus,
    LoopState,
)

# --------------------------------------------------------------------------------------------------
# Numbers


def format_tokens(n: int) -> str:
    """``950``, ``41.2k``, ``100k``, ``1.5M``."""
    if n < 1_000:
        return str(n)
    k = round(n / 1_000, 1)
    if k < 1_000:
        return f"{k:g}k"
    return f"{round(n / 1_000_000, 1):g}M"


def approx(goal: Goal) -> str:
    """``≈`` before a goal's token figures when some of its spend is estimated (a server reported no usage)."""
    return "≈" if goal.tokens_estimated else ""


def format_duration(seconds: float) -> str:
    """``45s``, ``12m``, ``2h``, ``2h 5m``."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes = total // 60
    if minutes < 60:
        return f"{minutes}m"
    hours, rest = divmod(minutes, 60)
    return f"{hours}h {rest}m" if rest else f"{hours}h"


_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000))


def format_interval(ms: int) -> str:
    """The largest unit that divides the interval: ``5m``, ``90s``, ``1d``, ``250ms``."""
    for unit, size in _UNITS:
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


# --------------------------------------------------------------------------------------------------
# Status bar

STATUS_TEXTS: dict[GoalStatus, str] = {
    "paused": "Goal paused",
    "blocked": "Goal blocked",
    "usage_limited": "Goal hit usage limits",
    "budget_limited": "Goal budget reached",
    "complete": "Goal complete",
}


def goal_status_text(goal: Goal) -> str:
    """``Goal · 12m · 41.2k/100k tokens`` while pursuing, else one of ``STATUS_TEXTS``."""
    if goal.status != "active":
        return STATUS_TEXTS[goal.status]
    spend = approx(goal) + format_tokens(goal.tokens_used)
    if goal.token_budget is not None:
        spend = f"{spend}/{format_tokens(goal.token_budget)}"
    text = f"Goal · {format_duration(goal.active_seconds)} · {spend} tokens"
    if goal.budget_raised_to is not None and goal.token_budget == goal.budget_raised_to:
        text += " · budget raised"
    return text


def loop_status_text(loop: LoopState) -> str:
    """``Loop every 5m (3)`` or ``Loop self-paced (3)``: the pace and how many times it fired."""
    if loop.mode == "interval" and loop.interval_ms is not None:
        return f"Loop every {format_interval(loop.interval_ms)} ({loop.iteration})"
    return f"Loop self-paced ({loop.iteration})"


# --------------------------------------------------------------------------------------------------
# What the model reads

STANDING_ORDERS: tuple[str, ...] = (
    "Goal standing orders: while a goal is active (get_goal shows it; each goal continuation message "
    "repeats its objective), keep working toward the objective and never stop just because a turn ended.",
    "Before calling update_goal with status complete, verify completion against the actual current state "
    "(run the check command, read the files). Never mark a goal complete because the budget is nearly "
    "spent or because you are stopping work.",
    f"Call update_goal with status blocked only after the same blocking condition has repeated for "
    f"{BLOCKED_TURNS} consecutive goal turns.",
    "Keep the goal's progress notes current with update_goal notes: what is done, what failed, what is next.",
)
"""One guideline line each. They never change, so the system prompt stays byte-identical while a goal exists."""


def standing_orders_block() -> str:
    """The orders as a block appended to a custom system prompt (which has no guideline list)."""
    return "\n".join(f"- {line}" for line in STANDING_ORDERS)


ContinuationKind: TypeAlias = Literal["start", "continue", "resume", "resumed"]

_OPENINGS: dict[ContinuationKind, str] = {
    "start": "A goal is set for this session. Start working toward it now.",
    "continue": "Continue working toward the goal.",
    "resume": (
        "The session was reopened after its last turn was cut off. Check the current state and continue "
        "working toward the goal."
    ),
    "resumed": "The goal was resumed. Continue working toward it.",
}


def counters_line(goal: Goal) -> str:
    """Live counters: active time, tokens used, budget left (exact numbers, for the model)."""
    spent = f"{approx(goal)}{goal.tokens_used:,} tokens used"
    if goal.token_budget is None:
        budget = "no token budget"
    else:
        budget = f"{approx(goal)}{goal.budget_left or 0:,} of {goal.token_budget:,} left"
    return f"Goal progress: {format_duration(goal.active_seconds)} active · {spent} · {budget}."


def stagnation_line(turns: int) -> str:
    return (
        f"No successful edit or write in the last {turns} goal turns: make the next concrete change now, "
        "or, if the same blocker keeps repeating, do the blocked audit (verify it against the current "
        f"state; after {BLOCKED_TURNS} consecutive goal turns call update_goal blocked)."
    )


def continuation_text(goal: Goal, kind: ContinuationKind, *, include_notes: bool) -> str:
    """The message that keeps the goal going; it rides at the request tail, so it may change every time."""
    parts = [_OPENINGS[kind], "", "Objective:", goal.objective, "", counters_line(goal)]
    if goal.check:
        parts.append(f"Check command (must exit 0 before update_goal complete): {goal.check}")
    if include_notes and goal.notes:
        parts += [
            "",
            "Progress notes saved before the context was compacted or the session reopened:",
            goal.notes,
        ]
    if goal.turns_without_change >= STAGNATION_TURNS:
        parts += ["", stagnation_line(goal.turns_without_change)]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------------
# Reports

_STATUS_WORDS: dict[GoalStatus, str] = {
    "active": "active",
    "paused": "paused",
    "blocked": "blocked",
    "budget_limited": "budget reached",
    "usage_limited": "stopped by usage limits",
    "complete": "complete",
}


def goal_report(goal: Goal, session_id: str | None = None) -> str:
    """Status, objective, spend, time, budget, check and notes (``get_goal`` and bare ``/goal``)."""
    lines = [f"Goal ({_STATUS_WORDS[goal.status]}): {goal.objective}"]
    spent = f"{approx(goal)}{goal.tokens_used:,}"
    if goal.token_budget is None:
        lines.append(f"Tokens used: {spent} (no budget: spend is unbounded)")
    else:
        lines.append(
            f"Tokens used: {spent} of {goal.token_budget:,} ({approx(goal)}{goal.budget_left or 0:,} left)"
        )
    if goal.tokens_estimated:
        lines.append(ESTIMATED_NOTE)
    lines.append(f"Time used: {format_duration(goal.active_seconds)} active")
    lines.append(f"Check: {goal.check}" if goal.check else "Check: none (completion is not gated)")
    if session_id:
        lines.append(f"Session: {session_id}")
    lines.append(f"Notes: {goal.notes}" if goal.notes else "Notes: none yet")
    return "\n".join(lines)


ESTIMATED_NOTE = "(≈: estimated — the model's server reported no token usage for some replies)"
NO_GOAL = "No goal is set. Start one with /goal <objective>."
NO_GOAL_FOR_MODEL = "No goal is set in this session."
UNBOUNDED_ADVISORY = (
    "No token_budget was set, so spend on this goal is unbounded; the user can set one with "
    "/goal budget <tokens>."
)


def created_text(goal: Goal) -> str:
    lines = [f"Goal created and active: {goal.objective}"]
    if goal.token_budget is not None:
        lines.append(f"Token budget: {goal.token_budget:,}")
    if goal.check:
        lines.append(f"Check command: {goal.check}")
    lines.append("The session keeps working toward it after every turn until it is complete.")
    if goal.token_budget is None:
        lines.append(UNBOUNDED_ADVISORY)
    return "\n".join(lines)


def unfinished_goal_exists(goal: Goal) -> str:
    return (
        f"A goal is already set ({_STATUS_WORDS[goal.status]}): {_clip(goal.objective)} "
        "Finish it with update_goal, or ask the user to drop it with /goal clear."
    )


def notes_too_long(length: int) -> str:
    return (
        f"notes is {length:,} characters; the limit is {NOTES_LIMIT:,}. Nothing was saved: shorten the notes "
        "(what is done, what failed, what is next) and call update_goal again."
    )


def objective_too_long(length: int) -> str:
    return (
        f"The objective is {length:,} characters; the limit is {OBJECTIVE_LIMIT:,}. Shorten it; a plan "
        "belongs in a file the objective can point to."
    )


def blocked_not_yet(streak: int) -> str:
    return (
        f"Not marked blocked: this is goal turn {streak} of {BLOCKED_TURNS} with a blocker reported. The "
        "goal stays active. Keep working around it; call update_goal blocked again only if the same "
        f"blocking condition has repeated for {BLOCKED_TURNS} consecutive goal turns."
    )


def blocked_text() -> str:
    return "Goal marked blocked. The session stops working on it until the user resumes it with /goal resume."


def _clip(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------------
# Check results


def check_failed_text(command: str, result: CheckResult, timeout_s: float, limit: int) -> str:
    """Why ``update_goal complete`` was refused, with the tail of the check's output."""
    if result.timed_out:
        head = (
            f"The goal was not marked complete: the check `{command}` timed out after {timeout_s:g} s and "
            "was stopped. A timeout counts as a failure."
        )
    elif result.aborted:
        head = f"The goal was not marked complete: the check `{command}` was stopped because the run was aborted."
    else:
        head = f"The goal was not marked complete: the check `{command}` exited with code {result.code}."
    head += " The goal stays active; fix what the check reports and call update_goal complete again."
    return head + "\n\n" + _output_block(result, limit)


def check_passed_text(command: str) -> str:
    return f"Goal complete. The check `{command}` exited with code 0."


def _output_block(result: CheckResult, limit: int) -> str:
    if not result.output.strip():
        return "The check printed nothing."
    label = f"Check output (last {limit:,} bytes):" if result.truncated else "Check output:"
    return f"{label}\n{result.output.rstrip()}"


# --------------------------------------------------------------------------------------------------
# Tool descriptions

CREATE_GOAL_DESCRIPTION = (
    "Create a long-running goal for this session: an objective (at most 4,000 characters) saying what "
    "done means, an optional token_budget, and an optional check shell command that must exit 0 before the "
    "goal can be completed. Call it only when the user explicitly asked for a goal. It fails while an "
    "unfinished goal exists; a complete goal is replaced. After it, the session keeps working toward the "
    "goal automatically."
)
GET_GOAL_DESCRIPTION = (
    "Show the current goal: status, objective, tokens used, time used, remaining budget, check command, "
    "session id and progress notes."
)
UPDATE_GOAL_DESCRIPTION = (
    "Update the goal: status complete or blocked, and/or notes (replace the progress notes, at most 3,000 "
    "characters: what is done, what failed, what is next). status complete first runs the goal's check "
    "command and is refused, with the check's output, unless it exits 0; verify against the actual current "
    "state before calling it. Do not mark a goal complete because the budget is nearly spent or because "
    "you are stopping work. status blocked is accepted only after the same blocking condition has repeated "
    "for 3 consecutive goal turns."
)
