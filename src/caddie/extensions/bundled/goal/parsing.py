"""Reading what people type: token counts, intervals, ``/goal`` and ``/loop`` arguments, goal requests.

Pure functions. A mistake raises ``UsageError`` whose message is the one sentence the user sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeAlias

from caddie.extensions import api
from caddie.extensions.bundled.goal.model import OBJECTIVE_LIMIT


class UsageError(api.UsageError, ValueError):
    """Arguments that cannot be used; ``str(error)`` tells the user what to type instead."""


# --------------------------------------------------------------------------------------------------
# Numbers

_TOKENS = re.compile(r"^(\d+(?:\.\d+)?)\s*([km]?)$", re.IGNORECASE)
_TOKEN_FACTORS = {"": 1, "k": 1_000, "m": 1_000_000}


def parse_token_count(text: str) -> int:
    """``50000``, ``50,000``, ``50_000``, ``50k``, ``1.5M`` → a positive number of tokens."""
    raw = text.strip().replace(",", "").replace("_", "")
    match = _TOKENS.match(raw)
    if match is None:
        raise UsageError(f"'{text.strip()}' is not a token count; write it like 50000, 50k or 1.5M.")
    value = float(match.group(1)) * _TOKEN_FACTORS[match.group(2).lower()]
    tokens = round(value)
    if tokens <= 0:
        raise UsageError("A token budget must be more than zero tokens.")
    return tokens


_INTERVAL = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"^\d+(?:\.\d+)?$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def is_interval(text: str) -> bool:
    return _INTERVAL.match(text.strip()) is not None


def parse_interval(text: str) -> int:
    """``500ms``, ``30s``, ``5m``, ``1h``, ``1d`` → milliseconds. A bare number is refused, never guessed."""
    raw = text.strip()
    if _BARE_NUMBER.match(raw):
        raise UsageError(
            f"'{raw}' has no unit; write the interval with one of ms, s, m, h or d (for example 5m or 30s)."
        )
    match = _INTERVAL.match(raw)
    if match is None:
        raise UsageError(
            f"'{raw}' is not an interval; write a number and a unit: ms, s, m, h or d (e.g. 5m)."
        )
    ms = round(float(match.group(1)) * _UNIT_MS[match.group(2).lower()])
    if ms <= 0:
        raise UsageError("A loop interval must be longer than zero.")
    return ms


# --------------------------------------------------------------------------------------------------
# Does a prompt ask for a goal?

_VERBS = (
    r"create|creates|created|creating|set|sets|setting|start|starts|started|starting|new|add|adds|added|adding|"
    r"track|tracks|tracked|tracking|pursue|pursues|pursued|pursuing|manage|manages|managed|managing|"
    r"establish|establishes|established|establishing"
)
_VERB = re.compile(rf"\b(?:{_VERBS})\b", re.IGNORECASE)
_NOUN = re.compile(r"\b(?:goal|goals|objective|objectives)\b", re.IGNORECASE)
_LONG_RUNNING = re.compile(r"\blong[- ]running\b", re.IGNORECASE)


def prompt_requests_goal(text: str) -> bool:
    """True iff ``text`` has an action verb together with a goal noun, or says "long-running".

    Verbs: create, set, start, new, add, track, pursue, manage, establish (any inflection); nouns: goal,
    objective. A bare "goal" is not enough.
    """
    if _LONG_RUNNING.search(text):
        return True
    return _VERB.search(text) is not None and _NOUN.search(text) is not None


# --------------------------------------------------------------------------------------------------
# /goal


@dataclass(frozen=True, slots=True)
class ShowGoal:
    pass


@dataclass(frozen=True, slots=True)
class EditGoal:
    pass


@dataclass(frozen=True, slots=True)
class SetBudget:
    budget: int | None


@dataclass(frozen=True, slots=True)
class SetCheck:
    command: str | None


@dataclass(frozen=True, slots=True)
class PauseGoal:
    pass


@dataclass(frozen=True, slots=True)
class ResumeGoal:
    pass


@dataclass(frozen=True, slots=True)
class ClearGoal:
    pass


@dataclass(frozen=True, slots=True)
class NewGoal:
    objective: str
    budget: int | None = None


GoalCommand: TypeAlias = (
    ShowGoal | EditGoal | SetBudget | SetCheck | PauseGoal | ResumeGoal | ClearGoal | NewGoal
)

_WITH_BUDGET = re.compile(
    r"^with\s+(?:a\s+)?token\s+budget\s+(?:of\s+)?(\S+)\s*(?:tokens?\s+)?(.*)$", re.IGNORECASE | re.DOTALL
)
_OFF = ("off", "none", "remove")


def check_objective(objective: str) -> str:
    text = objective.strip()
    if not text:
        raise UsageError("The objective is empty; say what done looks like.")
    if len(text) > OBJECTIVE_LIMIT:
        raise UsageError(
            f"The objective is {len(text):,} characters; the limit is {OBJECTIVE_LIMIT:,}. "
            "Shorten it (a plan belongs in a file the objective can point to)."
        )
    return text


def parse_goal_args(args: str) -> GoalCommand:
    text = args.strip()
    if not text:
        return ShowGoal()
    head, _, rest = text.partition(" ")
    word = head.lower()
    rest = rest.strip()
    if word == "edit" and not rest:
        return EditGoal()
    if not rest and word == "pause":
        return PauseGoal()
    if not rest and word == "resume":
        return ResumeGoal()
    if not rest and word == "clear":
        return ClearGoal()
    if word == "budget":
        if not rest:
            raise UsageError("Usage: /goal budget <tokens|off>, e.g. /goal budget 200k.")
        return SetBudget(None if rest.lower() in _OFF else parse_token_count(rest))
    if word == "check":
        if not rest:
            raise UsageError('Usage: /goal check <command|off>, e.g. /goal check "pytest -q".')
        return SetCheck(None if rest.lower() in _OFF else _unquote(rest))
    match = _WITH_BUDGET.match(text)
    if match is not None:
        budget = parse_token_count(match.group(1))
        return NewGoal(check_objective(match.group(2)), budget)
    return NewGoal(check_objective(text))


def _unquote(command: str) -> str:
    if len(command) >= 2 and command[0] == command[-1] and command[0] in "\"'":
        return command[1:-1].strip()
    return command


# --------------------------------------------------------------------------------------------------
# /loop

DEFAULT_LOOP_PROMPT = (
    "Run a maintenance check: review recent work and address anything stale, broken, or left half-finished."
)


@dataclass(frozen=True, slots=True)
class ShowLoop:
    pass


@dataclass(frozen=True, slots=True)
class StopLoop:
    pass


@dataclass(frozen=True, slots=True)
class StartLoop:
    prompt: str
    interval_ms: int | None
    """None: self-paced (refire after each settle)."""


LoopCommand: TypeAlias = ShowLoop | StopLoop | StartLoop


def parse_loop_args(args: str) -> LoopCommand:
    text = args.strip()
    if not text:
        return ShowLoop()
    head, _, rest = text.partition(" ")
    if head.lower() in ("stop", "cancel", "clear", "off") and not rest.strip():
        return StopLoop()
    if is_interval(head) or _BARE_NUMBER.match(head):
        interval = parse_interval(head)
        return StartLoop(rest.strip() or DEFAULT_LOOP_PROMPT, interval)
    return StartLoop(text, None)
