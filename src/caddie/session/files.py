"""Session files on disk: the write lock, whole-line writes, and loading (torn-line repair, migration to v3,
integrity checks). ``caddie.session.store`` explains the rules these implement.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie.ai import secrets
from caddie.errors import SessionStoreError
from caddie.session.entries import (
    CURRENT_SESSION_VERSION,
    EntryFormatError,
    SessionEntry,
    SessionHeader,
    decode_line,
    entry_from_json,
    new_entry_id,
)
from caddie.untrusted import MAX_JSON_DEPTH, NotRegularFileError, deep_lines, open_regular, utf8
from caddie.untrusted import loads as untrusted_json


class SessionFileError(SessionStoreError):
    """A session file that cannot be used; the message names the file (and line) and what is wrong."""


class SessionLockedError(SessionFileError):
    """Another process writes this session; the message names it and what to do instead."""


# --------------------------------------------------------------------------------------------------
# Locks


@dataclass(slots=True)
class SessionLock:
    """An exclusive ``flock`` on one session file, shared by every store of this process on that file."""

    fd: int
    key: tuple[int, int]
    users: int = 1


_LOCKS: dict[tuple[int, int], SessionLock] = {}


def _lock_key(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def lock_holder(file: Path) -> str | None:
    """``pid N: command`` of the process holding a ``flock`` on ``file`` (Linux ``/proc/locks``), if known."""
    try:
        inode = os.stat(file).st_ino
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            rows = f.read().splitlines()
    except OSError:
        return None
    for row in rows:
        fields = row.split()
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        pid, where = fields[4], fields[5]
        if where.rsplit(":", 1)[-1] != str(inode) or not pid.isdigit():
            continue
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return f"pid {pid}"
        command = " ".join(" ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0")).split())
        if len(command) > 100:
            command = command[:99] + "…"
        return f"pid {pid}: {command}" if command else f"pid {pid}"
    return None


def _locked_message(file: Path) -> str:
    holder = lock_holder(file)
    who = f"another process ({holder})" if holder else "another process"
    return (
        f"{file} is being written by {who}; only one caddie can write a session at a time. "
        f"Wait for it to finish, or look without writing: caddie session show {file}"
    )


def acquire_lock(file: Path, warnings: list[str]) -> SessionLock | None:
    """Lock ``file`` for writing (or share this process's lock on it). None when the file cannot be opened
    (loading it reports why) or the file system has no locks (a warning says so)."""
    for _ in range(5):
        try:  # O_NONBLOCK: opening a FIFO must not wait for a writer (loading it then says what it is)
            fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                return None
            key = _lock_key(st)
            held = _LOCKS.get(key)
            if held is not None:
                os.close(fd)
                held.users += 1
                return held
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise SessionLockedError(_locked_message(file)) from None
                warnings.append(
                    f"{file}: could not lock the file ({e.strerror or e}); another caddie writing it at the "
                    "same time would not be noticed"
                )
                os.close(fd)
                return None
            try:
                current = _lock_key(os.stat(file))
            except OSError:
                current = None
            if current != key:  # replaced while we waited (another writer's migration): lock the new one
                os.close(fd)
                continue
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise
        lock = SessionLock(fd, key)
        _LOCKS[key] = lock
        return lock
    raise SessionLockedError(_locked_message(file))


def _adopt(fd: int) -> SessionLock | None:
    """Lock a file this process just created (its name is new, so nobody else can hold it). None when the
    file system has no locks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    lock = SessionLock(fd, _lock_key(os.fstat(fd)))
    _LOCKS[lock.key] = lock
    return lock


def release_lock(lock: SessionLock) -> None:
    lock.users -= 1
    if lock.users <= 0 and _LOCKS.get(lock.key) is lock:
        del _LOCKS[lock.key]
        with contextlib.suppress(OSError):
            os.close(lock.fd)  # closing the last descriptor releases the flock


def json_line(obj: dict[str, Any]) -> bytes:
    """One session line, with every secret value caddie knows as ``[redacted]`` (a key a model or an
    extension put into a message is never persisted) and a lone surrogate that got this far as U+FFFD."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if secrets.mentions_known(text):
        text = json.dumps(secrets.redact_json(obj), ensure_ascii=False, separators=(",", ":"))
    return utf8(text + "\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def append_bytes(path: Path, data: bytes) -> None:
    """Append whole lines: a write that fails half-way (disk full) is cut back, so the file never ends in a
    fragment that the next line would be glued to."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def create_file(path: Path, data: bytes) -> SessionLock | None:
    """Write ``data`` to a new file (its folder exists; the file must not), locked from the first byte on.
    The lock (None when the file system has no locks) is the caller's to hold; a failed write removes the
    file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    lock = _adopt(fd)  # held from the first byte on, for the store's life
    try:
        _write_all(fd, data)
    except BaseException:
        if lock is not None:
            release_lock(lock)
        else:
            os.close(fd)
        path.unlink(missing_ok=True)
        raise
    if lock is None:
        os.close(fd)
    return lock


def replace_file(path: Path, data: bytes, lock: SessionLock | None) -> None:
    """Replace ``path`` with ``data`` atomically; ``lock`` (this process's lock on the old file) moves to
    the new one."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with contextlib.suppress(OSError):  # (a file system without locks: the rewrite still happens)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked before it takes the name
        _write_all(fd, data)
        os.replace(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if lock is not None and _LOCKS.get(lock.key) is lock:  # move this process's lock to the new file
        del _LOCKS[lock.key]
        with contextlib.suppress(OSError):
            os.close(lock.fd)
        lock.fd, lock.key = fd, _lock_key(os.fstat(fd))
        _LOCKS[lock.key] = lock
    else:
        os.close(fd)


# --------------------------------------------------------------------------------------------------
# Loading


def load_file(
    file: Path, *, repair: bool = True
) -> tuple[SessionHeader, list[SessionEntry], list[str], bool]:
    try:
        with open_regular(file) as fh:  # never a FIFO (it would block) or a device (/dev/zero never ends)
            raw = fh.read()
    except FileNotFoundError:
        raise SessionFileError(f"{file}: no such session file") from None
    except IsADirectoryError:
        raise SessionFileError(f"{file}: is a directory, not a session file") from None
    except NotRegularFileError as e:
        raise SessionFileError(f"{file}: {not_regular_message(e)}") from None
    except OSError as e:
        raise SessionFileError(f"{file}: cannot be read ({e.strerror or e})") from None
    if not raw.strip():
        raise SessionFileError(f"{file}: the file is empty, not a session")

    # Line boundaries as (start, end) offsets into one buffer: no copy of the file per line.
    spans: list[tuple[int, int]] = []
    start, size = 0, len(raw)
    while start < size:
        end = raw.find(b"\n", start)
        if end < 0:
            end = size
        spans.append((start, end))
        start = end + 1
    torn_tail = not raw.endswith(b"\n")
    view = memoryview(raw)
    warnings: list[str] = []

    first = next((i for i, (a, b) in enumerate(spans) if view[a:b].tobytes().strip()), None)
    too_deep = deep_lines(raw, spans)  # lines nested deeper than caddie reads: skipped and reported
    header_obj: object = None
    if first is not None and first not in too_deep:
        try:
            header_obj = decode_line(view[spans[first][0] : spans[first][1]])
        except (ValueError, EntryFormatError):
            header_obj = None
    if not isinstance(header_obj, SessionHeader) or not header_obj.id:
        raise SessionFileError(f"{file}: not a session file (line 1 is not a session header)")
    header = header_obj
    assert first is not None
    last = len(spans) - 1

    def torn(index: int) -> bool:
        return index == last and torn_tail

    migrated = header.version < CURRENT_SESSION_VERSION
    entries: list[SessionEntry] = []
    lines: list[int] = []
    repaired = False
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of acyclic objects: collection passes would only cost time
    try:
        if migrated:
            objects: list[tuple[int, dict[str, Any]]] = []
            for index in range(first + 1, len(spans)):
                a, b = spans[index]
                if not view[a:b].tobytes().strip():
                    continue
                if index in too_deep:
                    warnings.append(_too_deep_warning(file, index))
                    continue
                try:
                    obj = untrusted_json(view[a:b].tobytes().decode("utf-8", "replace"))
                except ValueError as e:
                    if torn(index):
                        repaired = True
                        warnings.append(_torn_warning(file, index))
                        continue
                    raise SessionFileError(f"{file}:{index + 1}: not valid JSON ({_reason(e)})") from None
                if not isinstance(obj, dict):
                    raise SessionFileError(f"{file}:{index + 1}: expected a JSON object")
                objects.append((index + 1, obj))
            for lineno, obj in _migrate(objects, header.version):
                try:
                    entries.append(entry_from_json(obj))
                    lines.append(lineno)
                except EntryFormatError as e:
                    raise SessionFileError(f"{file}:{lineno}: {e}") from None
            header.version = CURRENT_SESSION_VERSION
        else:
            for index in range(first + 1, len(spans)):
                a, b = spans[index]
                if b - a < 2 and not view[a:b].tobytes().strip():
                    continue
                if index in too_deep:
                    warnings.append(_too_deep_warning(file, index))
                    continue
                try:
                    entry = decode_line(view[a:b])
                except EntryFormatError as e:
                    raise SessionFileError(f"{file}:{index + 1}: {e}") from None
                except ValueError as e:
                    if not view[a:b].tobytes().strip():
                        continue
                    if torn(index):
                        repaired = True
                        warnings.append(_torn_warning(file, index))
                        continue
                    raise SessionFileError(f"{file}:{index + 1}: not valid JSON ({_reason(e)})") from None
                if isinstance(entry, SessionHeader):
                    raise SessionFileError(f"{file}:{index + 1}: a second session header")
                entries.append(entry)
                lines.append(index + 1)
    finally:
        if gc_was_enabled:
            gc.enable()
    try:
        if repaired and repair:
            # Move the unusable fragment aside (nothing is thrown away) so the file ends on a whole line.
            fragment_start = spans[last][0]
            with (file.parent / (file.name + ".torn")).open("ab") as aside:
                aside.write(raw[fragment_start:] + b"\n")
            os.truncate(file, fragment_start)
            warnings[-1] += f"; its bytes were moved to {file.name}.torn"
        elif torn_tail and repair:
            append_bytes(file, b"\n")  # a complete last line without its newline: keep it, end it
    except OSError as e:
        warnings.append(f"{file}: could not repair the file ({e.strerror or e}); it is used as it is")
    warnings += integrity_warnings(file, entries, lines)
    return header, entries, warnings, migrated


MAX_INTEGRITY_WARNINGS = 10


def integrity_warnings(file: Path, entries: list[SessionEntry], lines: list[int]) -> list[str]:
    """Duplicate ids, self parents and forward parent links (cycles), one line each, by file and line."""
    first: dict[str, int] | None = None  # id → first line, built only when a parent link needs it
    seen: dict[str, int] = {}
    found: list[str] = []
    for entry, line in zip(entries, lines, strict=True):
        parent = entry.parent_id
        if parent is not None and parent not in seen:
            if parent == entry.id:
                found.append(
                    f"{file}:{line}: entry {entry.id} names itself as its parent; it is shown as a root"
                )
            else:
                if first is None:
                    first = {}
                    for e, n in zip(entries, lines, strict=True):
                        first.setdefault(e.id, n)
                if parent in first:
                    found.append(
                        f"{file}:{line}: entry {entry.id} names {parent} as its parent, which only comes "
                        f"later (line {first[parent]}): a cycle; it is shown as a root"
                    )
        if entry.id in seen:
            found.append(
                f"{file}:{line}: entry id {entry.id} is used again (already on line {seen[entry.id]}); "
                "each entry's parent is taken to be the nearest entry above it with that id"
            )
        seen[entry.id] = line
    if len(found) > MAX_INTEGRITY_WARNINGS:
        more = len(found) - MAX_INTEGRITY_WARNINGS
        found = [*found[:MAX_INTEGRITY_WARNINGS], f"{file}: … and {more} more problems like these"]
    return found


def not_regular_message(error: NotRegularFileError) -> str:
    return (
        f"it is {error.kind}, not a regular file; sessions are read only from regular files "
        "(reading this one could block or never end)"
    )


def _too_deep_warning(file: Path, index: int) -> str:
    return (
        f"{file}:{index + 1}: the line is nested more than {MAX_JSON_DEPTH} levels deep, deeper than caddie "
        "reads; it was skipped"
    )


def _torn_warning(file: Path, index: int) -> str:
    return (
        f"{file}: the last line (line {index + 1}) was cut off, probably by a crash; "
        "it was skipped and everything before it was kept"
    )


def _reason(e: ValueError) -> str:
    return e.msg if isinstance(e, json.JSONDecodeError) else str(e)


def _migrate(body: list[tuple[int, dict[str, Any]]], version: int) -> list[tuple[int, dict[str, Any]]]:
    """v1 (linear, no ids) → v2 (tree) → v3 (``hookMessage`` role renamed ``custom``)."""
    if version < 2:
        taken: set[str] = set()
        previous: str | None = None
        ordered = [obj for _, obj in body]
        for obj in ordered:
            obj["id"] = new_entry_id(taken)
            taken.add(obj["id"])
            obj["parentId"] = previous
            previous = obj["id"]
        for obj in ordered:
            index = obj.pop("firstKeptEntryIndex", None) if obj.get("type") == "compaction" else None
            # v1 indices counted the header as entry 0
            if isinstance(index, int) and 1 <= index <= len(ordered):
                obj["firstKeptEntryId"] = ordered[index - 1]["id"]
    for _, obj in body:
        message = obj.get("message")
        if (
            obj.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            message["role"] = "custom"
    return body
