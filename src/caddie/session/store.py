"""The session store: an append-only tree of entries in one JSONL file, in Pi's v3 format.

Line 1 is the header; every later line is one entry whose ``parentId`` points at the entry it follows.
The leaf (where the next entry attaches) is the last entry in file order when a file is opened, and moves
in memory when the user navigates the tree; it becomes durable with the next append.

Durability rules:
- A new session's file is written only once the first assistant message exists (as Pi does); until then
  entries are buffered in memory.
- Each append is one complete line written to an append-mode descriptor; an entry enters memory only once
  its line is written, and a write that fails half-way is cut back, so the file never holds a fragment.
- A file whose last line was torn by a crash opens with that line skipped and a warning; a newline is added
  so the next entry starts on a fresh line. Nothing before the torn line is lost.
- A corrupt line anywhere else is an error naming the file and the line number.

Locking: a process that writes a session holds an exclusive advisory lock (``flock``) on its file for as
long as the store is open (``close()``, or the process ending, releases it). ``open()`` takes the lock
*before* it reads, so a torn tail is only ever repaired by the one writer — never cut off under another
process that is still writing it. A second writer is refused with ``SessionLockedError``, naming the
process that holds the lock. Read-only opens (``repair=False``: ``session show``, ``context``, ``export``,
``tree``) take no lock and change nothing. Within one process the lock is shared, so reopening a file the
process already writes works.

Integrity: an entry id used twice, an entry that names itself as parent, and a parent link that points
forward in the file (the only way to make a cycle: parents are always written before their children) are
reported on load by file and line (``warnings``). The tree is then read the way it was written: an entry's
parent is the nearest entry *above* it with that id, and a forward or self link makes the entry a root. Every
parent is thus earlier in the file than its child, so every walk (branch, tree, context, export) ends.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import gc
import json
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Usage,
)
from caddie.config.paths import sessions_root
from caddie.session.context import (
    SessionContext,
    build_session_context,
    context_entries_of_path,
)
from caddie.session.entries import (
    CURRENT_SESSION_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    EntryFormatError,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    decode_line,
    entry_from_json,
    entry_to_json,
    iso_now,
    new_entry_id,
    new_session_id,
)

_json_decode = json.JSONDecoder().decode


class SessionFileError(Exception):
    """A session file that cannot be used; the message names the file (and line) and what is wrong."""


class SessionLockedError(SessionFileError):
    """Another process writes this session; the message names it and what to do instead."""


# --------------------------------------------------------------------------------------------------
# Locks


@dataclass(slots=True)
class _Lock:
    """An exclusive ``flock`` on one session file, shared by every store of this process on that file."""

    fd: int
    key: tuple[int, int]
    users: int = 1


_LOCKS: dict[tuple[int, int], _Lock] = {}


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


def _acquire(file: Path, warnings: list[str]) -> _Lock | None:
    """Lock ``file`` for writing (or share this process's lock on it). None when the file cannot be opened
    (loading it reports why) or the file system has no locks (a warning says so)."""
    for _ in range(5):
        try:
            fd = os.open(file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            key = _lock_key(os.fstat(fd))
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
        lock = _Lock(fd, key)
        _LOCKS[key] = lock
        return lock
    raise SessionLockedError(_locked_message(file))


def _adopt(fd: int) -> _Lock | None:
    """Lock a file this process just created (its name is new, so nobody else can hold it). None when the
    file system has no locks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return None
    lock = _Lock(fd, _lock_key(os.fstat(fd)))
    _LOCKS[lock.key] = lock
    return lock


def _release(lock: _Lock) -> None:
    lock.users -= 1
    if lock.users <= 0 and _LOCKS.get(lock.key) is lock:
        del _LOCKS[lock.key]
        with contextlib.suppress(OSError):
            os.close(lock.fd)  # closing the last descriptor releases the flock


def encode_cwd(cwd: str | Path) -> str:
    """The folder name for a working directory: ``/home/me/proj`` → ``--home-me-proj--`` (Pi's scheme)."""
    resolved = str(Path(cwd).expanduser().resolve())
    trimmed = resolved[1:] if resolved[:1] in ("/", "\\") else resolved
    return "--" + trimmed.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def default_session_dir(cwd: str | Path) -> Path:
    return sessions_root() / encode_cwd(cwd)


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass(slots=True)
class TreeNode:
    entry: SessionEntry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


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


class SessionStore:
    """One session tree, in memory and (unless in-memory) in its file."""

    def __init__(
        self,
        header: SessionHeader,
        path: Path | None,
        entries: list[SessionEntry] | None = None,
        *,
        flushed: bool = False,
        warnings: list[str] | None = None,
    ) -> None:
        self.header = header
        self.path = path
        self.warnings: list[str] = warnings or []
        self._entries: list[SessionEntry] = []
        self._by_id: dict[str, SessionEntry] = {}
        """Id → the last entry with that id (as Pi's lookup)."""
        self._pos: dict[str, int] = {}
        """Id → index in ``_entries`` of the last entry with that id."""
        self._parent_index: list[int] = []
        """Per entry: the index of its parent (always smaller than its own), -1 for a root."""
        self._labels: dict[str, str] = {}
        self._label_times: dict[str, str] = {}
        self._leaf_id: str | None = None
        self._has_assistant = False
        self._flushed = flushed
        # The path root → leaf, kept up to date on appends (the common case) so that reading the branch on
        # every inference does not walk the whole tree; any other leaf move drops it.
        self._path_leaf: str | None = None
        self._path: list[SessionEntry] = []
        self._lock: _Lock | None = None
        self._unlock: weakref.finalize[Any, SessionStore] | None = None
        for entry in entries or ():
            self._index(entry)

    # ----------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def create(
        cls,
        cwd: str | Path,
        session_dir: str | Path | None = None,
        *,
        parent_session: str | None = None,
        session_id: str | None = None,
    ) -> SessionStore:
        """A new, empty session. Its file appears with the first assistant message."""
        resolved_cwd = str(Path(cwd).expanduser().resolve())
        directory = Path(session_dir) if session_dir else default_session_dir(resolved_cwd)
        sid = session_id or new_session_id()
        ts = iso_now()
        header = SessionHeader(sid, ts, resolved_cwd, CURRENT_SESSION_VERSION, parent_session)
        path = directory / f"{ts.replace(':', '-').replace('.', '-')}_{sid}.jsonl"
        return cls(header, path)

    @classmethod
    def in_memory(cls, cwd: str | Path = ".") -> SessionStore:
        header = SessionHeader(new_session_id(), iso_now(), str(Path(cwd).expanduser().resolve()))
        return cls(header, None)

    @classmethod
    def open(cls, path: str | Path, *, repair: bool = True) -> SessionStore:
        """Open an existing file. v1/v2 files are migrated to v3 and rewritten, and a torn last line is moved
        aside, as Pi does; with ``repair=False`` (read-only views) both happen in memory only."""
        file = Path(path).expanduser().resolve()
        notes: list[str] = []
        lock = _acquire(file, notes) if repair else None  # before reading: repairs happen only under it
        try:
            header, entries, warnings, migrated = _load_file(file, repair=repair)
        except BaseException:
            if lock is not None:
                _release(lock)
            raise
        store = cls(header, file, entries, flushed=True, warnings=[*notes, *warnings])
        if lock is not None:
            store._hold(lock)
        if migrated and repair:
            try:
                store._rewrite()
            except OSError as e:
                store.warnings.append(f"{file}: could not save the migrated session ({e.strerror or e})")
        return store

    def close(self) -> None:
        """Release the write lock (if this store holds one). The store stays readable; appending again
        is not guarded by the lock."""
        if self._unlock is not None:
            self._unlock()
        self._unlock, self._lock = None, None

    @property
    def locked(self) -> bool:
        """This store holds the write lock on its file."""
        return self._lock is not None

    def _hold(self, lock: _Lock) -> None:
        self.close()
        self._lock = lock
        self._unlock = weakref.finalize(self, _release, lock)

    @classmethod
    def continue_recent(cls, cwd: str | Path, session_dir: str | Path | None = None) -> SessionStore:
        """The most recently written session of ``cwd``, or a new one when there is none."""
        latest = latest_session_file(cwd, session_dir)
        return cls.open(latest) if latest is not None else cls.create(cwd, session_dir)

    # ----------------------------------------------------------------------------------------------
    # Read-only view (what extensions see as ``ctx.session``)

    @property
    def session_id(self) -> str:
        return self.header.id

    @property
    def session_file(self) -> str | None:
        return str(self.path) if self.path is not None else None

    @property
    def cwd(self) -> str:
        return self.header.cwd

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    @property
    def file_exists(self) -> bool:
        return self._flushed

    def entries(self) -> list[SessionEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def leaf_entry(self) -> SessionEntry | None:
        return self._by_id.get(self._leaf_id) if self._leaf_id else None

    def get_label(self, entry_id: str) -> str | None:
        return self._labels.get(entry_id)

    def labels(self) -> dict[str, str]:
        return dict(self._labels)

    def branch(self, from_id: str | None = None) -> list[SessionEntry]:
        """Entries from the root to ``from_id`` (default: the leaf), all types included."""
        start = from_id if from_id is not None else self._leaf_id
        if start is None:
            return []
        if start == self._path_leaf:
            return list(self._path)
        index = self._pos.get(start, len(self._entries) - 1)  # an unknown id: the last entry, as Pi does
        path: list[SessionEntry] = []
        while index >= 0:  # parents are always earlier: this ends
            path.append(self._entries[index])
            index = self._parent_index[index]
        path.reverse()
        if from_id is None:
            self._path_leaf, self._path = start, list(path)
        return path

    def context_entries(self) -> list[SessionEntry]:
        return context_entries_of_path(self.branch())

    def build_context(self) -> SessionContext:
        """Messages, thinking level and model for the current branch — what the agent resumes with."""
        return build_session_context(self.branch())

    def children(self, parent_id: str | None) -> list[SessionEntry]:
        return [e for e in self._entries if e.parent_id == parent_id]

    def session_name(self) -> str | None:
        for entry in reversed(self._entries):
            if isinstance(entry, SessionInfoEntry):
                return (entry.name or "").strip() or None
        return None

    def tree(self) -> list[TreeNode]:
        """Root nodes (normally one) with children sorted oldest first; orphans become roots. Every entry is
        in it exactly once, duplicated ids included."""
        nodes = [TreeNode(e, label=self._labels.get(e.id)) for e in self._entries]
        roots: list[TreeNode] = []
        for node, parent in zip(nodes, self._parent_index, strict=True):
            (nodes[parent].children if parent >= 0 else roots).append(node)
        stack = list(roots)
        while stack:
            node = stack.pop()
            node.children.sort(key=lambda n: n.entry.timestamp)
            stack.extend(node.children)
        return roots

    # ----------------------------------------------------------------------------------------------
    # Appending (each creates a child of the leaf and moves the leaf to it)

    def _next_id(self) -> str:
        return new_entry_id(self._by_id)

    def append_message(self, message: AgentMessage) -> str:
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            raise ValueError("summaries are appended with append_compaction / branch_with_summary")
        return self._append(MessageEntry(self._next_id(), self._leaf_id, iso_now(), message))

    def append_thinking_level_change(self, level: str) -> str:
        return self._append(ThinkingLevelChangeEntry(self._next_id(), self._leaf_id, iso_now(), level))

    def append_model_change(self, provider: str, model_id: str) -> str:
        return self._append(ModelChangeEntry(self._next_id(), self._leaf_id, iso_now(), provider, model_id))

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        entry = CompactionEntry(
            self._next_id(),
            self._leaf_id,
            iso_now(),
            summary,
            first_kept_entry_id,
            tokens_before,
            details,
            usage,
            from_hook,
        )
        return self._append(entry)

    def append_custom(self, custom_type: str, data: Any = None) -> str:
        return self._append(CustomEntry(self._next_id(), self._leaf_id, iso_now(), custom_type, data))

    def append_custom_message(
        self, custom_type: str, content: Any, display: bool = True, details: Any = None
    ) -> str:
        entry = CustomMessageEntry(
            self._next_id(), self._leaf_id, iso_now(), custom_type, content, display, details
        )
        return self._append(entry)

    def append_label(self, target_id: str, label: str | None) -> str:
        if target_id not in self._by_id:
            raise KeyError(f"Entry {target_id} not found")
        return self._append(LabelEntry(self._next_id(), self._leaf_id, iso_now(), target_id, label or None))

    def append_session_info(self, name: str) -> str:
        clean = " ".join(name.splitlines()).strip()
        return self._append(SessionInfoEntry(self._next_id(), self._leaf_id, iso_now(), clean))

    def branch_with_summary(
        self,
        from_id: str | None,
        summary: str,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        """Move the leaf to ``from_id`` and attach a summary of the branch being left there."""
        if from_id is not None and from_id not in self._by_id:
            raise KeyError(f"Entry {from_id} not found")
        left_from = self._leaf_id or "root"
        self._leaf_id = from_id
        entry = BranchSummaryEntry(
            self._next_id(), from_id, iso_now(), left_from, summary, details, usage, from_hook
        )
        return self._append(entry)

    def append_entry(self, entry: SessionEntry) -> str:
        """Append a ready-made entry (its id must be new; its parent is set to the leaf)."""
        if entry.id in self._by_id:
            raise ValueError(f"duplicate entry id {entry.id}")
        entry.parent_id = self._leaf_id
        return self._append(entry)

    # ----------------------------------------------------------------------------------------------
    # Moving the leaf (tree navigation) and forking

    def move_leaf(self, entry_id: str | None) -> None:
        """Point the leaf at ``entry_id`` (None: before the first entry). Durable with the next append."""
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"Entry {entry_id} not found")
        self._leaf_id = entry_id
        self._path_leaf, self._path = None, []

    def fork(self, leaf_id: str | None = None, session_dir: str | Path | None = None) -> SessionStore:
        """A new session holding only the path root → ``leaf_id`` (labels on it re-created)."""
        path = self.branch(leaf_id)
        if not path and leaf_id is not None:
            raise KeyError(f"Entry {leaf_id} not found")
        kept: list[SessionEntry] = []
        parent: str | None = None
        for entry in path:
            if isinstance(entry, LabelEntry):
                continue
            copied = entry_from_json(entry_to_json(entry))
            copied.parent_id = parent
            kept.append(copied)
            parent = entry.id
        directory = Path(session_dir) if session_dir else (self.path.parent if self.path else None)
        new = (
            SessionStore.create(self.cwd, directory, parent_session=self.session_file)
            if directory is not None
            else SessionStore.in_memory(self.cwd)
        )
        for entry in kept:
            new._index(entry)
        ids = {e.id for e in kept}
        for target, label in self._labels.items():
            if target in ids:
                label_entry = LabelEntry(
                    new._next_id(), new._leaf_id, self._label_times[target], target, label
                )
                new._index(label_entry)
        if new.path is not None and new._has_assistant:
            new._write_new_file(new._entries)
        return new

    # ----------------------------------------------------------------------------------------------
    # Internals

    def _index(self, entry: SessionEntry) -> None:
        parent = self._pos.get(entry.parent_id, -1) if entry.parent_id is not None else -1
        self._parent_index.append(parent)
        self._pos[entry.id] = len(self._entries)
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        if self._path_leaf is not None and entry.parent_id == self._path_leaf:
            self._path.append(entry)
            self._path_leaf = entry.id
        elif entry.parent_id is None:
            self._path, self._path_leaf = [entry], entry.id
        else:
            self._path_leaf, self._path = None, []
        self._leaf_id = entry.id
        if isinstance(entry, LabelEntry):
            if entry.label:
                self._labels[entry.target_id] = entry.label
                self._label_times[entry.target_id] = entry.timestamp
            else:
                self._labels.pop(entry.target_id, None)
                self._label_times.pop(entry.target_id, None)
        elif isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            self._has_assistant = True

    def _append(self, entry: SessionEntry) -> str:
        """Write the entry, then index it: if the write fails, memory and file still agree."""
        if self.path is not None:
            if self._flushed:
                _append_bytes(self.path, _line(entry_to_json(entry)))
            elif self._has_assistant or (
                isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
            ):
                self._write_new_file([*self._entries, entry])
        self._index(entry)
        return entry.id

    def _write_new_file(self, entries: list[SessionEntry]) -> None:
        """The first flush: header and every buffered entry in a file that must not exist yet."""
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = _line(self.header.to_json()) + b"".join(_line(entry_to_json(e)) for e in entries)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        lock = _adopt(fd)  # held from the first byte on, for the store's life
        try:
            _write_all(fd, data)
        except BaseException:
            if lock is not None:
                _release(lock)
            else:
                os.close(fd)
            self.path.unlink(missing_ok=True)
            raise
        if lock is not None:
            self._hold(lock)
        else:
            os.close(fd)
        self._flushed = True

    def _rewrite(self) -> None:
        """Replace the file with header and all entries (after a migration), atomically."""
        assert self.path is not None
        data = _line(self.header.to_json()) + b"".join(_line(entry_to_json(e)) for e in self._entries)
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with contextlib.suppress(OSError):  # (a file system without locks: the rewrite still happens)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # locked before it takes the name
            _write_all(fd, data)
            os.replace(tmp, self.path)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        lock = self._lock
        if lock is not None and _LOCKS.get(lock.key) is lock:  # move this process's lock to the new file
            del _LOCKS[lock.key]
            with contextlib.suppress(OSError):
                os.close(lock.fd)
            lock.fd, lock.key = fd, _lock_key(os.fstat(fd))
            _LOCKS[lock.key] = lock
        else:
            os.close(fd)
        self._flushed = True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _append_bytes(path: Path, data: bytes) -> None:
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


# --------------------------------------------------------------------------------------------------
# Loading


def _load_file(
    file: Path, *, repair: bool = True
) -> tuple[SessionHeader, list[SessionEntry], list[str], bool]:
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise SessionFileError(f"{file}: no such session file") from None
    except IsADirectoryError:
        raise SessionFileError(f"{file}: is a directory, not a session file") from None
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
    header_obj: object = None
    if first is not None:
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
                try:
                    obj = json.loads(view[a:b].tobytes())
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
            _append_bytes(file, b"\n")  # a complete last line without its newline: keep it, end it
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


# --------------------------------------------------------------------------------------------------
# Listing


def _summarize_file(path: Path) -> SessionSummary | None:
    try:
        raw = path.read_bytes()
        stat = path.stat()
    except OSError:
        return None
    header: dict[str, Any] | None = None
    count = 0
    entry_count = 0
    first = ""
    name: str | None = None
    last_activity = 0.0
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = _json_decode(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
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
        if not first and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                first = content
            elif isinstance(content, list):
                first = " ".join(
                    b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
                )
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
    )


def list_sessions(cwd: str | Path, session_dir: str | Path | None = None) -> list[SessionSummary]:
    """The sessions of ``cwd``, most recently active first."""
    directory = Path(session_dir) if session_dir else default_session_dir(cwd)
    if not directory.is_dir():
        return []
    summaries = [s for s in (_summarize_file(p) for p in directory.glob("*.jsonl")) if s is not None]
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
    files = [p for p in directory.glob("*.jsonl") if p.is_file()]
    if session_dir:
        resolved = str(Path(cwd).expanduser().resolve())
        files = [p for p in files if _header_cwd(p) == resolved]
    return max(files, key=lambda p: p.stat().st_mtime_ns, default=None)


def _header_cwd(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            obj = _json_decode(f.readline().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return obj.get("cwd") if isinstance(obj, dict) and obj.get("type") == "session" else None
