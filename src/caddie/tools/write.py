"""The ``write`` tool: create or overwrite a file (parent directories are created as needed).

The success text reports ``content.length`` the way Pi computes it: UTF-16 code units, not bytes.
"""

from __future__ import annotations

import os
from typing import Any

from caddie.ai.abort import AbortSignal
from caddie.ai.messages import TextContent
from caddie.jscompat import utf8_bytes, utf16_len
from caddie.sandbox import FileGuard
from caddie.tools.base import OnUpdate, ToolDefinition, ToolError, ToolResult
from caddie.tools.files import check_sandbox, open_for_write
from caddie.tools.fs_errors import fs_error_text, node_fs_message
from caddie.tools.mutation_queue import file_mutation_lock
from caddie.tools.operations import WriteOperations
from caddie.tools.paths import resolve_to_cwd
from caddie.untrusted import non_regular_kind

WRITE_DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates "
    "parent directories."
)
WRITE_PROMPT_SNIPPET = "Create or overwrite files"
WRITE_PROMPT_GUIDELINES = ["Use write only for new files or complete rewrites."]
WRITE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
}


def make_dirs(directory: str) -> None:
    """``fs.mkdir(directory, {recursive: true})`` with Node's error text."""
    missing: list[str] = []
    current = directory
    while not os.path.isdir(current):
        if os.path.lexists(current) and not os.path.isdir(current):
            # An existing non-directory in the way: Node reports EEXIST for the target itself, ENOTDIR below it.
            raise ToolError(
                fs_error_text("EEXIST" if current == directory else "ENOTDIR", "mkdir", directory)
            )
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except OSError as exc:
            raise ToolError(node_fs_message(exc, "mkdir", directory)) from exc


def create_write_tool(
    cwd: str, *, operations: WriteOperations | None = None, guard: FileGuard | None = None
) -> ToolDefinition:
    """The ``write`` tool for ``cwd``. ``operations``: where files are written (None: this machine's disk;
    see ``caddie.tools.operations``); ``guard``: the sandbox's path policy (None: no sandbox)."""

    async def execute(
        tool_call_id: str, params: dict[str, Any], signal: AbortSignal, on_update: OnUpdate | None, ctx: Any
    ) -> ToolResult:
        path: str = params["path"]
        content: str = params["content"]
        absolute = resolve_to_cwd(path, cwd)

        def check_abort() -> None:
            if signal is not None and signal.aborted:
                raise ToolError("Operation aborted")

        async with file_mutation_lock(absolute):
            check_abort()
            check_sandbox(guard, absolute, write=True)
            if operations is not None:
                try:
                    await operations.mkdir(os.path.dirname(absolute))
                except OSError as exc:
                    raise ToolError(node_fs_message(exc, "mkdir", os.path.dirname(absolute))) from exc
            else:
                make_dirs(os.path.dirname(absolute))
            check_abort()
            kind = non_regular_kind(absolute) if operations is None else None
            if kind is not None:  # opening a FIFO for writing blocks until a reader comes
                raise ToolError(f"Could not write {path}: it is {kind}, not a regular file.")
            try:
                if operations is not None:
                    await operations.write_file(absolute, content)
                else:
                    with open_for_write(absolute, guard) as fh:
                        fh.write(utf8_bytes(content))
            except OSError as exc:
                raise ToolError(node_fs_message(exc, "open", absolute)) from exc
            check_abort()
        return ToolResult([TextContent(f"Successfully wrote {utf16_len(content)} bytes to {path}")], None)

    return ToolDefinition(
        name="write",
        label="write",
        description=WRITE_DESCRIPTION,
        parameters=WRITE_PARAMETERS,
        execute=execute,
        prompt_snippet=WRITE_PROMPT_SNIPPET,
        prompt_guidelines=list(WRITE_PROMPT_GUIDELINES),
    )
