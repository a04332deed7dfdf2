"""Per-file mutation queue: edits and writes to one file run one at a time, other files in parallel.

Tools run concurrently (the loop's default "parallel" mode), so two ``edit`` calls on the same file would
otherwise read the same original and the second write would undo the first. Extensions that modify files
should wrap their read-modify-write in ``file_mutation_lock`` too. The key is the file's real path (symlinks
resolved) when it exists, else its absolute path.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

T = TypeVar("T")

_queues: dict[str, tuple[asyncio.Lock, int]] = {}


def _queue_key(file_path: str) -> str:
    absolute = os.path.abspath(file_path)
    try:
        return os.path.realpath(absolute, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return absolute


@asynccontextmanager
async def file_mutation_lock(file_path: str) -> AsyncIterator[None]:
    """Hold the file's turn for the duration of the ``async with`` block (FIFO among waiters)."""
    key = _queue_key(file_path)
    lock, users = _queues.get(key, (asyncio.Lock(), 0))
    _queues[key] = (lock, users + 1)
    try:
        async with lock:
            yield
    finally:
        lock, users = _queues[key]
        if users <= 1:
            del _queues[key]
        else:
            _queues[key] = (lock, users - 1)


async def with_file_mutation_queue(file_path: str, fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn`` once every earlier mutation of the same file has finished (Pi's ``withFileMutationQueue``)."""
    async with file_mutation_lock(file_path):
        return await fn()
