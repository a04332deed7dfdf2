"""Session files are locked by their writer: a second process never repairs (truncates) a file another
process is still writing, a second writer is refused with one line naming the other process, and read-only
views open without the lock. Every test here uses real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from caddie.ai.messages import AssistantMessage, TextContent, UserMessage
from caddie.session.entries import CustomEntry
from caddie.session.store import SessionLockedError, SessionStore

BIG = 16 * 1024 * 1024  # each large entry: big enough that its write takes a while
BIG_WRITES = 4

WRITER = textwrap.dedent(
    """
    import sys
    from caddie.ai.messages import AssistantMessage, TextContent, UserMessage
    from caddie.session.store import SessionStore

    store = SessionStore.create(sys.argv[1], sys.argv[2])
    store.append_message(UserMessage([TextContent("hello")]))
    store.append_message(AssistantMessage([TextContent("hi")], api="faux", provider="faux", model="echo"))
    for i in range(9):
        store.append_custom("note", {"n": i})
    print(store.path, flush=True)
    for command in sys.stdin:
        command = command.strip()
        if command == "big":
            store.append_custom("big", {"blob": "x" * int(sys.argv[3])})
        elif command == "half":  # a write in progress: half a line, no newline yet
            with open(store.path, "ab") as f:
                f.write(b'{"type":"custom","id":"half0001","parentId":null,"timestamp":"2026-')
        elif command == "finish":
            with open(store.path, "ab") as f:
                f.write(b'12-01T00:00:00.000Z","customType":"late","data":1}\\n')
        elif command == "more":
            store.append_custom("after", {"n": 1})
        print("ok", flush=True)
    """
)

OPENER = textwrap.dedent(
    """
    import json, os, sys
    from caddie.session.store import SessionFileError, SessionStore

    path, stop = sys.argv[1], sys.argv[2]
    opened = refused = 0
    message = None
    seen = -1
    while not os.path.exists(stop):
        size = os.stat(path).st_size
        if size == seen:
            continue
        seen = size
        with open(path, "rb") as f:
            f.seek(max(0, size - 1))
            if f.read(1) == b"\\n" and opened + refused > 0:
                continue  # only a write in progress is interesting (what -c at start-up may run into)
        try:
            SessionStore.open(path).close()  # repair on, as caddie -c does
            opened += 1
        except SessionFileError as e:
            refused += 1
            message = message or str(e)
    print(json.dumps({"opened": opened, "refused": refused, "message": message}))
    """
)


class Writer:
    def __init__(self, tmp_path: Path, big: int = BIG) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(tmp_path / "sessions"), str(big)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.path = Path(self.proc.stdout.readline().strip())

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _types(path: Path) -> list[str]:
    store = SessionStore.open(path, repair=False)
    return [e.custom_type if isinstance(e, CustomEntry) else e.type for e in store.entries()]


def test_a_second_process_opening_with_repair_during_a_large_append_loses_nothing(tmp_path: Path) -> None:
    writer = Writer(tmp_path)
    stop = tmp_path / "stop"
    opener = subprocess.Popen(
        [sys.executable, "-c", OPENER, str(writer.path), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(0.5)  # the opener is watching the file
        for _ in range(BIG_WRITES):
            writer.send("big")
        writer.send("more")
    finally:
        stop.touch()
        out, _ = opener.communicate(timeout=60)
        writer.close()
    report = json.loads(out)

    types = _types(writer.path)
    assert types == ["message", "message", *["note"] * 9, *["big"] * BIG_WRITES, "after"]
    assert not writer.path.with_name(writer.path.name + ".torn").exists()
    assert report["opened"] == 0 and report["refused"] > 0
    assert f"pid {writer.proc.pid}" in report["message"]


def test_a_torn_tail_being_written_is_not_repaired_by_a_second_process(tmp_path: Path) -> None:
    writer = Writer(tmp_path, big=10)
    try:
        writer.send("half")
        before = writer.path.read_bytes()
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from caddie.session.store import SessionStore; SessionStore.open(sys.argv[1])",
                str(writer.path),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode != 0 and "SessionLockedError" in result.stderr
        assert f"pid {writer.proc.pid}" in result.stderr
        assert writer.path.read_bytes() == before  # nothing cut off, nothing moved aside
        writer.send("finish")
        writer.send("more")
    finally:
        writer.close()
    assert _types(writer.path) == ["message", "message", *["note"] * 9, "late", "after"]


def test_caddie_continue_is_refused_with_one_line_naming_the_writer_and_views_still_work(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    writer = Writer(project)
    try:
        env = {**os.environ, "NO_COLOR": "1"}
        base = [sys.executable, "-m", "caddie"]
        result = subprocess.run(
            [*base, "-p", "-c", "--session-dir", str(project / "sessions"), "--model", "faux/echo", "hi"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2
        assert len(result.stderr.splitlines()) == 1, result.stderr
        [line] = result.stderr.splitlines()
        assert f"pid {writer.proc.pid}" in line and "caddie session show" in line
        for view in (["session", "show"], ["session", "tree"], ["context"]):
            shown = subprocess.run(
                [*base, *view, str(writer.path)],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert shown.returncode == 0, shown.stderr
        exported = subprocess.run(
            [*base, "export", str(writer.path), "-o", str(tmp_path / "page.html")],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert exported.returncode == 0, exported.stderr
    finally:
        writer.close()
    # the writer is gone: its lock went with it
    SessionStore.open(writer.path).close()


def test_one_process_may_reopen_its_own_session_and_close_releases_the_lock(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path / "s")
    store.append_message(UserMessage([TextContent("hello")]))
    store.append_message(AssistantMessage([TextContent("hi")], api="faux", provider="faux", model="echo"))
    assert store.locked and store.path is not None
    again = SessionStore.open(store.path)  # same process: shared
    probe = [
        sys.executable,
        "-c",
        "import sys; from caddie.session.store import SessionStore; SessionStore.open(sys.argv[1])",
        str(store.path),
    ]
    assert subprocess.run(probe, capture_output=True, timeout=30).returncode != 0
    store.close()
    assert subprocess.run(probe, capture_output=True, timeout=30).returncode != 0  # `again` still holds it
    again.close()
    assert subprocess.run(probe, capture_output=True, timeout=30).returncode == 0


def test_a_migrated_file_stays_locked(tmp_path: Path) -> None:
    v1 = tmp_path / "old.jsonl"
    v1.write_text(
        json.dumps({"type": "session", "id": "s-old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/x"})
        + "\n"
        + json.dumps(
            {
                "type": "message",
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": "hi", "timestamp": 1},
            }
        )
        + "\n"
    )
    store = SessionStore.open(v1)
    assert json.loads(v1.read_text().splitlines()[0])["version"] == 3  # rewritten
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from caddie.session.store import SessionStore; SessionStore.open(sys.argv[1])",
            str(v1),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert "SessionLockedError" in probe.stderr
    store.close()


def test_locked_error_is_a_session_file_error() -> None:
    assert issubclass(SessionLockedError, Exception)
