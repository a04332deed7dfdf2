"""The shadow git repository of one workspace: snapshots of its files, their differences, their contents.

The repository lives under ``~/.caddie/agent/checkpoints/<name>-<hash>/`` and is driven with ``GIT_DIR`` /
``GIT_WORK_TREE`` / ``GIT_INDEX_FILE`` set explicitly (every inherited ``GIT_*`` variable dropped, no
system or global git config, no hooks), so the project's own ``.git`` — HEAD, index, stash, refs, hooks —
is never read for anything but its ``info/exclude`` and never written. ``.gitignore`` files are honoured as
git honours them; files over the size limit are left out of the snapshot and named in its ``skipped`` list.

Each snapshot is a commit whose parent is the session's previous checkpoint, kept alive by a ref
``refs/checkpoints/<commit>``; ``gc`` drops the refs no session file names any more and prunes. One
``flock`` per repository serialises snapshots, restores and collection across processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.errors import SessionStoreError

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this are not saved in a checkpoint (settings ``checkpoints.maxFileBytes``)."""

KEEP_UNNAMED_SECONDS = 24 * 3600
"""A checkpoint no session file names yet (its session not written yet) survives collection this long."""

_SHA = re.compile(r"^[0-9a-f]{40}$")
_PATHS_AT_ONCE = 2000
"""More changed paths than this are staged by one walk of the whole tree instead of as a path list."""
_TREES: dict[str, str] = {}
"""Commit → tree of the snapshots this process made: unchanged snapshots are told apart without git."""


class CheckpointError(SessionStoreError):
    """The shadow repository could not be read or written (git missing or failing, disk full)."""


@dataclass(frozen=True)
class Change:
    """One path that differs between two snapshots: ``A`` added, ``M`` modified, ``D`` deleted, ``T`` type
    changed (file ↔ symlink), as seen going from the first to the second."""

    status: str
    path: str


@dataclass(frozen=True)
class Snapshot:
    commit: str
    skipped: list[str] = field(default_factory=list)
    """Files left out for their size."""
    tree: str = ""


@dataclass(frozen=True)
class TreeFile:
    mode: str
    blob: str


def checkpoints_root() -> Path:
    return agent_dir() / "checkpoints"


def workspace_of(cwd: str | Path) -> Path:
    """The workspace a session's checkpoints cover: the enclosing git work tree's top (a ``.git`` dir or file),
    else the directory itself."""
    start = Path(cwd).expanduser().resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def unsuitable_workspace(workspace: Path) -> str | None:
    """Why checkpoints are off for this workspace (a home directory or the file system root), or None."""
    home = Path.home().resolve()
    if workspace == Path(workspace.anchor) or workspace == home:
        return f"{workspace} is {'your home directory' if workspace == home else 'the file system root'}"
    return None


def shadow_dir_for(workspace: Path) -> Path:
    digest = hashlib.sha256(str(workspace).encode()).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]", "_", workspace.name)[:40] or "root"
    return checkpoints_root() / f"{name}-{digest}"


class ShadowRepo:
    """The shadow repository of ``workspace``; created on first use."""

    def __init__(self, workspace: Path, git_dir: Path | None = None) -> None:
        self.workspace = workspace
        self.git_dir = git_dir or shadow_dir_for(workspace)
        self._env = _git_env(self.git_dir, workspace)

    @classmethod
    def for_cwd(cls, cwd: str | Path) -> ShadowRepo:
        return cls(workspace_of(cwd))

    @property
    def exists(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    # -- plumbing ---------------------------------------------------------------------------------------
    def git(self, *args: str, data: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        try:
            done = subprocess.run(
                ["git", *args],
                input=data,
                capture_output=True,
                env=self._env,
                cwd=self.workspace,
                check=False,
            )
        except FileNotFoundError:
            raise CheckpointError(
                "File checkpoints need git, which is not installed; install git or set "
                '"checkpoints": {"enabled": false} in settings.'
            ) from None
        except OSError as e:
            raise CheckpointError(f"Could not run git for a checkpoint: {e.strerror or e}.") from e
        if done.returncode not in ok:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            detail = message[-1] if message else f"exit {done.returncode}"
            raise CheckpointError(f"The checkpoint repository {self.git_dir} failed: git {args[0]}: {detail}")
        return done.stdout

    def ensure(self) -> None:
        if self.exists:
            return
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "--template=", str(self.git_dir))
        for key, value in _CONFIG.items():
            self.git("config", key, value)
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "workspace").write_text(str(self.workspace) + "\n", encoding="utf-8")

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Held around every change to the repository (snapshots, restores, collection), across processes."""
        self.ensure()
        with (self.git_dir / "caddie.lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    # -- snapshots --------------------------------------------------------------------------------------
    def snapshot(
        self,
        message: str,
        parent: str | None,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        *,
        ref: str | None = None,
    ) -> Snapshot:
        """Save the workspace's files (``.gitignore`` honoured, big files skipped) as a new commit, kept by
        the ref ``refs/checkpoints/<commit>`` (or by ``ref`` when given)."""
        with self.locked():
            self._copy_project_excludes()
            first = not (self.git_dir / "caddie-index").exists()
            candidates = _split(self.git("ls-files", "-z", "--others", "--modified", "--exclude-standard"))
            big = sorted(_too_big(self.workspace, candidates, max_file_bytes))
            skip = set(big)
            changed = [p for p in candidates if p not in skip]
            if first or len(changed) > _PATHS_AT_ONCE or not self._add(changed):
                # the whole tree (first snapshot, many changes, or a path gone since it was listed)
                self._add(["."], exclude=big)
            if big:
                self.git(
                    "rm", "--cached", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                    data=_nul_join(f":(literal){p}" for p in big),
                )  # fmt: skip
            tree = self.git("write-tree").decode().strip()
            if ref is None and parent is not None and _TREES.get(parent) == tree:
                return Snapshot(parent, big, tree)  # nothing changed: the same checkpoint again
            commit = self._commit(tree, message, parent)
            self.git("update-ref", ref or f"refs/checkpoints/{commit}", commit)
            _TREES[commit] = tree
            return Snapshot(commit, big, tree)

    def _add(self, paths: list[str], exclude: Sequence[str] = ()) -> bool:
        """Stage ``paths`` (literal; ``.``: everything) as they are on disk, deletions included."""
        if not paths:
            return True
        spec = ["."] if paths == ["."] else [f":(literal){p}" for p in paths]
        spec += [f":(exclude,literal){p}" for p in exclude]
        try:
            self.git(
                "add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                data=_nul_join(spec), ok=(0, 1),
            )  # fmt: skip
        except CheckpointError:
            if paths == ["."]:
                raise
            return False
        return True

    def _commit(self, tree: str, message: str, parent: str | None) -> str:
        if parent is not None and _SHA.match(parent):
            try:
                return self.git("commit-tree", tree, "-p", parent, "-m", message).decode().strip()
            except CheckpointError:
                pass  # the parent was collected: a root commit then
        return self.git("commit-tree", tree, "-m", message).decode().strip()

    def has_commit(self, commit: str) -> bool:
        if not _SHA.match(commit) or not self.exists:
            return False
        return bool(self.git("cat-file", "-t", commit, ok=(0, 1, 128)).strip() == b"commit")

    def resolve(self, prefix: str) -> str | None:
        """The full id of a commit given by a unique prefix, or None."""
        if not re.fullmatch(r"[0-9a-fA-F]{4,40}", prefix) or not self.exists:
            return None
        out = self.git("rev-parse", "-q", "--verify", f"{prefix.lower()}^{{commit}}", ok=(0, 1, 128))
        return out.decode().strip() or None

    def changes(self, old: str, new: str) -> list[Change]:
        """What differs going from snapshot ``old`` to snapshot ``new``."""
        if old in _TREES and _TREES.get(old) == _TREES.get(new):
            return []
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        parts = _split(out)
        return [Change(parts[i][0], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]

    def files(self, commit: str, paths: Iterable[str]) -> dict[str, TreeFile]:
        """Mode and blob of each of ``paths`` present in the snapshot."""
        wanted = list(paths)
        if not wanted:
            return {}
        out = self.git(
            "ls-tree", "-r", "-z", "--full-tree", commit, "--", *[f":(literal){p}" for p in wanted]
        )
        found: dict[str, TreeFile] = {}
        for line in _split(out):
            meta, _, path = line.partition("\t")
            mode, _kind, blob = meta.split(" ")
            found[path] = TreeFile(mode, blob)
        return found

    def blobs(self, ids: list[str]) -> dict[str, bytes]:
        """The contents of blobs, read in one ``git cat-file --batch``."""
        if not ids:
            return {}
        out = self.git("cat-file", "--batch", data="".join(f"{b}\n" for b in ids).encode())
        contents: dict[str, bytes] = {}
        at = 0
        for blob in ids:
            header_end = out.index(b"\n", at)
            header = out[at:header_end].decode().split(" ")
            size = int(header[2])
            contents[blob] = out[header_end + 1 : header_end + 1 + size]
            at = header_end + 1 + size + 1
        return contents

    def set_ref(self, name: str, commit: str) -> None:
        with self.locked():
            self.git("update-ref", name, commit)

    def ref(self, name: str) -> str | None:
        if not self.exists:
            return None
        with contextlib.suppress(OSError, UnicodeDecodeError):  # a loose ref: read without a process
            value = (self.git_dir / name).read_text(encoding="ascii").strip()
            if _SHA.match(value):
                return value
        out = self.git("rev-parse", "-q", "--verify", name, ok=(0, 1, 128)).decode().strip()
        return out or None

    # -- size and collection ----------------------------------------------------------------------------
    def size_bytes(self) -> int:
        total = 0
        for root, _dirs, names in os.walk(self.git_dir):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
        return total

    def gc(self, live: set[str], sessions: set[str], now: float | None = None) -> int:
        """Drop the checkpoints no session names, and the run-end states of sessions that are gone (those
        younger than a day are kept: their session may not be written yet), and prune what nothing
        reaches. Returns how many checkpoints were dropped."""
        if not self.exists:
            return 0
        now = time.time() if now is None else now
        with self.locked():
            out = self.git("for-each-ref", "--format=%(refname) %(objectname) %(committerdate:unix)")
            drop: list[str] = []
            for line in out.decode().splitlines():
                name, commit, when = line.split(" ")
                kept = commit in live or name.removeprefix("refs/run-end/") in sessions
                if not kept and now - int(when or 0) > KEEP_UNNAMED_SECONDS:
                    drop.append(name)
            if drop:
                self.git("update-ref", "--stdin", data="".join(f"delete {n}\n" for n in drop).encode())
            self.git("reflog", "expire", "--expire=now", "--all")
            self.git("gc", "-q", "--prune=now")
            return sum(1 for n in drop if n.startswith("refs/checkpoints/"))

    def remove(self) -> None:
        """Delete the whole repository (no session of the workspace is left)."""
        shutil.rmtree(self.git_dir, ignore_errors=True)

    def _copy_project_excludes(self) -> None:
        """The project's ``.git/info/exclude`` applies as its ``.gitignore`` files do."""
        source = self.workspace / ".git" / "info" / "exclude"
        target = self.git_dir / "info" / "exclude"
        try:
            data = source.read_bytes() if source.is_file() else b""
        except OSError:
            data = b""
        try:
            if not target.exists() or target.read_bytes() != data:
                target.write_bytes(data)
        except OSError as e:
            raise CheckpointError(f"Could not write {target}: {e.strerror or e}.") from e


_CONFIG = {
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.fsmonitor": "false",
    "core.untrackedCache": "true",
    "core.quotePath": "false",
    "core.hooksPath": os.devnull,
    "core.symlinks": "true",
    "gc.auto": "0",
    "index.version": "4",
    "advice.addEmbeddedRepo": "false",
    "advice.addIgnoredFile": "false",
    "commit.gpgSign": "false",
}


def _git_env(git_dir: Path, workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_DIR=str(git_dir),
        GIT_WORK_TREE=str(workspace),
        GIT_INDEX_FILE=str(git_dir / "caddie-index"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME="caddie",
        GIT_AUTHOR_EMAIL="checkpoints@caddie.invalid",
        GIT_COMMITTER_NAME="caddie",
        GIT_COMMITTER_EMAIL="checkpoints@caddie.invalid",
        LC_ALL="C",
    )
    return env


def _split(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _nul_join(items: Iterable[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in items)


def _too_big(workspace: Path, paths: list[str], limit: int) -> Iterator[str]:
    for path in paths:
        try:
            st = os.lstat(workspace / path)
        except OSError:
            continue
        if st.st_size > limit:
            yield path
