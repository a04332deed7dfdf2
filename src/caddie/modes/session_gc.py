"""``caddie session delete`` and ``caddie session gc``: a session file removed, and the file checkpoints no
session names any more collected from the shadow repositories (``caddie.checkpoints.collect``)."""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from caddie.checkpoints.collect import collect
from caddie.config.paths import sessions_root
from caddie.errors import UsageError
from caddie.session.files import SessionLockedError
from caddie.session.store import SessionFileError, SessionStore


def cmd_delete(path: Path, out: TextIO) -> int:
    """Delete the session file at ``path`` (refused while a caddie has it open), then collect."""
    try:
        store = SessionStore.open(path)
    except (SessionLockedError, SessionFileError) as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"cannot open {path}: {e.strerror or e}") from None
    store.close()
    path.unlink()
    done = collect(sessions_root())
    out.write(f"Deleted {path}; {done.dropped} checkpoint(s) no session names any more were collected.\n")
    return 0


def cmd_gc(out: TextIO) -> int:
    done = collect(sessions_root())
    out.write(
        f"Collected {done.dropped} checkpoint(s) no session names, in {done.repositories} checkpoint "
        f"repositor{'y' if done.repositories == 1 else 'ies'} ({done.removed} removed whole): "
        f"{_mb(done.bytes_before)} → {_mb(done.bytes_after)}.\n"
    )
    return 0


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB"
