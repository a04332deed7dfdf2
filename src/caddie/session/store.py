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

import weakref
from pathlib import Path
from typing import Any

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Usage,
)
from caddie.session.entries import (
    CURRENT_SESSION_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    entry_from_json,
    entry_to_json,
    iso_now,
    new_session_id,
)
from caddie.session.files import (
    MAX_INTEGRITY_WARNINGS,
    SessionFileError,
    SessionLock,
    SessionLockedError,
    acquire_lock,
    append_bytes,
    create_file,
    integrity_warnings,
    json_line,
    load_file,
    lock_holder,
    release_lock,
    replace_file,
)
from caddie.session.listing import (
    SessionSummary,
    default_session_dir,
    encode_cwd,
    latest_session_file,
    list_sessions,
)
from caddie.session.listing import summarize_file as _summarize_file
from caddie.session.tree import SessionTree, TreeNode

__all__ = [  # what this module offered before it was split (files, listing, tree)
    "MAX_INTEGRITY_WARNINGS",
    "SessionFileError",
    "SessionLockedError",
    "SessionStore",
    "SessionSummary",
    "TreeNode",
    "_summarize_file",
    "default_session_dir",
    "encode_cwd",
    "integrity_warnings",
    "latest_session_file",
    "list_sessions",
    "lock_holder",
]


class SessionStore(SessionTree):
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
        self._flushed = flushed
        self._lock: SessionLock | None = None
        self._unlock: weakref.finalize[Any, SessionStore] | None = None
        super().__init__(entries)

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
        lock = acquire_lock(file, notes) if repair else None  # before reading: repairs happen only under it
        try:
            header, entries, warnings, migrated = load_file(file, repair=repair)
        except BaseException:
            if lock is not None:
                release_lock(lock)
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

    def _hold(self, lock: SessionLock) -> None:
        self.close()
        self._lock = lock
        self._unlock = weakref.finalize(self, release_lock, lock)

    @classmethod
    def continue_recent(cls, cwd: str | Path, session_dir: str | Path | None = None) -> SessionStore:
        """The most recently written session of ``cwd``, or a new one when there is none."""
        latest = latest_session_file(cwd, session_dir)
        return cls.open(latest) if latest is not None else cls.create(cwd, session_dir)

    # ----------------------------------------------------------------------------------------------
    # Read-only view (what extensions see as ``ctx.session``; the tree's reading methods are the rest)

    @property
    def session_id(self) -> str:
        return self.header.id

    @property
    def session_file(self) -> str | None:
        return str(self.path) if self.path is not None else None

    @property
    def session_dir(self) -> str | None:
        """The folder of the session file (None in memory)."""
        return str(self.path.parent) if self.path is not None else None

    @property
    def cwd(self) -> str:
        return self.header.cwd

    @property
    def file_exists(self) -> bool:
        return self._flushed

    # ----------------------------------------------------------------------------------------------
    # Appending (each creates a child of the leaf and moves the leaf to it)

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
    # Forking

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
    # Writing

    def _append(self, entry: SessionEntry) -> str:
        """Write the entry, then index it: if the write fails, memory and file still agree."""
        if self.path is not None:
            if self._flushed:
                append_bytes(self.path, json_line(entry_to_json(entry)))
            elif self._has_assistant or (
                isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)
            ):
                self._write_new_file([*self._entries, entry])
        self._index(entry)
        return entry.id

    def save_now(self) -> None:
        """Write the file now, before the first reply (which is when a new session is written otherwise, as
        in Pi): an editor's ``session/new`` must be loadable by another process before it is prompted."""
        if self.path is not None and not self._flushed:
            self._write_new_file(self._entries)

    def _write_new_file(self, entries: list[SessionEntry]) -> None:
        """The first flush: header and every buffered entry in a file that must not exist yet."""
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json_line(self.header.to_json()) + b"".join(json_line(entry_to_json(e)) for e in entries)
        lock = create_file(self.path, data)
        if lock is not None:
            self._hold(lock)
        self._flushed = True

    def _rewrite(self) -> None:
        """Replace the file with header and all entries (after a migration), atomically."""
        assert self.path is not None
        data = json_line(self.header.to_json()) + b"".join(json_line(entry_to_json(e)) for e in self._entries)
        replace_file(self.path, data, self._lock)
        self._flushed = True
