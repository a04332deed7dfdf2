"""The ``read`` tool: a text file's lines (head-truncated with a continuation hint) or an image attachment.

Text output stops at 2,000 lines or 50 KB and tells the model which ``offset`` continues. A single line
over 50 KB is not returned; the model gets a ``sed | head -c`` command instead. Images (detected from their
bytes: jpg, png, gif, webp, bmp) come back as a short note plus an image block, resized to fit 2000x2000.
Other binary files are refused.
"""

from __future__ import annotations

import asyncio
import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import ImageContent, TextContent
from caddie.errors import Aborted
from caddie.jscompat import js_number, utf8_len
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.files import check_sandbox, count_lines, iter_line_pieces, open_regular_guarded
from caddie.tools.fs_errors import access_error, fs_error_text, node_fs_message
from caddie.tools.images import SNIFF_BYTES, detect_image_mime_type, process_image
from caddie.tools.operations import ReadOperations
from caddie.tools.paths import resolve_read_path
from caddie.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head_of_lines
from caddie.untrusted import NotRegularFileError

READ_DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as "
    f"attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or "
    f"{DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). Use offset/limit for large files. When you need the "
    "full file, continue with offset until complete."
)
READ_PROMPT_SNIPPET = "Read file contents"
READ_PROMPT_GUIDELINES = ["Use read to examine files instead of cat or sed."]
READ_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
}
NON_VISION_IMAGE_NOTE = (
    "[Current model does not support images. The image will be omitted from this request.]"
)
BINARY_SNIFF_BYTES = 8000


def not_regular_file_message(path: str, kind: str) -> str:
    return (
        f"Cannot read {path}: it is {kind}, not a regular file, and reading it could block or never end. "
        "Use bash to inspect it."
    )


def binary_file_message(path: str) -> str:
    return (
        f"Cannot read {path}: it is a binary file, and read only returns text and images (jpg, png, gif, webp, "
        "bmp). Use bash to inspect it (for example: file, xxd | head, strings)."
    )


def _js_index(value: float, length: int) -> int:
    """A JS ``slice`` bound: truncate towards zero, count negatives from the end, clamp to the array."""
    index = math.trunc(value) if math.isfinite(value) else (length if value > 0 else -length)
    if index < 0:
        index = max(0, length + index)
    return min(index, length)


def _non_vision_note(ctx: Any) -> str | None:
    model = getattr(ctx, "model", None)
    if model is None:
        return None
    inputs = getattr(model, "input", None)
    if inputs is None or "image" in inputs:
        return None
    return NON_VISION_IMAGE_NOTE


MAX_IMAGE_BYTES = 64 * 1024 * 1024
"""Images are decoded whole; a larger file is refused rather than decoded into gigabytes of pixels."""


@dataclass(slots=True)
class _Selection:
    """Lines ``[first, end)`` of a file: their totals, and as many of them as the output can show."""

    lines: list[str]
    count: int
    total_bytes: int
    first_line_bytes: int
    last_line_empty: bool


def _select_lines(fh: BinaryIO, first: int, end: int, cancelled: Callable[[], bool]) -> _Selection:
    """Lines ``[first, end)`` of the file: totals of all, text of only as many as ``truncate_head`` can keep."""
    kept: list[str] = []
    kept_bytes = 0
    keeping = True
    total_bytes = 0
    first_line_bytes = 0
    last_empty = False
    line_bytes = 0
    line_text: list[str] = []
    stored_chars = 0
    for piece in iter_line_pieces(fh, cancelled):
        if piece.index >= end:
            break
        if piece.index < first:
            continue
        line_bytes += utf8_len(piece.text)
        if keeping and stored_chars <= DEFAULT_MAX_BYTES:  # a longer line is over the limit anyway
            line_text.append(piece.text)
            stored_chars += len(piece.text)
        if not piece.ends:
            continue
        if piece.index == first:
            first_line_bytes = line_bytes
        total_bytes += line_bytes + (1 if piece.index > first else 0)
        last_empty = line_bytes == 0
        if keeping:
            kept.append("".join(line_text))
            kept_bytes += line_bytes + (1 if len(kept) > 1 else 0)
            keeping = len(kept) <= DEFAULT_MAX_LINES and kept_bytes <= DEFAULT_MAX_BYTES
        line_text, stored_chars, line_bytes = [], 0, 0
    return _Selection(kept, max(0, end - first), total_bytes, first_line_bytes, last_empty)


INLINE_READ_BYTES = 64 * 1024
"""Text files up to this size are read on the event loop: from the page cache that takes microseconds,
less than the two hops to a worker thread it would otherwise cost. Larger ones are read in a thread."""


def read_text(
    path: str, fh: BinaryIO, offset: float | None, limit: float | None, cancelled: Callable[[], bool]
) -> ToolResult:
    """Format a text file the way Pi's ``read`` does, reading it in chunks (two passes: count, select)."""
    total = count_lines(fh, cancelled)
    fh.seek(0)
    start: float = max(0.0, offset - 1) if offset else 0
    start_display = start + 1
    if start >= total:
        raise ToolError(f"Offset {js_number(offset or 0)} is beyond end of file ({total} lines total)")

    first = _js_index(start, total)
    user_limited: float | None = None
    if limit is not None:
        end = min(start + limit, total)
        selection = _select_lines(fh, first, _js_index(end, total), cancelled)
        user_limited = end - start
    else:
        selection = _select_lines(fh, first, total, cancelled)

    truncation = truncate_head_of_lines(
        selection.lines, selection.count, selection.total_bytes, selection.last_line_empty
    )
    details: dict[str, Any] | None = None
    if truncation.first_line_exceeds_limit:
        size = format_size(selection.first_line_bytes)
        line = js_number(start_display)
        text = (
            f"[Line {line} is {size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. Use bash: sed -n '{line}p' "
            f"{path} | head -c {DEFAULT_MAX_BYTES}]"
        )
        details = {"truncation": truncation.to_json()}
    elif truncation.truncated:
        end_display = start_display + truncation.output_lines - 1
        continue_at = js_number(end_display + 1)
        shown = f"{js_number(start_display)}-{js_number(end_display)} of {total}"
        text = truncation.content
        if truncation.truncated_by == "lines":
            text += f"\n\n[Showing lines {shown}. Use offset={continue_at} to continue.]"
        else:
            text += (
                f"\n\n[Showing lines {shown} ({format_size(DEFAULT_MAX_BYTES)} limit). "
                f"Use offset={continue_at} to continue.]"
            )
        details = {"truncation": truncation.to_json()}
    elif user_limited is not None and start + user_limited < total:
        remaining = total - (start + user_limited)
        next_offset = start + user_limited + 1
        text = (
            f"{truncation.content}\n\n[{js_number(remaining)} more lines in file. "
            f"Use offset={js_number(next_offset)} to continue.]"
        )
    else:
        text = truncation.content
    return ToolResult([TextContent(text)], details)


def create_read_tool(
    cwd: str,
    *,
    auto_resize_images: bool = True,
    operations: ReadOperations | None = None,
    guard: FileGuard | None = None,
) -> ToolDefinition:
    """The ``read`` tool for ``cwd``. ``operations``: where files are read (None: this machine's disk; see
    ``caddie.tools.operations``); ``guard``: the sandbox's path policy (None: no sandbox)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        path: str = params["path"]
        offset: float | None = params.get("offset")
        limit: float | None = params.get("limit")

        def check_abort() -> None:
            if signal is not None and signal.aborted:
                raise ToolError("Operation aborted")

        check_abort()
        absolute = resolve_read_path(path, cwd)
        check_sandbox(guard, absolute)
        if operations is None:
            code = access_error(absolute, os.R_OK)
            if code is not None:
                raise ToolError(fs_error_text(code, "access", absolute))
        else:
            try:
                await operations.access(absolute)
            except OSError as exc:
                raise ToolError(node_fs_message(exc, "access", absolute)) from exc
        try:
            fh: BinaryIO
            if operations is not None:  # another machine's file, an editor's buffer: handed over whole
                fh = io.BytesIO(await operations.read_file(absolute))
            else:
                fh = open_regular_guarded(absolute, guard)  # never blocks: FIFOs and devices are refused
        except IsADirectoryError as exc:
            raise ToolError(node_fs_message(exc, "read")) from exc
        except NotRegularFileError as exc:
            raise ToolError(not_regular_file_message(path, exc.kind)) from exc
        except OSError as exc:
            raise ToolError(node_fs_message(exc, "open", absolute)) from exc
        with fh:
            inline = isinstance(fh, io.BytesIO) or os.fstat(fh.fileno()).st_size <= INLINE_READ_BYTES
            sniff = max(SNIFF_BYTES, BINARY_SNIFF_BYTES)
            head = fh.read(sniff) if inline else await asyncio.to_thread(fh.read, sniff)
            fh.seek(0)
            check_abort()
            mime_type = detect_image_mime_type(head[:SNIFF_BYTES])
            if mime_type is None:
                if b"\0" in head[:BINARY_SNIFF_BYTES]:
                    raise ToolError(binary_file_message(path))
                try:
                    if inline:
                        return read_text(path, fh, offset, limit, lambda: signal.aborted)
                    return await asyncio.to_thread(read_text, path, fh, offset, limit, lambda: signal.aborted)
                except Aborted:
                    raise ToolError("Operation aborted") from None
            size = fh.seek(0, os.SEEK_END)
            fh.seek(0)
            if size > MAX_IMAGE_BYTES:
                raise ToolError(
                    f"Cannot read {path}: the image is {format_size(size)}, over the "
                    f"{format_size(MAX_IMAGE_BYTES)} limit for images. Use bash to inspect or shrink it."
                )
            data = await asyncio.to_thread(fh.read)
        check_abort()

        processed = await asyncio.to_thread(process_image, data, mime_type, auto_resize=auto_resize_images)
        check_abort()
        note = _non_vision_note(ctx)
        if not processed.ok:
            text = f"Read image file [{mime_type}]\n{processed.message}"
            if note:
                text += f"\n{note}"
            return ToolResult([TextContent(text)], None)
        text = f"Read image file [{processed.mime_type}]"
        if processed.hints:
            text += "\n" + "\n".join(processed.hints)
        if note:
            text += f"\n{note}"
        return ToolResult([TextContent(text), ImageContent(processed.data, processed.mime_type)], None)

    return ToolDefinition(
        name="read",
        label="read",
        description=READ_DESCRIPTION,
        parameters=READ_PARAMETERS,
        execute=execute,
        prompt_snippet=READ_PROMPT_SNIPPET,
        prompt_guidelines=list(READ_PROMPT_GUIDELINES),
    )
