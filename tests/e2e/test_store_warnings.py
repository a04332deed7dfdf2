"""What the session store found wrong with a file (a torn last line, duplicate ids, a failed repair) is shown
exactly once in every mode: stderr in print and json modes, a ``notice`` event in rpc, a toast in the TUI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from caddie.modes.interactive.conversation import InfoBlock
from caddie.runtime.session_events import NoticeEvent
from tests.tui.harness import SMALL, make_app, ready, until, widget_text


def _entry(entry_id: str, parent: str | None, role: str, text: str, second: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "timestamp": 1793613600000 + second * 1000}
    if role == "user":
        message["content"] = text
    else:
        message.update(
            content=[{"type": "text", "text": text}],
            api="faux",
            provider="faux",
            model="echo",
            usage={"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            stopReason="stop",
        )
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-11-30T15:21:{second:02d}.000Z",
        "message": message,
    }


def damaged_session(folder: Path, cwd: Path) -> Path:
    """Line 4 reuses line 2's id; the last line was cut off by a crash."""
    header = {
        "type": "session",
        "version": 3,
        "id": "s-1",
        "timestamp": "2026-11-30T15:21:00.000Z",
        "cwd": str(cwd),
    }
    lines = [
        header,
        _entry("aaaa0001", None, "user", "first", 1),
        _entry("bbbb0002", "aaaa0001", "assistant", "one", 2),
        _entry("aaaa0001", "bbbb0002", "user", "again", 3),
        _entry("cccc0003", "aaaa0001", "assistant", "two", 4),
    ]
    path = folder / "damaged.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines) + '{"type":"message","id":"dd')
    return path


TORN = "was cut off, probably by a crash"
DUPLICATE = "entry id aaaa0001 is used again"


def caddie(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "caddie", "--model", "faux/echo", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_print_mode_shows_each_warning_once_on_stderr(tmp_path: Path) -> None:
    path = damaged_session(tmp_path, tmp_path)
    result = caddie(tmp_path, "-p", "--session", str(path), "hello")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(TORN) == 1 and result.stderr.count(DUPLICATE) == 1, result.stderr
    assert TORN not in result.stdout


def test_json_mode_shows_each_warning_once_on_stderr(tmp_path: Path) -> None:
    path = damaged_session(tmp_path, tmp_path)
    result = caddie(tmp_path, "--mode", "json", "-p", "--session", str(path), "hello")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(TORN) == 1 and result.stderr.count(DUPLICATE) == 1, result.stderr
    assert TORN not in result.stdout  # stdout stays the event stream


def test_rpc_mode_sends_each_warning_once_as_a_notice_event(tmp_path: Path) -> None:
    path = damaged_session(tmp_path, tmp_path)
    result = caddie(
        tmp_path, "--mode", "rpc", "--session", str(path), stdin=json.dumps({"type": "get_state"}) + "\n"
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    notices = [e["message"] for e in events if e.get("type") == "notice" and e.get("level") == "warning"]
    assert sum(TORN in n for n in notices) == 1 and sum(DUPLICATE in n for n in notices) == 1, result.stdout
    assert TORN not in result.stderr


async def test_the_tui_shows_each_warning_once_as_a_notice(tmp_path: Path) -> None:
    path = damaged_session(tmp_path, tmp_path)
    app, _ = make_app(tmp_path, session="file", session_file=str(path))
    seen: list[str] = []
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        app.session.subscribe(lambda e: seen.append(e.message) if isinstance(e, NoticeEvent) else None)
        # notices are lines in the conversation, where they stay (docs/interactive.md)
        await until(
            pilot, lambda: sum(TORN in widget_text(b) for b in app.conversation.blocks_of(InfoBlock)) == 1
        )
        await app.session.start("resume")  # announced once per store, not on every start
        await pilot.pause()
        lines = [widget_text(b) for b in app.conversation.blocks_of(InfoBlock)]
    assert sum(TORN in t for t in lines) == 1 and sum(DUPLICATE in t for t in lines) == 1
    assert seen == []


def test_read_only_views_show_the_findings_and_never_repair(tmp_path: Path) -> None:
    path = damaged_session(tmp_path, tmp_path)
    before = path.read_bytes()
    for view in (
        ["session", "show"],
        ["session", "tree"],
        ["context"],
        ["export", "-o", str(tmp_path / "p.html")],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "caddie", *view[:2], str(path), *view[2:]]
            if view[0] == "session"
            else [sys.executable, "-m", "caddie", view[0], str(path), *view[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert result.stderr.count(TORN) == 1, (view, result.stderr)
        assert path.read_bytes() == before, view  # the torn tail is still there: only the writer repairs
        assert not path.with_name(path.name + ".torn").exists()
