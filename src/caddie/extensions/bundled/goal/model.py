"""Goal and loop state as plain data: the ``goal:state`` / ``loop:state`` entries and their JSON shapes.

Every change to a goal appends one ``goal:state`` custom entry holding the whole state; the latest one on
the current branch is the goal (``status: "cleared"`` removes it). Loops work the same way with
``loop:state``. Nothing about a goal lives outside the session file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

SCHEMA = "caddie-goal"
VERSION = 1
GOAL_ENTRY = "goal:state"
LOOP_ENTRY = "loop:state"
CONTINUE_MESSAGE = "goal-continue"
"""``custom_type`` of the continuation messages the extension injects."""

OBJECTIVE_LIMIT = 4_000
NOTES_LIMIT = 3_000
BUDGET_RESUME_RAISE = 50_000
RUNAWAY_REPEATS = 3
BLOCKED_TURNS = 3
STAGNATION_TURNS = 5

GoalStatus: TypeAlias = Literal["active", "paused", "blocked", "budget_limited", "usage_limited", "complete"]
GOAL_STATUSES: tuple[GoalStatus, ...] = get_args(GoalStatus)
CLEARED: Literal["cleared"] = "cleared"
LoopMode: TypeAlias = Literal["interval", "settled"]


@dataclass(frozen=True, slots=True)
class Goal:
    id: str
    objective: str
    status: GoalStatus = "active"
    token_budget: int | None = None
    tokens_used: int = 0
    check: str | None = None
    notes: str = ""
    created_at: int = 0
    """Milliseconds since the epoch."""
    active_seconds: float = 0.0
    budget_raised_to: int | None = None
    """Set when ``/goal resume`` lifted a reached budget by ``BUDGET_RESUME_RAISE`` (the status bar says so)."""
    turns_without_change: int = 0
    runaway_streak: int = 0
    blocked_streak: int = 0
    tokens_estimated: bool = False
    """Some of ``tokens_used`` is caddie's estimate: the model's server reported no usage for a reply (its
    usage is marked ``estimated``). Shown as "≈"; stored as ``tokensEstimated: true``, only when set."""

    @property
    def unfinished(self) -> bool:
        return self.status != "complete"

    @property
    def budget_left(self) -> int | None:
        return None if self.token_budget is None else max(0, self.token_budget - self.tokens_used)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "v": VERSION,
            "id": self.id,
            "objective": self.objective,
            "status": self.status,
            "tokenBudget": self.token_budget,
            "tokensUsed": self.tokens_used,
            "check": self.check,
            "notes": self.notes,
            "createdAt": self.created_at,
            "activeSeconds": round(self.active_seconds, 3),
            "budgetRaisedTo": self.budget_raised_to,
            "turnsWithoutChange": self.turns_without_change,
            "runawayStreak": self.runaway_streak,
            "blockedStreak": self.blocked_streak,
        } | ({"tokensEstimated": True} if self.tokens_estimated else {})


def cleared_json(goal: Goal) -> dict[str, Any]:
    """The entry data that removes ``goal`` (its last state, with ``status: "cleared"``)."""
    return {**goal.to_json(), "status": CLEARED}


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def goal_from_json(data: Any) -> Goal | Literal["cleared"] | None:
    """A goal from entry data; ``"cleared"`` for a removal; None when the data is not a goal state."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    status = data.get("status")
    if status == CLEARED:
        return CLEARED
    if status not in GOAL_STATUSES or not isinstance(data.get("objective"), str):
        return None
    check = data.get("check")
    notes = data.get("notes")
    return Goal(
        id=str(data.get("id") or ""),
        objective=data["objective"],
        status=status,
        token_budget=_opt_int(data.get("tokenBudget")),
        tokens_used=_int(data.get("tokensUsed")),
        check=check if isinstance(check, str) and check else None,
        notes=notes if isinstance(notes, str) else "",
        created_at=_int(data.get("createdAt")),
        active_seconds=_num(data.get("activeSeconds")),
        budget_raised_to=_opt_int(data.get("budgetRaisedTo")),
        turns_without_change=_int(data.get("turnsWithoutChange")),
        runaway_streak=_int(data.get("runawayStreak")),
        blocked_streak=_int(data.get("blockedStreak")),
        tokens_estimated=data.get("tokensEstimated") is True,
    )


@dataclass(frozen=True, slots=True)
class LoopState:
    mode: LoopMode
    prompt: str
    interval_ms: int | None = None
    iteration: int = 0
    last_fired_at: int | None = None
    """Milliseconds since the epoch of the last fire (None before the first)."""
    stopped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "v": VERSION,
            "mode": self.mode,
            "intervalMs": self.interval_ms,
            "prompt": self.prompt,
            "iteration": self.iteration,
            "lastFiredAt": self.last_fired_at,
            "stopped": self.stopped,
        }


def loop_from_json(data: Any) -> LoopState | None:
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    mode = data.get("mode")
    prompt = data.get("prompt")
    if mode not in ("interval", "settled") or not isinstance(prompt, str):
        return None
    interval = _opt_int(data.get("intervalMs"))
    if mode == "interval" and (interval is None or interval <= 0):
        return None
    return LoopState(
        mode=mode,
        prompt=prompt,
        interval_ms=interval if mode == "interval" else None,
        iteration=_int(data.get("iteration")),
        last_fired_at=_opt_int(data.get("lastFiredAt")),
        stopped=bool(data.get("stopped")),
    )
