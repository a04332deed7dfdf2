"""Checkpoints of one session's workspace: taking one, and the steps of a restore, for the runtime (which
runs the I/O off its event loop) and ``caddie restore`` alike.

The calls that touch the disk (``capture``, ``restore_files``, ``mark_run_end``) are synchronous and safe
to run in a worker thread; the caller appends the entries they return to the session, on its own thread.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie.checkpoints import restore as restoring
from caddie.checkpoints.records import Checkpoint, checkpoints_of, entry_data, find, hand_edited_since
from caddie.checkpoints.shadow import (
    DEFAULT_MAX_FILE_BYTES,
    Change,
    CheckpointError,
    ShadowRepo,
    unsuitable_workspace,
    workspace_of,
)
from caddie.errors import UsageError
from caddie.session.entries import SessionEntry

RUN_END_REF = "refs/run-end/"


class RestoreRefused(UsageError):
    """A restore that cannot be done as asked (unknown checkpoint, a run in progress, checkpoints off)."""


@dataclass(frozen=True)
class CheckpointSettings:
    enabled: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @classmethod
    def from_settings(cls, block: object) -> CheckpointSettings:
        """From the settings' ``checkpoints`` block (``{"enabled": bool, "maxFileBytes": int}``)."""
        if not isinstance(block, dict):
            return cls()
        enabled = block.get("enabled", True) is not False
        size = block.get("maxFileBytes")
        ok_size = isinstance(size, int) and not isinstance(size, bool) and size > 0
        return cls(enabled, size if ok_size else DEFAULT_MAX_FILE_BYTES)  # type: ignore[arg-type]


class WorkspaceCheckpoints:
    """The checkpoints of the session ``session_id`` working in ``cwd``."""

    def __init__(self, cwd: str | Path, session_id: str, settings: CheckpointSettings | None = None) -> None:
        self.settings = settings or CheckpointSettings()
        self.workspace = workspace_of(cwd)
        self.repo = ShadowRepo(self.workspace)
        self.session_id = session_id
        self._run_end_ref = RUN_END_REF + (
            session_id
            if re.fullmatch(r"[A-Za-z0-9_-]{1,80}", session_id)
            else hashlib.sha256(session_id.encode()).hexdigest()
        )

    def unavailable(self) -> str | None:
        """Why this session takes no checkpoints (a sentence), or None."""
        if not self.settings.enabled:
            return 'File checkpoints are off ("checkpoints": {"enabled": false} in settings).'
        why = unsuitable_workspace(self.workspace)
        if why is not None:
            return f"File checkpoints are off here: {why}; start caddie in a project folder to have them."
        return None

    # -- taking ------------------------------------------------------------------------------------------
    def capture(
        self, parent: str | None, *, idle: bool, reason: str = "prompt", restores: str | None = None
    ) -> dict[str, Any]:
        """Snapshot the workspace; the data of its ``checkpoint`` entry. ``idle``: no run was going since the
        last one ended, so what changed since then was changed by hand."""
        snap = self.repo.snapshot(
            f"{reason} checkpoint of session {self.session_id}", parent, self.settings.max_file_bytes
        )
        files = self._changes(parent, snap.commit) if parent else []
        edited: list[str] = []
        if idle:
            run_end = self.repo.ref(self._run_end_ref)
            if run_end is not None:
                edited = [c.path for c in self._changes(run_end, snap.commit)]
        return entry_data(
            snap.commit, reason, [(c.status, c.path) for c in files], edited, snap.skipped, restores
        )

    def _changes(self, old: str, new: str) -> list[Change]:
        try:
            return self.repo.changes(old, new)
        except CheckpointError:  # ``old`` was collected
            return []

    def mark_run_end(self) -> None:
        """Remember the files as a run left them: what differs at the next checkpoint was changed by hand."""
        self.repo.snapshot(
            f"end of a run of session {self.session_id}",
            None,
            self.settings.max_file_bytes,
            ref=self._run_end_ref,
        )

    # -- restoring ---------------------------------------------------------------------------------------
    def target(self, entries: Sequence[SessionEntry], ref: str) -> Checkpoint:
        """The checkpoint ``ref`` names among a session's entries (a commit id or prefix, or an entry id)."""
        matches = find(checkpoints_of(entries), ref)
        if not matches:
            raise RestoreRefused(
                f"No checkpoint '{ref}' in this session; list them with `caddie checkpoints` (or /rewind)."
            )
        if len({c.id for c in matches}) > 1:
            ids = ", ".join(sorted({c.id[:12] for c in matches}))
            raise RestoreRefused(f"'{ref}' names more than one checkpoint ({ids}); give more of the id.")
        chosen = matches[-1]
        if not self.repo.has_commit(chosen.id):
            raise RestoreRefused(
                f"Checkpoint {chosen.id[:12]} is no longer in {self.repo.git_dir} (collected, or the session "
                "was made on another machine); its files cannot be restored."
            )
        return chosen

    def restore_files(
        self,
        target: Checkpoint,
        before: dict[str, Any],
        branch: Sequence[SessionEntry],
        *,
        force: bool = False,
    ) -> restoring.RestoreReport:
        """Put the files back as ``target`` saved them; ``before`` is the data of the checkpoint just taken of
        the current state (already appended to the session, so the restore can be undone)."""
        current = before["commit"]
        hand = hand_edited_since(checkpoints_of(branch), target, before.get("edited", []))
        todo = restoring.plan(self.repo.changes(current, target.id), hand, force)
        report = restoring.RestoreReport(target.id, current)
        with self.repo.locked():
            restoring.apply(self.repo, target.id, current, todo, report)
        self.mark_run_end()  # the restored files are not hand edits
        return report

    def changed_since(self, target: Checkpoint) -> list[str]:
        """The files that differ between ``target`` and the state the session's last run left (empty when
        no run has ended yet, or the checkpoint is gone)."""
        run_end = self.repo.ref(self._run_end_ref)
        if run_end is None or not self.repo.has_commit(target.id):
            return []
        return [c.path for c in self.repo.changes(target.id, run_end)]

    def last_on_branch(self, branch: Sequence[SessionEntry]) -> str | None:
        found = checkpoints_of(branch)
        return found[-1].id if found else None


__all__ = ["CheckpointError", "CheckpointSettings", "RestoreRefused", "WorkspaceCheckpoints"]
