"""Opening files for the tools without blocking or reading more than the tools can use.

A FIFO, a device or a socket is never opened for reading (``open`` on a FIFO blocks until a writer comes,
``/dev/zero`` never ends): the tools refuse anything but regular files and directories. Text is read in
chunks so memory stays bounded by what the output limits can show, whatever the file's size.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from caddie.errors import Aborted, ToolError

CHUNK_BYTES = 1 << 20


class NotRegularFileError(ToolError):
    """The path names a FIFO, device or socket: reading it could block or never end."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
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


def non_regular_kind(path: str) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a directory, else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return _kind(mode)


def open_regular(path: str) -> BinaryIO:
    """Open ``path`` for reading; ``NotRegularFileError`` unless it is a regular file.

    The open itself cannot block (O_NONBLOCK), and the check is made on the opened descriptor, so the
    file cannot be swapped for a FIFO between the check and the read. Directories raise
    ``IsADirectoryError`` like a plain ``open``.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", path)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(_kind(mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, max_bytes: int | None = None) -> bytes:
    """The whole content of a regular file (``ValueError`` if it is larger than ``max_bytes``)."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise ValueError(size)
        data = fh.read() if max_bytes is None else fh.read(max_bytes + 1)
        if max_bytes is not None and len(data) > max_bytes:
            raise ValueError(len(data))
        return data


@dataclass(slots=True)
class LinePiece:
    """Part of line ``index``; ``ends`` on the line's last piece."""

    index: int
    text: str
    ends: bool


def iter_line_pieces(
    fh: BinaryIO, cancelled: Callable[[], bool] = lambda: False, chunk_bytes: int | None = None
) -> Iterator[LinePiece]:
    """The file's text (UTF-8, invalid bytes replaced) as pieces of its ``str.split("\\n")`` lines.

    Joining a line's pieces gives exactly that line of ``data.decode(errors="replace").split("\\n")``.
    Memory is one chunk, whatever the line lengths.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    index = 0
    while True:
        if cancelled():
            raise Aborted
        chunk = fh.read(chunk_bytes or CHUNK_BYTES)
        parts = decoder.decode(chunk, final=not chunk).split("\n")
        for part in parts[:-1]:
            yield LinePiece(index, part, True)
            index += 1
        if not chunk:
            yield LinePiece(index, parts[-1], True)
            return
        if parts[-1]:
            yield LinePiece(index, parts[-1], False)


def count_lines(fh: BinaryIO, cancelled: Callable[[], bool] = lambda: False) -> int:
    """``len(text.split("\\n"))`` of the file's text, counted on the raw bytes (a newline byte is never part
    of a multi-byte UTF-8 sequence, and replacement never makes one)."""
    lines = 1
    while True:
        if cancelled():
            raise Aborted
        chunk = fh.read(CHUNK_BYTES)
        if not chunk:
            return lines
        lines += chunk.count(b"\n")
