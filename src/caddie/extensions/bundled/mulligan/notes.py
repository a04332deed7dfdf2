"""The texts the model reads: the rewind note, the bloat reminder, the drift and high-water nudges.

All pure; every string here is byte-exact with the TypeScript original (sessions and prompts stay
interchangeable).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from caddie.extensions.api import is_finite_number, js_number, js_round
from caddie.extensions.bundled.mulligan.ledger import FileLedger

NOTE_FIELDS = ("what_happened", "true_current_state", "next")
NOTE_INVALID_REASON = "note fields must all be non-empty"
LARGE_SINGLE_TURN_DELTA = 4000
"""The sustained-growth clause is only added when the latest turn alone stayed below this."""

DRIFT_TAIL = ". If wasteful, `mulligan_rewind` to undo the turn or `mulligan_shrink` to compact a result."


def validate_note(note: object) -> bool:
    """A note is valid when all three fields are strings with non-blank text."""
    if not isinstance(note, Mapping):
        return False
    for name in NOTE_FIELDS:
        value = note.get(name)
        if not isinstance(value, str) or not value.strip():
            return False
    return True


def render_note(note: Mapping[str, object], ledger: FileLedger, granularity: str) -> str:
    """The rewind note: heading, what happened, current state, the non-empty ledger blocks, next step."""

    def field(name: str) -> str:
        value = note.get(name)
        return value if isinstance(value, str) else ""

    sections = [
        f"## 🔄 Mulligan rewind ({granularity})",
        f"**What happened:** {field('what_happened')}",
        f"**Current true state:** {field('true_current_state')}",
    ]
    for tag, items in (
        ("files-read", ledger.read_files),
        ("files-modified", ledger.modified_files),
        ("bash-side-effects", ledger.bash_side_effects),
    ):
        if items:
            body = "\n".join(items)
            sections.append(f"<{tag}>\n{body}\n</{tag}>")
    sections.append(f"**Next:** {field('next')}")
    return "\n\n".join(sections)


BLOAT_REMINDER_MARK = " KB added to your context. `mulligan_shrink` to summarize, "
"""A piece of every bloat reminder (how the savings find one in a stored result)."""


def render_bloat_reminder(num_bytes: float) -> str:
    """Appended to a bloated tool result (leading newline and rule, no trailing newline)."""
    kb = js_round(num_bytes / 1024) if math.isfinite(num_bytes) and num_bytes >= 0 else 0
    return (
        f"\n---\n~{kb} KB added to your context. `mulligan_shrink` to summarize, "
        "or `mulligan_rewind` if the whole call was a mistake."
    )


@dataclass(frozen=True, slots=True)
class DriftNudgeInput:
    delta_tokens: object
    """The latest turn's delta; anything but a finite number means unknown."""
    bloat_hit_count: int = 0
    sustained_over_turns: int = 0
    """When > 0 (and the latest delta is small), the nudge fired on the window average over this many turns."""


def render_drift_nudge(nudge: DriftNudgeInput) -> str:
    delta = nudge.delta_tokens
    if is_finite_number(delta):
        lead = f"Previous turn added ~{k_tokens(delta)} tokens to your context"
        if nudge.sustained_over_turns > 0 and delta < LARGE_SINGLE_TURN_DELTA:
            lead += f" (sustained over the last {nudge.sustained_over_turns} turns)"
    elif nudge.bloat_hit_count > 0:
        word = "result" if nudge.bloat_hit_count == 1 else "results"
        lead = f"Previous turn produced {nudge.bloat_hit_count} bloated {word}"
    else:
        lead = "Previous turn changed your context"
    return lead + DRIFT_TAIL


def k_tokens(delta: float) -> str:
    """4200 → ``4.2k``, 5000 → ``5k``, 800 → ``0.8k`` (one decimal, JavaScript rounding)."""
    tenths = js_round(delta / 1000 * 10)
    return js_number(tenths / 10) + "k"


def render_high_water_nudge(total_tokens: float, window_tokens: float) -> str:
    if not window_tokens > 0:
        return "[mulligan] Context is filling up; review recent output for reclaimable space."
    pct = js_round(total_tokens / window_tokens * 100)
    return f"[mulligan] Context is at ~{pct}% of the window; review recent output for reclaimable space."


def valid_bloat_hits(hits: object) -> Sequence[Mapping[str, object]]:
    """The well-formed ``{toolName, approxTokens}`` records of a persisted metric."""
    if not isinstance(hits, list):
        return []
    return [
        h
        for h in hits
        if isinstance(h, Mapping)
        and isinstance(h.get("toolName"), str)
        and is_finite_number(h.get("approxTokens"))
    ]
