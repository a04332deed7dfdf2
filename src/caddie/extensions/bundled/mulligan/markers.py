"""Mulligan's persisted markers: their typed form, how they are read back, and how they are appended.

Markers are ``custom`` session entries (never sent to the model) whose ``data`` carries the envelope
``{schema: "pi-mulligan", v: 1, kind, seq, ts}``. Reading is lenient: a malformed entry is skipped, a
malformed field is read as "absent", so a damaged session never breaks a turn.
"""

from __future__ import annotations

import bisect
import itertools
import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from caddie.extensions.api import (
    CustomEntry,
    ExtensionAPI,
    LabelEntry,
    SessionEntry,
    is_finite_number,
    is_js_number,
    now_ms,
)

SCHEMA = "pi-mulligan"
REWIND = "mulligan:rewind"
SHRINK = "mulligan:shrink"
TURN_METRIC = "mulligan:turn-metric"
CANCEL = "mulligan:cancel"
NOTE = "mulligan:note"
NUDGE = "mulligan:nudge"
HIGH_WATER = "mulligan:high-water"
CHECKPOINT_LABEL_PREFIX = "mulligan:checkpoint:"
TOOLS = "mulligan:tools"
"""caddie's own entry (not pi-mulligan's): with ``tools: "when-needed"``, the point on the branch from which
the model is sent mulligan's tools (``{"schema": "caddie-mulligan", "v": 1, "kind": "tools", "reason", "ts"}``)."""


@dataclass(slots=True)
class RewindMarker:
    seq: float = 0
    granularity: str | None = None
    exclude_tool_call_id: str | None = None
    hide_entry_ids: tuple[str, ...] = ()
    pinned: bool = False
    """True when the marker carries a non-empty ``hideEntryIds`` list (the production path)."""
    checkpoint: str | None = None
    id: str | None = None
    ts: float | None = None


@dataclass(slots=True)
class ShrinkMarker:
    target: Any = None
    """The selector as persisted (``{by_tool_call_id}``, ``{by_tool_name, occurrence}``, ``{by_content_includes}``)."""
    replacement: str = ""
    pinned_entry_id: str | None = None
    seq: float = 0
    id: str | None = None
    ts: float | None = None


@dataclass(slots=True)
class TurnMetric:
    delta_tokens: Any = None
    bloat_hit: bool = False
    bloat_hits: Any = None
    turn_index: Any = None
    seq: float | None = None
    """None when the persisted seq is not a number (such metrics sort after all others)."""
    ts: float | None = None


@dataclass(frozen=True, slots=True)
class MarkerBundle:
    """The active markers of a session (cancelled rewinds and shrinks already dropped)."""

    rewinds: tuple[RewindMarker, ...] = ()
    shrinks: tuple[ShrinkMarker, ...] = ()
    recent_metrics: Sequence[TurnMetric] = ()
    """Every turn metric, newest (highest seq) first (parsed on access: only the newest few are read)."""
    cancelled_ids: frozenset[str] = field(default_factory=frozenset)

    @property
    def metric(self) -> TurnMetric | None:
        return self.recent_metrics[0] if self.recent_metrics else None


def _seq(value: object) -> float:
    return value if is_finite_number(value) else 0


def _ts(value: object) -> float | None:
    return value if is_finite_number(value) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def parse_rewind(data: Mapping[str, Any]) -> RewindMarker:
    hide = data.get("hideEntryIds")
    pinned = isinstance(hide, list) and len(hide) > 0
    ids = tuple(h for h in hide if isinstance(h, str) and h) if isinstance(hide, list) else ()
    cp = data.get("checkpoint")
    return RewindMarker(
        seq=_seq(data.get("seq")),
        granularity=_str(data.get("granularity")),
        exclude_tool_call_id=_str(data.get("excludeToolCallId")),
        hide_entry_ids=ids,
        pinned=pinned,
        checkpoint=cp if isinstance(cp, str) else None,
        id=_str(data.get("id")),
        ts=_ts(data.get("ts")),
    )


def parse_shrink(data: Mapping[str, Any]) -> ShrinkMarker:
    pinned = data.get("pinnedEntryId")
    replacement = data.get("replacement")
    return ShrinkMarker(
        target=data.get("target"),
        replacement=replacement if isinstance(replacement, str) else "",
        pinned_entry_id=pinned if isinstance(pinned, str) and pinned else None,
        seq=_seq(data.get("seq")),
        id=_str(data.get("id")),
        ts=_ts(data.get("ts")),
    )


def parse_turn_metric(data: Mapping[str, Any]) -> TurnMetric:
    seq = data.get("seq")
    return TurnMetric(
        delta_tokens=data.get("deltaTokens"),
        bloat_hit=data.get("bloatHit") is True,
        bloat_hits=data.get("bloatHits"),
        turn_index=data.get("turnIndex"),
        seq=seq if is_js_number(seq) else None,
        ts=_ts(data.get("ts")),
    )


def _metric_order(data: Mapping[str, Any]) -> float:
    """Sort key for newest first: a higher seq first; a seq that is not a number after all others."""
    seq = data.get("seq")
    return -seq if is_js_number(seq) else math.inf


class _MetricsNewestFirst(Sequence[TurnMetric]):
    """Turn-metric data ordered newest first, parsed only when an item is read."""

    def __init__(self, data: Sequence[Mapping[str, Any]]) -> None:
        self._data = data
        self._parsed: dict[int, TurnMetric] = {}

    def __len__(self) -> int:
        return len(self._data)

    def _item(self, i: int) -> TurnMetric:
        metric = self._parsed.get(i)
        if metric is None:
            metric = self._parsed[i] = parse_turn_metric(self._data[i])
        return metric

    @overload
    def __getitem__(self, index: int) -> TurnMetric: ...

    @overload
    def __getitem__(self, index: slice) -> list[TurnMetric]: ...

    def __getitem__(self, index: int | slice) -> TurnMetric | list[TurnMetric]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self._data)))]
        if index < 0:
            index += len(self._data)
        if not 0 <= index < len(self._data):
            raise IndexError(index)
        return self._item(index)


class MarkerIndex:
    """The session's markers (and label entries), read incrementally: each call only scans new entries.

    ``entries()`` is the session in file order and only ever grows, so when the entry that was last seen is
    still at the same position, everything before it is unchanged.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._seen = 0
        self._last_id: str | None = None
        self._rewinds: list[RewindMarker] = []
        self._shrinks: list[ShrinkMarker] = []
        self._metrics: list[Mapping[str, Any]] = []  # newest first
        self._metric_keys: list[float] = []  # _metric_order of each, ascending
        self._cancelled: set[str] = set()
        self.labels: list[LabelEntry] = []
        """Every label entry, in file order."""

    def update(self, entries: Sequence[SessionEntry]) -> MarkerIndex:
        seen = self._seen
        if not (0 < seen <= len(entries) and entries[seen - 1].id == self._last_id):
            self._reset()
            seen = 0
        new = entries[seen:] if seen else entries
        try:
            for entry in new:
                if isinstance(entry, CustomEntry):
                    if entry.custom_type.startswith("mulligan:"):
                        self._add(entry)
                elif isinstance(entry, LabelEntry):
                    self.labels.append(entry)
        except Exception:
            self._reset()  # never keep a half-read state (the next call re-reads everything)
            raise
        self._seen = len(entries)
        self._last_id = entries[-1].id if entries else None
        return self

    def _add(self, entry: CustomEntry) -> None:
        data = entry.data
        if not isinstance(data, Mapping):
            return
        ct = entry.custom_type
        kind = data.get("kind")
        if ct == TURN_METRIC and kind == "turn-metric":
            key = _metric_order(data)
            at = bisect.bisect_right(self._metric_keys, key)  # equal seqs keep file order
            self._metric_keys.insert(at, key)
            self._metrics.insert(at, data)
        elif ct == REWIND and kind == "rewind":
            self._rewinds.append(parse_rewind(data))
        elif ct == SHRINK and kind == "shrink":
            self._shrinks.append(parse_shrink(data))
        elif ct == CANCEL and kind == "cancel":
            target = data.get("targetId")
            if isinstance(target, str) and target:
                self._cancelled.add(target)

    def has_rewinds_or_shrinks(self) -> bool:
        """Whether any rewind or shrink was read, cancelled or not (without one, ``bundle()`` has none)."""
        return bool(self._rewinds or self._shrinks)

    def is_empty(self) -> bool:
        """Nothing read yet that ``bundle()`` would carry (no rewind, shrink or turn metric)."""
        return not (self._rewinds or self._shrinks or self._metrics)

    def bundle(self) -> MarkerBundle:
        cancelled = self._cancelled
        rewinds = tuple(r for r in self._rewinds if r.id is None or r.id not in cancelled)
        shrinks = tuple(s for s in self._shrinks if s.id is None or s.id not in cancelled)
        return MarkerBundle(rewinds, shrinks, _MetricsNewestFirst(list(self._metrics)), frozenset(cancelled))


class EntryPrefix(Sequence[SessionEntry]):
    """The first ``n`` entries of a list, without copying them (``MarkerIndex.update`` reads only the end)."""

    __slots__ = ("_entries", "_n")

    def __init__(self, entries: Sequence[SessionEntry], n: int) -> None:
        self._entries = entries
        self._n = min(n, len(entries))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[SessionEntry]:
        return itertools.islice(self._entries, self._n)

    @overload
    def __getitem__(self, index: int) -> SessionEntry: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEntry]: ...

    def __getitem__(self, index: int | slice) -> SessionEntry | Sequence[SessionEntry]:
        if isinstance(index, slice):
            return self._entries[slice(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(index)
        return self._entries[index]


def read_markers(entries: Sequence[SessionEntry]) -> MarkerBundle:
    """Bucket the mulligan markers of a session (all branches), dropping cancelled rewinds and shrinks.

    Turn metrics come newest (highest seq) first; malformed entries are skipped.
    """
    return MarkerIndex().update(entries).bundle()


def cancelled_target_ids(entries: Iterable[SessionEntry]) -> set[str]:
    """Marker uuids retired by a ``mulligan:cancel`` entry."""
    out: set[str] = set()
    for entry in entries:
        if isinstance(entry, CustomEntry) and entry.custom_type == CANCEL and isinstance(entry.data, Mapping):
            target = entry.data.get("targetId")
            if isinstance(target, str) and target:
                out.add(target)
    return out


def marker_uuid(entry: SessionEntry) -> str | None:
    """The uuid ``data.id`` of a rewind or shrink marker entry, or None."""
    if (
        isinstance(entry, CustomEntry)
        and entry.custom_type in (REWIND, SHRINK)
        and isinstance(entry.data, Mapping)
    ):
        value = entry.data.get("id")
        if isinstance(value, str) and value:
            return value
    return None


# --------------------------------------------------------------------------------------------------
# Appending (the only writes mulligan makes, besides the note and checkpoint labels)


class MarkerWriter:
    """Appends markers with the shared envelope; ``seq`` comes from the session's runtime counter.

    Payload keys are persisted as given (leave a key out for "absent"; ``None`` is written as ``null``).
    Every method returns the new entry's id, or None when the host refused (it never raises).
    """

    def __init__(self, api: ExtensionAPI, next_seq: Callable[[], int]) -> None:
        self._api = api
        self._next_seq = next_seq

    def _append(self, custom_type: str, kind: str, payload: Mapping[str, Any], with_id: bool) -> str | None:
        try:
            data: dict[str, Any] = dict(payload)
            data.update(schema=SCHEMA, v=1, kind=kind)
            if with_id:
                data["id"] = str(uuid.uuid4())
            data["seq"] = self._next_seq()
            data["ts"] = now_ms()
            entry_id = self._api.append_entry(custom_type, data)
            return entry_id if isinstance(entry_id, str) and entry_id else None
        except Exception:  # fail open (pi-mulligan's rule): no marker is written, the caller reports None
            return None

    def rewind(self, payload: Mapping[str, Any]) -> str | None:
        return self._append(REWIND, "rewind", payload, with_id=True)

    def shrink(self, payload: Mapping[str, Any]) -> str | None:
        return self._append(SHRINK, "shrink", payload, with_id=True)

    def turn_metric(self, payload: Mapping[str, Any]) -> str | None:
        return self._append(TURN_METRIC, "turn-metric", payload, with_id=False)

    def cancel(self, target_id: str) -> str | None:
        return self._append(CANCEL, "cancel", {"targetId": target_id}, with_id=False)


def leave_note(api: ExtensionAPI, content: str, rewind_id: str) -> None:
    """Send the rendered note as a displayed ``mulligan:note`` custom message (no new turn)."""
    try:
        api.send_message(
            NOTE,
            content,
            display=True,
            details={"schema": SCHEMA, "v": 1, "kind": "note", "rewindId": rewind_id},
        )
    except Exception:  # the note is a courtesy view of the marker already written; the rewind stands
        pass
