"""Reading files for the tools without reading more than the tools can use: text in chunks, so memory stays
bounded by what the output limits can show, whatever the file's size. Which files may be opened at all
(regular ones: never a FIFO, a device or a socket) is ``caddie.untrusted.files``; which paths the sandbox
lets a file tool read or write is ``caddie.sandbox`` (``check_sandbox``, ``open_regular_guarded``,
``open_for_write``)."""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from caddie.errors import Aborted
from caddie.sandbox import FileGuard, SandboxDenied
from caddie.untrusted import open_regular

CHUNK_BYTES = 1 << 20


def check_sandbox(guard: FileGuard | None, path: str, *, write: bool = False) -> None:
    """The sandbox's path policy for a file tool (no-op when the sandbox is off). A refusal raises
    ``SandboxDenied`` — a ``ToolError`` whose text says it was the sandbox and which mode."""
    if guard is not None:
        guard.check_write(path) if write else guard.check_read(path)


def open_regular_guarded(path: str, guard: FileGuard | None) -> BinaryIO:
    """``open_regular``, then the sandbox's check of the file actually opened (a symlink swapped in between
    the check and the open is caught here)."""
    fh = open_regular(path)
    if guard is not None:
        try:
            guard.check_opened(fh.fileno(), path)
        except SandboxDenied:
            fh.close()
            raise
    return fh


def open_for_write(path: str, guard: FileGuard | None) -> BinaryIO:
    """``open(path, "wb")``, or with the sandbox on, its race-free write (``FileGuard.open_write``)."""
    return open(path, "wb") if guard is None else guard.open_write(path)


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
