"""Garbage collection of shadow repositories: a checkpoint lives as long as a session file names it.

``caddie session delete`` and ``caddie session gc`` call ``collect``: each workspace's repository keeps the
checkpoints some session file (of any project: a fork may name its parent's) still names, plus those younger
than a day (a session writes its file with its first reply); a repository left with nothing is removed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from caddie.checkpoints.records import CHECKPOINT_TYPE
from caddie.checkpoints.shadow import ShadowRepo, checkpoints_root

_MARK = f'"customType":"{CHECKPOINT_TYPE}"'.encode()


@dataclass
class Collected:
    repositories: int = 0
    dropped: int = 0
    removed: int = 0
    """Repositories deleted whole."""
    bytes_before: int = 0
    bytes_after: int = 0


def named_checkpoints(session_files: Iterable[Path]) -> set[str]:
    """Every checkpoint commit the session files name (lines are tested for the marker before parsing)."""
    live: set[str] = set()
    for path in session_files:
        try:
            with path.open("rb") as handle:
                for line in handle:
                    if _MARK not in line.replace(b": ", b":"):
                        continue
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    data = entry.get("data") if isinstance(entry, dict) else None
                    if isinstance(data, dict) and isinstance(data.get("commit"), str):
                        live.add(data["commit"])
        except OSError:
            continue
    return live


def session_files(sessions_root: Path) -> list[Path]:
    if not sessions_root.is_dir():
        return []
    return [*sessions_root.glob("*.jsonl"), *sessions_root.glob("*/*.jsonl")]


def repositories() -> list[ShadowRepo]:
    root = checkpoints_root()
    out = []
    for git_dir in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            workspace = Path((git_dir / "workspace").read_text(encoding="utf-8").strip())
        except OSError:
            continue
        out.append(ShadowRepo(workspace, git_dir))
    return out


def collect(sessions_root: Path, now: float | None = None) -> Collected:
    files = session_files(sessions_root)
    live = named_checkpoints(files)
    sessions = {f.stem.rpartition("_")[2] for f in files}
    done = Collected()
    for repo in repositories():
        done.repositories += 1
        size = repo.size_bytes()
        done.bytes_before += size
        done.dropped += repo.gc(live, sessions, now)
        if not repo.git("for-each-ref", "--count=1").strip():
            repo.remove()
            done.removed += 1
        else:
            done.bytes_after += repo.size_bytes()
    return done
