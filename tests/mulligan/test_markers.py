"""Persisted markers: the envelope they are appended with, and how they are read back."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from caddie.extensions.api import CustomEntry, CustomMessageEntry, LabelEntry, SessionEntry
from caddie.extensions.bundled.mulligan.markers import MarkerIndex, leave_note, read_markers
from tests.mulligan.fakehost import Harness


@pytest.fixture
def h() -> Harness:
    return Harness({})


def test_every_marker_kind_carries_the_envelope_and_a_shared_seq(h: Harness) -> None:
    w = h.mulligan.writer(h.ctx)
    ids = [
        w.rewind({"granularity": "last_turn"}),
        w.shrink({"replacement": "r"}),
        w.turn_metric({"turnIndex": 0}),
    ]
    ids.append(w.cancel("some-uuid"))
    entries = h.custom_entries()
    assert [e.id for e in entries] == ids
    assert [e.custom_type for e in entries] == [
        "mulligan:rewind",
        "mulligan:shrink",
        "mulligan:turn-metric",
        "mulligan:cancel",
    ]
    for n, e in enumerate(entries, start=1):
        assert e.data["schema"] == "pi-mulligan" and e.data["v"] == 1 and e.data["seq"] == n
        assert isinstance(e.data["ts"], int)
    assert [e.data["kind"] for e in entries] == ["rewind", "shrink", "turn-metric", "cancel"]
    assert entries[0].data["granularity"] == "last_turn" and entries[3].data["targetId"] == "some-uuid"


def test_only_rewinds_and_shrinks_get_a_uuid(h: Harness) -> None:
    w = h.mulligan.writer(h.ctx)
    w.rewind({}), w.rewind({}), w.shrink({}), w.turn_metric({}), w.cancel("x")
    data = [e.data for e in h.custom_entries()]
    assert all(str(uuid.UUID(d["id"])) == d["id"] for d in data[:3])
    assert data[0]["id"] != data[1]["id"]
    assert "id" not in data[3] and "id" not in data[4]


def test_the_payload_is_persisted_verbatim_nulls_included(h: Harness) -> None:
    h.mulligan.writer(h.ctx).turn_metric({"deltaTokens": None, "bloatHits": []})
    data = h.custom_entries()[0].data
    assert data["deltaTokens"] is None and data["bloatHits"] == []


def test_seq_is_per_session_and_restarts_after_a_reset() -> None:
    a, b = Harness({}, session_id="A"), Harness({}, session_id="B")
    a.mulligan.writer(a.ctx).rewind({})
    a.mulligan.writer(a.ctx).rewind({})
    b.mulligan.writer(b.ctx).rewind({})
    assert [e.data["seq"] for e in a.custom_entries()] == [1, 2]
    assert [e.data["seq"] for e in b.custom_entries()] == [1]
    a.session_start("reload")
    a.mulligan.writer(a.ctx).cancel("x")
    assert a.custom_entries()[-1].data["seq"] == 1


@pytest.mark.parametrize("failing", ["append_entry", "session_id"])
def test_a_failed_append_returns_none_and_never_raises(h: Harness, failing: str) -> None:
    h.host.fail[failing] = RuntimeError("boom")
    w = h.mulligan.writer(h.ctx)
    assert (w.rewind({}), w.shrink({}), w.turn_metric({}), w.cancel("x")) == (None, None, None, None)


def test_each_append_writes_exactly_one_entry(h: Harness) -> None:
    h.mulligan.writer(h.ctx).rewind({})
    assert h.host.calls == ["append_entry"]


def test_leave_note_sends_one_displayed_message_and_appends_nothing(h: Harness) -> None:
    leave_note(h.api, "the note", "e0000009")
    assert h.host.calls == ["send_message"]
    note = h.notes()[0]
    assert (note.content, note.display) == ("the note", True)
    assert note.details == {"schema": "pi-mulligan", "v": 1, "kind": "note", "rewindId": "e0000009"}


def test_leave_note_swallows_failures(h: Harness) -> None:
    h.host.fail["send_message"] = RuntimeError("boom")
    leave_note(h.api, "x", "y")


# --------------------------------------------------------------------------------------------------
# read_markers


def custom(entry_id: str, custom_type: str, data: Any) -> SessionEntry:
    return CustomEntry(entry_id, None, "t", custom_type, data)


def rw(entry_id: str, marker_id: str | None, seq: int = 1, **extra: Any) -> SessionEntry:
    data = {"kind": "rewind", "seq": seq, "granularity": "last_turn", **extra}
    if marker_id is not None:
        data["id"] = marker_id
    return custom(entry_id, "mulligan:rewind", data)


def sh(entry_id: str, marker_id: str, seq: int = 1) -> SessionEntry:
    return custom(
        entry_id,
        "mulligan:shrink",
        {"kind": "shrink", "id": marker_id, "seq": seq, "target": {}, "replacement": "r"},
    )


def metric(entry_id: str, seq: object, turn: int = 0) -> SessionEntry:
    return custom(entry_id, "mulligan:turn-metric", {"kind": "turn-metric", "seq": seq, "turnIndex": turn})


def cancel(entry_id: str, target: object) -> SessionEntry:
    return custom(entry_id, "mulligan:cancel", {"kind": "cancel", "targetId": target})


def test_an_empty_session_has_no_markers() -> None:
    bundle = read_markers([])
    assert (
        bundle.rewinds,
        bundle.shrinks,
        list(bundle.recent_metrics),
        bundle.metric,
        bundle.cancelled_ids,
    ) == (
        (),
        (),
        [],
        None,
        frozenset(),
    )


def test_rewinds_and_shrinks_are_bucketed() -> None:
    bundle = read_markers([rw("1", "r1"), sh("2", "s1"), rw("3", "r2", 2)])
    assert [r.id for r in bundle.rewinds] == ["r1", "r2"] and [s.id for s in bundle.shrinks] == ["s1"]


def test_metrics_come_newest_first_and_all_of_them() -> None:
    bundle = read_markers([metric("1", 1, 0), metric("2", 3, 2), metric("3", 2, 1), metric("4", "x", 9)])
    assert [m.turn_index for m in bundle.recent_metrics] == [2, 1, 0, 9]
    assert bundle.metric is bundle.recent_metrics[0]


def test_notes_labels_and_foreign_or_malformed_entries_are_ignored() -> None:
    entries: list[SessionEntry] = [
        CustomMessageEntry("n", None, "t", "mulligan:note", "note"),
        LabelEntry("l", None, "t", "x", "mulligan:checkpoint:a"),
        custom("f", "other:thing", {"kind": "rewind"}),
        custom("m1", "mulligan:rewind", "not an object"),
        custom("m2", "mulligan:rewind", {"kind": "shrink"}),
        custom("m3", "mulligan:future", {"kind": "future"}),
    ]
    bundle = read_markers(entries)
    assert bundle.rewinds == () and bundle.shrinks == () and len(bundle.recent_metrics) == 0


def test_cancels_drop_their_targets_wherever_they_are() -> None:
    entries = [
        cancel("0", "s1"),
        rw("1", "r1"),
        sh("2", "s1"),
        rw("3", "r2"),
        cancel("4", "r1"),
        cancel("5", "ghost"),
    ]
    bundle = read_markers(entries)
    assert [r.id for r in bundle.rewinds] == ["r2"] and bundle.shrinks == ()
    assert bundle.cancelled_ids == {"s1", "r1", "ghost"}


@pytest.mark.parametrize("target", [None, "", 5])
def test_malformed_cancels_are_skipped(target: object) -> None:
    assert read_markers([rw("1", "r1"), cancel("2", target)]).cancelled_ids == frozenset()


def test_a_marker_without_a_readable_id_is_kept() -> None:
    assert len(read_markers([rw("1", None), cancel("2", "r1")]).rewinds) == 1


def test_the_incremental_index_only_reads_new_entries_and_restarts_on_another_history() -> None:
    index = MarkerIndex()
    first: list[SessionEntry] = [rw("1", "r1"), LabelEntry("l", None, "t", "x", "y")]
    index.update(first)
    grown = [*first, cancel("2", "r1"), sh("3", "s1")]
    bundle = index.update(grown).bundle()
    assert bundle.rewinds == () and [s.id for s in bundle.shrinks] == ["s1"] and len(index.labels) == 1
    other = [sh("9", "s9")]
    assert [s.id for s in index.update(other).bundle().shrinks] == ["s9"] and index.labels == []
