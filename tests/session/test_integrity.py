"""Duplicate entry ids and parent cycles: found on load, reported by file and line, and every view of the
session stays finite (each view runs under a timeout: a regression hangs, it does not pass)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.session.branch_summary import collect_entries_for_branch_summary
from caddie.session.store import SessionStore

TIMEOUT = 20.0
CWD = "/tmp/integrity-project"


def _user(entry_id: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-11-30T15:21:{second:02d}.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1793613600000 + second * 1000},
    }


def _assistant(entry_id: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-11-30T15:21:{second:02d}.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "openai-completions",
            "provider": "faux",
            "model": "echo",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
            "stopReason": "stop",
            "timestamp": 1793613600000 + second * 1000,
        },
    }


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {
        "type": "session",
        "version": 3,
        "id": "s-1",
        "timestamp": "2026-11-30T15:21:00.000Z",
        "cwd": CWD,
    }
    path.write_text("".join(json.dumps(o) + "\n" for o in [header, *entries]))
    return path


def duplicate_ids(tmp_path: Path) -> Path:
    """Line 4 reuses line 2's id and names line 3 as its parent: with "the last entry with an id wins",
    a ⇄ b is a cycle."""
    return _write(
        tmp_path / "dup.jsonl",
        [
            _user("aaaa0001", None, "first", 1),
            _assistant("bbbb0002", "aaaa0001", "one", 2),
            _user("aaaa0001", "bbbb0002", "second", 3),
            _assistant("cccc0003", "aaaa0001", "two", 4),
        ],
    )


def parent_cycle(tmp_path: Path) -> Path:
    """Lines 3 and 4 name each other as parents; line 5 names itself."""
    return _write(
        tmp_path / "cycle.jsonl",
        [
            _user("aaaa0001", None, "first", 1),
            _assistant("bbbb0002", "cccc0003", "one", 2),
            _user("cccc0003", "bbbb0002", "second", 3),
            _assistant("dddd0004", "dddd0004", "two", 4),
        ],
    )


CRAFTED = [duplicate_ids, parent_cycle]


class Hung(Exception):
    pass


@pytest.fixture(autouse=True)
def deadline() -> Iterator[None]:
    """In-process views get TIMEOUT seconds too (a pure-Python loop is interrupted by the alarm)."""

    def expire(signum: int, frame: object) -> None:
        raise Hung(f"still running after {TIMEOUT} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_caddie(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "caddie", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_duplicates_are_reported_by_line(tmp_path: Path) -> None:
    path = duplicate_ids(tmp_path)
    store = SessionStore.open(path, repair=False)
    assert any(f"{path}:4:" in w and "aaaa0001" in w and "line 2" in w for w in store.warnings), (
        store.warnings
    )


def test_cycles_and_self_parents_are_reported_by_line(tmp_path: Path) -> None:
    path = parent_cycle(tmp_path)
    store = SessionStore.open(path, repair=False)
    assert any(f"{path}:3:" in w and "cccc0003" in w for w in store.warnings), store.warnings
    assert any(f"{path}:5:" in w and "itself as its parent" in w for w in store.warnings), store.warnings


@pytest.mark.parametrize("craft", CRAFTED)
def test_the_tree_holds_every_entry_once(tmp_path: Path, craft: Any) -> None:
    store = SessionStore.open(craft(tmp_path), repair=False)
    seen: list[int] = []
    stack = list(store.tree())
    while stack and len(seen) <= len(store):
        node = stack.pop()
        seen.append(id(node.entry))
        stack.extend(node.children)
    assert sorted(seen) == sorted(id(e) for e in store.entries())


@pytest.mark.parametrize("craft", CRAFTED)
def test_branch_walks_and_branch_summaries_end(tmp_path: Path, craft: Any) -> None:
    store = SessionStore.open(craft(tmp_path), repair=False)
    for entry in store.entries():
        path = store.branch(entry.id)
        assert len(path) <= len(store) and path[-1].id == entry.id
        for other in store.entries():
            collected = collect_entries_for_branch_summary(store, entry.id, other.id)
            assert len(collected.entries) <= len(store)
    assert store.build_context().messages


@pytest.mark.parametrize("craft", CRAFTED)
def test_session_tree_show_context_and_export_finish(tmp_path: Path, craft: Any) -> None:
    path = craft(tmp_path)
    for args in (["session", "tree", str(path)], ["session", "show", str(path)], ["context", str(path)]):
        result = run_caddie(tmp_path, *args)
        assert result.returncode == 0, result.stderr
        assert f"{path}:" in result.stderr  # the finding is shown, with file and line
    result = run_caddie(tmp_path, "export", str(path), "-o", str(tmp_path / "page.html"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "page.html").stat().st_size > 0


@pytest.mark.parametrize("craft", CRAFTED)
def test_rpc_get_tree_answers(tmp_path: Path, craft: Any) -> None:
    path = craft(tmp_path)
    result = run_caddie(
        tmp_path,
        "--mode",
        "rpc",
        "--model",
        "faux/echo",
        "--session",
        str(path),
        stdin=json.dumps({"id": "t", "type": "get_tree"}) + "\n",
    )
    responses = [json.loads(line) for line in result.stdout.splitlines() if '"response"' in line]
    [tree] = [r for r in responses if r.get("id") == "t"]
    assert tree["success"] is True

    def count(nodes: list[dict[str, Any]]) -> int:
        return sum(1 + count(n["children"]) for n in nodes)

    assert count(tree["data"]["tree"]) == 4
