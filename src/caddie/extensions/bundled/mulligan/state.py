"""In-memory state: one ``SessionRuntime`` per session id, and the extension-wide ``Mulligan`` object.

Runtime state is control state only (baselines, caches, latches); everything that must survive a restart is
a marker in the session file. A runtime is recreated on every ``session_start`` and all are dropped on
``session_shutdown``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from caddie.extensions.api import (
    AgentMessage,
    CustomMessage,
    ExtensionAPI,
    ExtensionContext,
    UserMessage,
    Utf16TokenCounter,
    estimate_message_tokens_utf16,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.log import DebugLog
from caddie.extensions.bundled.mulligan.markers import HIGH_WATER, NUDGE, MarkerIndex, MarkerWriter
from caddie.extensions.bundled.mulligan.transforms import BranchIndexer


@dataclass(frozen=True, slots=True)
class BloatHit:
    tool_name: str
    approx_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"toolName": self.tool_name, "approxTokens": self.approx_tokens}


class AgentTokenMemo:
    """``estimate_agent_tokens`` for the turn-end metric, kept across turn ends so that each one only counts
    the messages that are new since the previous one.

    The view counted at each turn end is the one the filter returned: the previous turn end's view plus the
    messages added since, in the usual turn. When the view starts with the previous one's messages (compared
    as one list comparison in C: by identity, by value where the objects differ, as a re-made shrink
    summary does), the previous total is kept and only the rest is counted; equal messages count the same.
    Otherwise each message is counted again, from a memo by identity (the host hands out the same copy of a
    message again only while it is unchanged; anything a handler changed or made arrives as a new object).
    The memo holds its messages (an id is not reused while remembered) and keeps only the last call's.
    The drift and high-water nudges the filter appends at the end are new on every inference: they are
    counted on every call and not remembered, so the next view, which no longer ends with them, still
    starts with the remembered messages.
    """

    __slots__ = ("_last", "_seen", "_total")

    def __init__(self) -> None:
        self._seen: dict[int, tuple[AgentMessage, int]] = {}
        self._last: list[AgentMessage] = []
        self._total = 0

    def estimate(self, messages: Sequence[AgentMessage]) -> int:
        end = len(messages)
        while end and _is_nudge(messages[end - 1]):
            end -= 1
        head = messages[:end] if messages.__class__ is list else list(messages)[:end]
        last = self._last
        k = len(last)
        if 0 < k <= end and (head == last if k == end else head[:k] == last):
            # The usual turn end: the last call's messages and some new ones.
            seen = self._seen
            total = self._total
            for m in head[k:]:
                if not isinstance(m, UserMessage):
                    n = estimate_message_tokens_utf16(m)
                    seen[id(m)] = (m, n)
                    total += n
        else:
            old = self._seen
            seen = {}
            total = 0
            for m in head:
                if isinstance(m, UserMessage):
                    continue
                hit = old.get(id(m))
                n = hit[1] if hit is not None and hit[0] is m else estimate_message_tokens_utf16(m)
                seen[id(m)] = (m, n)
                total += n
            self._seen = seen
        self._last, self._total = head, total
        for m in messages[end:]:
            total += estimate_message_tokens_utf16(m)  # nudges: custom messages, never user messages
        return total


def _is_nudge(message: AgentMessage) -> bool:
    return isinstance(message, CustomMessage) and message.custom_type in (NUDGE, HIGH_WATER)


@dataclass(slots=True)
class SessionRuntime:
    session_id: str
    seq: int = 0
    """Last marker seq handed out (shared by all marker kinds; the first marker gets 1)."""
    token_baseline: int | None = None
    """Agent-attributable tokens at the last turn end; None until the first one (so the first delta is null)."""
    last_turn_index: Any = None
    last_filtered: list[AgentMessage] | None = None
    """The view the model saw on the last inference (what ``mulligan_audit`` reports)."""
    last_filter_ts: int | None = None
    pending_bloat_hits: list[BloatHit] = field(default_factory=list)
    shrink_miss_counts: dict[str, int] = field(default_factory=dict)
    above_high_water: bool = False
    rewind_refused_turn_index: Any = None
    """The turn in which a rewind was refused: the drift nudge stays quiet for the rest of it."""
    marker_index: MarkerIndex = field(default_factory=MarkerIndex, compare=False, repr=False)
    """The session's markers, read incrementally by the filter."""
    branch_index: BranchIndexer = field(default_factory=BranchIndexer, compare=False, repr=False)
    """The branch's retained tail, indexed incrementally by the filter."""
    tokens: Utf16TokenCounter = field(default_factory=Utf16TokenCounter, compare=False, repr=False)
    """Token estimates for the per-inference path."""
    agent_tokens: AgentTokenMemo = field(default_factory=AgentTokenMemo, compare=False, repr=False)
    """The turn-end metric's per-message estimates."""

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq


class Runtimes:
    """Session id → runtime."""

    def __init__(self) -> None:
        self._by_session: dict[str, SessionRuntime] = {}

    def get(self, session_id: str) -> SessionRuntime:
        rt = self._by_session.get(session_id)
        if rt is None:
            rt = self._by_session[session_id] = SessionRuntime(session_id)
        return rt

    def next_seq(self, session_id: str) -> int:
        return self.get(session_id).next_seq()

    def reset(self, session_id: str) -> None:
        self._by_session.pop(session_id, None)

    def clear(self) -> None:
        self._by_session.clear()

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._by_session


class Mulligan:
    """What every handler, tool and command of one loaded extension shares."""

    def __init__(self, api: ExtensionAPI, config: MulliganConfig | None = None) -> None:
        self.api = api
        self.config = config or MulliganConfig()
        self.runtimes = Runtimes()
        self.log = DebugLog(self.config.log.file)
        self.bring_in_tools: Callable[[ExtensionContext, str], None] = lambda ctx, reason: None
        """With ``tools: "when-needed"``: send the tools from the next request on (a checkpoint does)."""

    def runtime(self, ctx: ExtensionContext) -> SessionRuntime:
        return self.runtimes.get(ctx.session.session_id)

    def writer(self, ctx: ExtensionContext) -> MarkerWriter:
        """A marker writer whose seq counter is the session's (read lazily, so a broken ctx only fails the write)."""
        return MarkerWriter(self.api, lambda: self.runtimes.next_seq(ctx.session.session_id))

    def set_config(self, config: MulliganConfig) -> None:
        self.config = config
        self.log.path = config.log.file
