"""One batch at a time per results file and work directory: an exclusive ``flock`` on each, held until the
batch ends (the operating system drops it however the process ends, so a crash leaves no stale lock). A
second batch on either is refused with one line naming the holder, as a second writer of a session is."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

from caddie.modes.batch.tasks import BatchError
from caddie.session.files import lock_holder

WORKDIR_LOCK = ".caddie-batch.lock"


class BatchLock:
    """The locks of one batch run; ``release()`` (or process exit) drops them."""

    def __init__(self) -> None:
        self._fds: list[int] = []

    def take(self, path: Path) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                holder = lock_holder(path)
                who = f"another batch ({holder})" if holder else "another batch"
                raise BatchError(
                    f"{path} is in use by {who}; only one batch can run on a results file and a work "
                    "directory at a time. Wait for it to finish, or give this one its own --out and --workdir"
                ) from None
            return  # a file system without locks: carry on unguarded
        self._fds.append(fd)

    def release(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def lock_batch(results: Path, workdir: Path) -> BatchLock:
    lock = BatchLock()
    try:
        lock.take(results)
        lock.take(workdir / WORKDIR_LOCK)
    except BaseException:
        lock.release()
        raise
    return lock
