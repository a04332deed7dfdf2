"""Opening paths from outside without blocking: only regular files are read.

``open`` on a FIFO blocks until a writer comes, ``/dev/zero`` never ends, a socket cannot be read at all. The
tools (``read``, ``edit``, ``write``), the session loader and listing, and the ACP client's file reads all
refuse anything but a regular file (and say what the path is instead) through these helpers.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from caddie.errors import UsageError


class NotRegularFileError(UsageError, OSError):
    """The path names a FIFO, device or socket: reading it could block or never end. ``kind`` says which.
    An ``OSError`` too, like every other reason a file cannot be opened."""

    def __init__(self, kind: str, path: str = "") -> None:
        super().__init__(f"{path + ': ' if path else ''}it is {kind}, not a regular file")
        self.kind = kind


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def non_regular_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory, else None."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _kind(mode)


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for reading; ``NotRegularFileError`` unless it is a regular file.

    The open itself cannot block (O_NONBLOCK), and the check is made on the opened descriptor, so the
    file cannot be swapped for a FIFO between the check and the read. Directories raise
    ``IsADirectoryError`` like a plain ``open``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(_kind(mode), str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file (``ValueError`` if it is larger than ``max_bytes``)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise ValueError(size)
        data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise ValueError(len(data))
        return data
