"""Streaming command output with bounded memory (Pi's ``OutputAccumulator``).

Bytes are decoded incrementally as UTF-8; only a rolling tail of the text is kept for display, and as soon
as the output exceeds the limits every raw byte goes to a temp file so the model can read all of it later.
"""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from dataclasses import dataclass
from typing import BinaryIO

from caddie.jscompat import utf8_len
from caddie.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, TruncationResult, truncate_tail


@dataclass(slots=True)
class OutputSnapshot:
    content: str
    truncation: TruncationResult
    full_output_path: str | None


def temp_output_path(prefix: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"{prefix}-{secrets.token_hex(8)}.log")


class OutputAccumulator:
    """Append raw chunks, take snapshots (tail-truncated text plus the spill file, if any)."""

    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_file_prefix: str = "caddie-output",
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._max_rolling_bytes = max(max_bytes * 2, 1)
        self._prefix = temp_file_prefix
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._raw_chunks: list[bytes] = []
        self._tail_text = ""
        self._tail_bytes = 0
        self._tail_at_line_start = True
        self._raw_bytes = 0
        self._decoded_bytes = 0
        self._completed_lines = 0
        self._total_lines = 0
        self._current_line_bytes = 0
        self._open_line = False
        self._finished = False
        self.temp_file_path: str | None = None
        self._temp_file: BinaryIO | None = None

    @property
    def last_line_bytes(self) -> int:
        """Bytes of the unfinished last line (0 when the output ends with a newline)."""
        return self._current_line_bytes

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self._raw_bytes += len(data)
        self._add_text(self._decoder.decode(data))
        if self._temp_file is not None or self._needs_temp_file():
            self._ensure_temp_file()
            assert self._temp_file is not None
            self._temp_file.write(data)
        elif data:
            self._raw_chunks.append(data)

    def finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._add_text(self._decoder.decode(b"", final=True))
        if self._needs_temp_file():
            self._ensure_temp_file()

    def snapshot(self, *, persist_if_truncated: bool = False) -> OutputSnapshot:
        tail = truncate_tail(self._snapshot_text(), max_lines=self.max_lines, max_bytes=self.max_bytes)
        truncated = self._total_lines > self.max_lines or self._decoded_bytes > self.max_bytes
        by = None
        if truncated:
            by = tail.truncated_by or ("bytes" if self._decoded_bytes > self.max_bytes else "lines")
        truncation = TruncationResult(
            content=tail.content,
            truncated=truncated,
            truncated_by=by,
            total_lines=self._total_lines,
            total_bytes=self._decoded_bytes,
            output_lines=tail.output_lines,
            output_bytes=tail.output_bytes,
            last_line_partial=tail.last_line_partial,
            first_line_exceeds_limit=tail.first_line_exceeds_limit,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )
        if persist_if_truncated and truncated:
            self._ensure_temp_file()
        return OutputSnapshot(truncation.content, truncation, self.temp_file_path)

    def close_temp_file(self) -> None:
        if self._temp_file is not None:
            self._temp_file.close()
            self._temp_file = None

    # ----------------------------------------------------------------------------------------------

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = utf8_len(text)
        self._decoded_bytes += size
        self._tail_text += text
        self._tail_bytes += size
        if self._tail_bytes > self._max_rolling_bytes * 2:
            self._trim_tail()
        newlines = text.count("\n")
        if newlines == 0:
            self._current_line_bytes += size
            self._open_line = True
        else:
            self._completed_lines += newlines
            rest = text[text.rfind("\n") + 1 :]
            self._current_line_bytes = utf8_len(rest)
            self._open_line = bool(rest)
        self._total_lines = self._completed_lines + (1 if self._open_line else 0)

    def _trim_tail(self) -> None:
        data = self._tail_text.encode("utf-8", "surrogatepass")
        if len(data) <= self._max_rolling_bytes:
            self._tail_bytes = len(data)
            return
        start = len(data) - self._max_rolling_bytes
        while start < len(data) and (data[start] & 0xC0) == 0x80:
            start += 1
        if start > 0:
            self._tail_at_line_start = data[start - 1] == 0x0A
        self._tail_text = data[start:].decode("utf-8", "replace")
        self._tail_bytes = utf8_len(self._tail_text)

    def _snapshot_text(self) -> str:
        if self._tail_at_line_start:
            return self._tail_text
        newline = self._tail_text.find("\n")
        return self._tail_text if newline == -1 else self._tail_text[newline + 1 :]

    def _needs_temp_file(self) -> bool:
        return (
            self._raw_bytes > self.max_bytes
            or self._decoded_bytes > self.max_bytes
            or self._total_lines > self.max_lines
        )

    def _ensure_temp_file(self) -> None:
        if self.temp_file_path is not None:
            return
        self.temp_file_path = temp_output_path(self._prefix)
        # Owner-only from the first byte: the temp dir is shared and the output may hold secrets.
        fd = os.open(self.temp_file_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self._temp_file = os.fdopen(fd, "wb")
        for chunk in self._raw_chunks:
            self._temp_file.write(chunk)
        self._raw_chunks = []
