"""A cross-process lock on a file that Pi's own lock respects: ``proper-lockfile``'s ``<file>.lock`` directory (auth.json, models-store.json, settings.json).

Pi serialises every write of auth.json (and models-store.json) with ``proper-lockfile``: ``mkdir
<file>.lock`` is the atomic acquire, the directory's mtime is refreshed every few seconds while held, a
lock whose mtime is older than the stale limit (Pi: 30 s) is taken over, and ``rmdir`` releases it.
``FileLock`` does exactly that, so a caddie and a Pi refreshing the same login at the same moment take
turns: the second one re-reads the file under the lock and finds the token the first one stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from caddie.errors import ConfigurationError

STALE_S = 30.0
"""A lock not refreshed for this long belongs to a process that died (Pi's ``stale``)."""
WAIT_S = 30.0
"""How long to wait for a held lock before giving up."""


class LockTimeout(ConfigurationError, OSError):
    """The lock stayed held (and fresh) for the whole wait."""


class FileLock:
    """``with FileLock(path):`` / ``async with FileLock(path).held():`` (see the module docstring)."""

    def __init__(self, target: Path, stale_s: float = STALE_S, wait_s: float = WAIT_S) -> None:
        self.target = Path(target)
        self.lock_dir = Path(f"{target}.lock")
        self.stale_s = stale_s
        self.wait_s = wait_s
        self._stop: threading.Event | None = None

    # -- one attempt --------------------------------------------------------------------------------
    def try_acquire(self) -> bool:
        """Take the lock if it is free or stale; False when another process holds it."""
        for _ in range(2):
            try:
                os.mkdir(self.lock_dir)
            except FileExistsError:
                try:
                    age = time.time() - os.stat(self.lock_dir).st_mtime
                except FileNotFoundError:
                    continue  # released meanwhile: try again at once
                if age <= self.stale_s:
                    return False
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(self.lock_dir)  # a dead holder's lock
                continue
            self._keep_fresh()
            return True
        return False

    def _keep_fresh(self) -> None:
        """Refresh the lock's mtime while it is held (a long refresh must not look stale)."""
        stop = self._stop = threading.Event()
        lock_dir = self.lock_dir
        interval = self.stale_s / 2

        def run() -> None:
            while not stop.wait(interval):
                with contextlib.suppress(OSError):
                    os.utime(lock_dir)

        threading.Thread(target=run, name="auth-lock-refresh", daemon=True).start()

    def release(self) -> None:
        if self._stop is not None:
            self._stop.set()
            self._stop = None
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.lock_dir)

    # -- waiting ------------------------------------------------------------------------------------
    def _delays(self) -> Iterator[float]:
        for attempt in range(1_000_000):
            base = min(0.01 * 2**attempt, 1.0)
            yield base * (1 + random.random())

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait_s
        delays = self._delays()
        while not self.try_acquire():
            left = deadline - time.monotonic()
            if left <= 0:
                raise LockTimeout(
                    f"{self.lock_dir} is held by another process; try again, or remove it if none runs."
                )
            time.sleep(min(next(delays), left))

    async def acquire_async(self) -> None:
        deadline = time.monotonic() + self.wait_s
        delays = self._delays()
        while not self.try_acquire():
            left = deadline - time.monotonic()
            if left <= 0:
                raise LockTimeout(
                    f"{self.lock_dir} is held by another process; try again, or remove it if none runs."
                )
            await asyncio.sleep(min(next(delays), left))

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[FileLock]:
        await self.acquire_async()
        try:
            yield self
        finally:
            self.release()
