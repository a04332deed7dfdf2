"""Finding sessions on disk: the folder of a working directory, ``caddie session list`` rows, and the most
recent session (``--continue``). Only headers and message lines are read, never a whole tree."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie import untrusted
from caddie.config.paths import sessions_root
from caddie.untrusted import open_regular


def encode_cwd(cwd: str | Path) -> str:
    """The folder name for a working directory: ``/home/me/proj`` → ``--home-me-proj--`` (Pi's scheme)."""
    resolved = str(Path(cwd).expanduser().resolve())
    trimmed = resolved[1:] if resolved[:1] in ("/", "\\") else resolved
    return "--" + trimmed.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def default_session_dir(cwd: str | Path) -> Path:
    return sessions_root() / encode_cwd(cwd)


@dataclass(slots=True)
class SessionSummary:
    """One row of ``caddie session list``."""

    path: Path
    id: str
    cwd: str
    created: str
    modified: float
    """Last activity, seconds since the epoch."""
    message_count: int
    entry_count: int
    first_message: str
    name: str | None
    size: int
    parent: str | None = None
    """The session file this one was forked from (the header's ``parentSession``)."""
    all_messages_text: str = ""
    """The text of every user and assistant message, space-joined: what the session picker's search
    reads, as Pi's."""


def summarize_file(path: Path) -> SessionSummary | None:
    """The row of one session file; None when it is not a session (or not a regular file: a FIFO named
    ``*.jsonl`` would block the listing, ``/dev/zero`` never end)."""
    try:
        with open_regular(path) as fh:
            raw = fh.read()
            stat = os.fstat(fh.fileno())
    except OSError:
        return None
    header: dict[str, Any] | None = None
    count = 0
    entry_count = 0
    first = ""
    texts: list[str] = []
    name: str | None = None
    last_activity = 0.0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = untrusted.loads(line.decode("utf-8", "replace"))  # a line nested too deeply is skipped
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if header is None:
            if obj.get("type") != "session":
                return None
            header = obj
            continue
        entry_count += 1
        kind = obj.get("type")
        if kind == "session_info":
            name = (obj.get("name") or "").strip() or None
        if kind != "message":
            continue
        count += 1
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        ts = message.get("timestamp")
        if isinstance(ts, int | float) and ts / 1000 > last_activity:
            last_activity = ts / 1000
        if message.get("role") not in ("user", "assistant"):
            continue
        text = _message_text(message.get("content"))
        if not text:
            continue
        texts.append(text)
        if not first and message.get("role") == "user":
            first = text
    if header is None:
        return None
    return SessionSummary(
        path=path,
        id=str(header.get("id", "")),
        cwd=str(header.get("cwd", "")),
        created=str(header.get("timestamp", "")),
        modified=last_activity or stat.st_mtime,
        message_count=count,
        entry_count=entry_count,
        first_message=" ".join(first.split()) or "(no messages)",
        name=name,
        size=stat.st_size,
        parent=header.get("parentSession") if isinstance(header.get("parentSession"), str) else None,
        all_messages_text=" ".join(texts),
    )


def _message_text(content: Any) -> str:
    """A message's text: its string content, or its text blocks space-joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def list_sessions(cwd: str | Path, session_dir: str | Path | None = None) -> list[SessionSummary]:
    """The sessions of ``cwd``, most recently active first."""
    directory = Path(session_dir) if session_dir else default_session_dir(cwd)
    if not directory.is_dir():
        return []
    summaries = [s for s in (summarize_file(p) for p in directory.glob("*.jsonl")) if s is not None]
    if session_dir:
        resolved = str(Path(cwd).expanduser().resolve())
        summaries = [s for s in summaries if s.cwd == resolved]
    summaries.sort(key=lambda s: s.modified, reverse=True)
    return summaries


def latest_session_file(cwd: str | Path, session_dir: str | Path | None = None) -> Path | None:
    """The session file of ``cwd`` modified last (by file time: cheap even for huge sessions)."""
    directory = Path(session_dir) if session_dir else default_session_dir(cwd)
    if not directory.is_dir():
        return None
    files = [p for p in directory.glob("*.jsonl") if p.is_file()]  # is_file: regular files only
    if session_dir:
        resolved = str(Path(cwd).expanduser().resolve())
        files = [p for p in files if _header_cwd(p) == resolved]
    return max(files, key=lambda p: p.stat().st_mtime_ns, default=None)


def _header_cwd(path: Path) -> str | None:
    try:
        with open_regular(path) as f:
            obj = untrusted.loads(f.readline().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    return obj.get("cwd") if isinstance(obj, dict) and obj.get("type") == "session" else None
