"""Putting a workspace's files back as a checkpoint saved them.

``plan`` (pure) decides, from the changes between the current snapshot and the target, what to write, what
to remove and what to leave as a conflict (a file edited by hand since the target); ``apply`` does it, never
outside the workspace and never through a symlink leading out of it, each file replaced atomically.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from caddie.checkpoints.shadow import Change, ShadowRepo

_GITLINK = "160000"
_SYMLINK = "120000"


@dataclass
class RestorePlan:
    write: list[str] = field(default_factory=list)
    """Changed or deleted since the target: written back with the target's content."""
    remove: list[str] = field(default_factory=list)
    """Created since the target: removed."""
    conflicts: list[str] = field(default_factory=list)
    """Edited by hand since the target: left as they are (unless forced)."""


@dataclass
class RestoreReport:
    checkpoint: str
    """The checkpoint restored."""
    before: str
    """The checkpoint taken of the state before the restore (restoring it undoes this restore)."""
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    not_restored: list[tuple[str, str]] = field(default_factory=list)
    """(path, why) for files that could not be put back."""

    @property
    def changed(self) -> list[str]:
        return sorted({*self.written, *self.removed})

    def to_json(self) -> dict[str, object]:
        return {
            "checkpoint": self.checkpoint,
            "before": self.before,
            "written": self.written,
            "removed": self.removed,
            "conflicts": self.conflicts,
            "notRestored": [{"path": p, "reason": r} for p, r in self.not_restored],
        }

    def summary(self) -> str:
        """One or a few lines for a person."""
        parts = [
            f"Restored checkpoint {self.checkpoint[:12]}: {len(self.written)} file(s) written back, {len(self.removed)} removed."
        ]
        if self.conflicts:
            parts.append(
                f"Left alone (edited by hand since the checkpoint; restore with --force to overwrite): "
                f"{', '.join(self.conflicts)}."
            )
        for path, why in self.not_restored:
            parts.append(f"Not restored: {path} ({why}).")
        parts.append(f"To undo, restore checkpoint {self.before[:12]}.")
        return "\n".join(parts)


def plan(changes: list[Change], hand_edited: set[str], force: bool = False) -> RestorePlan:
    """``changes`` go from the current snapshot to the target (``A``: only in the target, so deleted since)."""
    out = RestorePlan()
    for change in changes:
        if change.path in hand_edited and not force:
            out.conflicts.append(change.path)
        elif change.status == "D":
            out.remove.append(change.path)
        else:
            out.write.append(change.path)
    return out


def apply(repo: ShadowRepo, target: str, current: str, todo: RestorePlan, report: RestoreReport) -> None:
    """Carry out ``todo`` in ``repo.workspace``; what cannot be done is added to ``report.not_restored``."""
    root = Path(os.path.realpath(repo.workspace))
    wanted = repo.files(target, todo.write)
    tracked_now = repo.files(current, todo.write)
    contents = repo.blobs(sorted({f.blob for f in wanted.values() if f.mode != _GITLINK}))
    for path in todo.write:
        entry = wanted.get(path)
        if entry is None:
            report.not_restored.append((path, "not in the checkpoint"))
            continue
        if entry.mode == _GITLINK:
            report.not_restored.append((path, "a nested git repository; its files are not in checkpoints"))
            continue
        why = _unsafe(root, path)
        if why is not None:
            report.not_restored.append((path, why))
            continue
        full = root / path
        if path not in tracked_now and (full.exists() or full.is_symlink()):
            report.not_restored.append((path, "a file there now is ignored or too big to be checkpointed"))
            continue
        try:
            _write(root, full, contents[entry.blob], entry.mode)
        except OSError as e:
            report.not_restored.append((path, e.strerror or str(e)))
            continue
        report.written.append(path)
    for path in todo.remove:
        why = _unsafe(root, path)
        if why is not None:
            report.not_restored.append((path, why))
            continue
        full = root / path
        try:
            if full.is_dir() and not full.is_symlink():
                report.not_restored.append((path, "a directory is there now"))
                continue
            full.unlink(missing_ok=True)
        except OSError as e:
            report.not_restored.append((path, e.strerror or str(e)))
            continue
        _prune_empty_parents(root, full.parent)
        report.removed.append(path)
    report.conflicts = list(todo.conflicts)


def _unsafe(root: Path, path: str) -> str | None:
    """Why ``path`` must not be touched: it is not a plain relative path, or its folder leads (through a
    symlink) out of the workspace."""
    rel = Path(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        return "outside the workspace"
    folder = root.joinpath(*rel.parts[:-1])
    existing = folder
    while not existing.exists() and existing != root:
        existing = existing.parent
    real = Path(os.path.realpath(existing))
    if real != root and root not in real.parents:
        return "its folder is a symlink leading out of the workspace"
    return None


def _write(root: Path, full: Path, data: bytes, mode: str) -> None:
    full.parent.mkdir(parents=True, exist_ok=True)
    if mode == _SYMLINK:
        if full.is_dir() and not full.is_symlink():
            raise IsADirectoryError(21, "a directory is there now")
        tmp = full.parent / f".{full.name}.caddie-restore"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.symlink(os.fsdecode(data), tmp)
        os.replace(tmp, full)
        return
    if full.is_dir() and not full.is_symlink():
        raise IsADirectoryError(21, "a directory is there now")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{full.name}.", suffix=".caddie-restore", dir=full.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_name, (0o777 if mode == "100755" else 0o666) & ~umask)
        os.replace(tmp_name, full)  # replaces a symlink itself, never writes through it
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise


def _prune_empty_parents(root: Path, folder: Path) -> None:
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
