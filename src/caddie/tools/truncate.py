"""Output truncation shared by the tools (Pi's ``truncate.ts``): 2,000 lines or 50 KB, whichever hits first.

``truncate_head`` keeps the beginning (file reads), ``truncate_tail`` keeps the end (command output). Whole
lines only, except when the last line alone exceeds the byte limit in tail mode: then its end is kept.
Extensions should cut their own large outputs with these helpers too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from caddie.jscompat import js_to_fixed, utf8_len, utf16_len, utf16_prefix

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024
GREP_MAX_LINE_LENGTH = 500

TruncatedBy = Literal["lines", "bytes"]


@dataclass(slots=True)
class TruncationResult:
    content: str
    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def to_json(self) -> dict[str, Any]:
        """The camelCase shape Pi stores in ``details.truncation``."""
        return {
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def format_size(num_bytes: int) -> str:
    """``512B``, ``1.5KB``, ``2.0MB``."""
    if num_bytes < 1024:
        return f"{num_bytes}B"
    if num_bytes < 1024 * 1024:
        return f"{js_to_fixed(num_bytes / 1024, 1)}KB"
    return f"{js_to_fixed(num_bytes / (1024 * 1024), 1)}MB"


def split_lines_for_counting(content: str) -> list[str]:
    """Lines of ``content``; a final newline does not start another line."""
    if not content:
        return []
    lines = content.split("\n")
    if content.endswith("\n"):
        lines.pop()
    return lines


def _untruncated(content: str, lines: int, size: int, max_lines: int, max_bytes: int) -> TruncationResult:
    return TruncationResult(
        content, False, None, lines, size, lines, size, False, False, max_lines, max_bytes
    )


def truncate_head(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the first lines that fit. If even the first line is too big, keep nothing and say so."""
    lines = content.split("\n")
    return truncate_head_of_lines(
        lines, len(lines), utf8_len(content), lines[-1] == "", max_lines=max_lines, max_bytes=max_bytes
    )


def truncate_head_of_lines(
    lines: list[str],
    line_count: int,
    total_bytes: int,
    last_line_empty: bool,
    *,
    max_lines: int = DEFAULT_MAX_LINES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> TruncationResult:
    """``truncate_head`` of a text given as its ``split("\\n")`` lines and totals.

    ``lines`` may be only the beginning of the ``line_count`` lines, as long as it holds more than
    ``max_lines`` lines or ``max_bytes`` bytes (a line cut short must still be over ``max_bytes``): a large
    file never has to be in memory whole.
    """
    total_lines = 0 if total_bytes == 0 else line_count - (1 if last_line_empty else 0)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated("\n".join(lines), total_lines, total_bytes, max_lines, max_bytes)

    lines = lines[:total_lines]
    if utf8_len(lines[0]) > max_bytes:
        return TruncationResult(
            "", True, "bytes", total_lines, total_bytes, 0, 0, False, True, max_lines, max_bytes
        )

    kept: list[str] = []
    used = 0
    by: TruncatedBy = "lines"
    for index, line in enumerate(lines[:max_lines]):
        size = utf8_len(line) + (1 if index > 0 else 0)
        if used + size > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    text = "\n".join(kept)
    return TruncationResult(
        text,
        True,
        by,
        total_lines,
        total_bytes,
        len(kept),
        utf8_len(text),
        False,
        False,
        max_lines,
        max_bytes,
    )


def truncate_tail(
    content: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> TruncationResult:
    """Keep the last lines that fit; if the very last line is too big on its own, keep its end."""
    total_bytes = utf8_len(content)
    lines = split_lines_for_counting(content)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _untruncated(content, total_lines, total_bytes, max_lines, max_bytes)

    kept: list[str] = []
    used = 0
    by: TruncatedBy = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = utf8_len(line) + (1 if kept else 0)
        if used + size > max_bytes:
            by = "bytes"
            if not kept:
                end = _utf8_suffix(line, max_bytes)
                kept.append(end)
                used = utf8_len(end)
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        by = "lines"
    kept.reverse()
    text = "\n".join(kept)
    return TruncationResult(
        text,
        True,
        by,
        total_lines,
        total_bytes,
        len(kept),
        utf8_len(text),
        partial,
        False,
        max_lines,
        max_bytes,
    )


def _utf8_suffix(text: str, max_bytes: int) -> str:
    """The longest end of ``text`` that fits in ``max_bytes`` UTF-8 bytes, starting on a character."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    start = len(data) - max_bytes
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:].decode("utf-8", "replace")


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` (UTF-16 units, as Pi counts) with a ``... [truncated]`` suffix."""
    if utf16_len(line) <= max_chars:
        return line, False
    return f"{utf16_prefix(line, max_chars)}... [truncated]", True
