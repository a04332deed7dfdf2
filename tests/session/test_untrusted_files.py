"""Session files caddie did not write, or that are not files at all: a FIFO or a device is refused at once
(never opened for a blocking or endless read), a line nested too deeply is one skipped and reported line,
and the lone surrogate escapes Pi writes for half an emoji load as U+FFFD."""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from caddie.ai.messages import TextContent, UserMessage
from caddie.session.entries import MessageEntry
from caddie.session.listing import summarize_file
from caddie.session.store import SessionFileError, SessionStore, list_sessions

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'


def entry(eid: str, parent: str | None, text: str) -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    obj = {"type": "message", "id": eid, "parentId": parent, "timestamp": "t", "message": message}
    return json.dumps(obj) + "\n"


def in_thread(work: Callable[[], object], timeout: float = 5.0) -> object:
    """Run ``work()`` on a daemon thread; a hang fails the test instead of blocking the suite."""
    box: list[object] = []

    def run() -> None:
        try:
            box.append(work())
        except Exception as e:
            box.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "hung"
    return box[0]


@pytest.mark.parametrize("repair", [True, False])
def test_a_fifo_or_a_device_is_refused_without_reading(tmp_path: Path, repair: bool) -> None:
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a named pipe (FIFO)"), (Path("/dev/zero"), "a character device")):
        error = in_thread(functools.partial(SessionStore.open, path, repair=repair))
        assert isinstance(error, SessionFileError)
        assert str(error) == (
            f"{path}: it is {kind}, not a regular file; sessions are read only from regular files "
            "(reading this one could block or never end)"
        )


def test_the_listing_skips_a_fifo_named_like_a_session(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        HEADER.replace('"/p"', json.dumps(str(tmp_path))) + entry("e1", None, "hi")
    )
    os.mkfifo(tmp_path / "b.jsonl")
    rows = in_thread(lambda: list_sessions(tmp_path, tmp_path))
    assert isinstance(rows, list) and [r.path.name for r in rows] == ["a.jsonl"]
    assert in_thread(lambda: summarize_file(tmp_path / "b.jsonl")) is None


def test_a_line_nested_too_deeply_is_skipped_and_reported(tmp_path: Path) -> None:
    deep = (
        '{"type":"custom","id":"d1","parentId":"e1","timestamp":"t","customType":"x","data":' + "[" * 50_000
    )
    deep += "]" * 50_000 + "}\n"
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER + entry("e1", None, "first") + deep + entry("e2", "e1", "second"))
    for repair in (False, True):
        store = SessionStore.open(path, repair=repair)
        assert [e.id for e in store.entries()] == ["e1", "e2"]
        assert store.warnings == [
            f"{path}:3: the line is nested more than 200 levels deep, deeper than caddie reads; it was skipped"
        ]
    summary = summarize_file(path)  # the listing skips it too
    assert summary is not None and summary.entry_count == 2


def test_lone_surrogate_escapes_written_by_pi_load_as_u_fffd(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER + entry("e1", None, "half \ud83d emoji").replace("\\ud83d", "\\ud83d"))
    assert "\\ud83d" in path.read_text()
    store = SessionStore.open(path)
    [only] = store.entries()
    assert isinstance(only, MessageEntry) and isinstance(only.message, UserMessage)
    assert only.message.content == [TextContent("half \ufffd emoji")]
    summary = summarize_file(path)
    assert summary is not None and summary.first_message == "half \ufffd emoji"
