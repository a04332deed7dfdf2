"""The ``ls`` tool: one directory's entries, sorted case-insensitively, ``/`` after directories.

Dotfiles are included; entries that cannot be stat'ed (dangling symlinks) are skipped. At most 500 entries
(``limit``) and 50 KB, with a notice saying how to see more.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.jscompat import js_number
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.collation import locale_sorted
from caddie.tools.files import check_sandbox
from caddie.tools.fs_errors import node_fs_message
from caddie.tools.operations import LsOperations
from caddie.tools.paths import node_join, resolve_to_cwd
from caddie.tools.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

DEFAULT_LS_LIMIT = 500
UNLIMITED_LINES = 2**53 - 1
LS_DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes "
    f"dotfiles. Output is truncated to {DEFAULT_LS_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is "
    "hit first)."
)
LS_PROMPT_SNIPPET = "List directory contents"
LS_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
    },
}


def list_directory(dir_path: str, limit: float) -> ToolResult:
    if not os.path.exists(dir_path):
        raise ToolError(f"Path not found: {dir_path}")
    if not os.path.isdir(dir_path):
        raise ToolError(f"Not a directory: {dir_path}")
    try:
        names = sorted(os.listdir(dir_path))  # Node's readdir returns names in byte order
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {node_fs_message(exc, 'scandir', dir_path)}") from exc

    results: list[str] = []
    limit_reached = False
    for name in locale_sorted(names):
        if len(results) >= limit:
            limit_reached = True
            break
        try:
            mode = os.stat(node_join(dir_path, name)).st_mode
        except OSError:
            continue  # entries we cannot stat are skipped
        results.append(name + ("/" if stat.S_ISDIR(mode) else ""))
    return listing(results, limit_reached, limit)


async def list_directory_through(operations: LsOperations, dir_path: str, limit: float) -> ToolResult:
    """``list_directory`` through a program's ``LsOperations`` (another machine's directory)."""
    if not await operations.exists(dir_path):
        raise ToolError(f"Path not found: {dir_path}")
    try:
        is_directory = await operations.is_directory(dir_path)
    except OSError as exc:
        raise ToolError(node_fs_message(exc, "stat", dir_path)) from exc
    if not is_directory:
        raise ToolError(f"Not a directory: {dir_path}")
    try:
        names = await operations.readdir(dir_path)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {node_fs_message(exc, 'scandir', dir_path)}") from exc
    results: list[str] = []
    limit_reached = False
    for name in locale_sorted(names):
        if len(results) >= limit:
            limit_reached = True
            break
        try:
            directory = await operations.is_directory(node_join(dir_path, name))
        except OSError:
            continue  # entries that cannot be looked at are skipped, as on the local disk
        results.append(name + ("/" if directory else ""))
    return listing(results, limit_reached, limit)


def listing(results: list[str], limit_reached: bool, limit: float) -> ToolResult:
    """The ``ls`` result for these entries (names, ``/`` after directories), with its notices."""
    if not results:
        return ToolResult([TextContent("(empty directory)")], None)
    truncation = truncate_head("\n".join(results), max_lines=UNLIMITED_LINES)
    output = truncation.content
    details: dict[str, Any] = {}
    notices: list[str] = []
    if limit_reached:
        notices.append(f"{js_number(limit)} entries limit reached. Use limit={js_number(limit * 2)} for more")
        details["entryLimitReached"] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_json()
    if notices:
        output += f"\n\n[{'. '.join(notices)}]"
    return ToolResult([TextContent(output)], details or None)


def create_ls_tool(
    cwd: str, *, operations: LsOperations | None = None, guard: FileGuard | None = None
) -> ToolDefinition:
    """The ``ls`` tool for ``cwd``. ``operations``: where directories are listed (None: this machine's disk;
    see ``caddie.tools.operations``); ``guard``: the sandbox's path policy (None: no sandbox)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        path: str | None = params.get("path")
        limit: float | None = params.get("limit")
        dir_path = resolve_to_cwd(path or ".", cwd)
        check_sandbox(guard, dir_path)
        effective = DEFAULT_LS_LIMIT if limit is None else limit
        if operations is not None:
            result = await list_directory_through(operations, dir_path, effective)
        else:
            result = list_directory(dir_path, effective)
        if signal is not None and signal.aborted:
            raise ToolError("Operation aborted")
        return result

    return ToolDefinition(
        name="ls",
        label="ls",
        description=LS_DESCRIPTION,
        parameters=LS_PARAMETERS,
        execute=execute,
        prompt_snippet=LS_PROMPT_SNIPPET,
    )
