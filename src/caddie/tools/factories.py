"""The built-in tools one at a time, for programs (``caddie.sdk``): Pi's ``createReadTool`` …
``createCodingTools``.

Each factory takes the project folder and, optionally, ``operations`` — an object with the async methods
of the matching Protocol in ``caddie.tools.operations`` — that move the tool's work elsewhere: another
machine over SSH, a container, files held in memory. The tool is the built-in one (same name, parameters,
description and result wording), so giving it to a session (``custom_tools=[...]``) replaces the built-in.
``cwd`` may be a ``Path``, relative or start with ``~``. ``caddie.extensions.api`` exports these same
functions. ``read``, ``edit`` and ``write`` also take ``files=FileOperations`` (the form extensions used
before operations existed): contents go through its two functions, the files stay on this machine (no
access check, folders made locally), as they did.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, TypeVar

from caddie.errors import UsageError
from caddie.tools import bash, edit, find, grep, ls, read, write
from caddie.tools.base import ToolDefinition
from caddie.tools.bash import EnvSource
from caddie.tools.operations import (
    BashOperations,
    EditOperations,
    FileOperations,
    FindOperations,
    HostFiles,
    LsOperations,
    ReadOperations,
    ShellExec,
    WriteOperations,
)

__all__ = [
    "CodingOperations",
    "create_bash_tool",
    "create_coding_tools",
    "create_edit_tool",
    "create_find_tool",
    "create_grep_tool",
    "create_ls_tool",
    "create_read_only_tools",
    "create_read_tool",
    "create_write_tool",
]


_Ops = TypeVar("_Ops", ReadOperations, EditOperations, WriteOperations)


class CodingOperations(ReadOperations, EditOperations, WriteOperations, BashOperations, Protocol):
    """One object that serves ``read``, ``edit``, ``write`` and ``bash`` (``create_coding_tools``)."""


def _folder(cwd: str | Path) -> str:
    return os.path.abspath(Path(cwd).expanduser())


def _with_files(operations: _Ops | None, files: FileOperations | None) -> _Ops | HostFiles | None:
    """``files=FileOperations`` (the older form) as operations; giving both is a mistake."""
    if files is None:
        return operations
    if operations is not None:
        raise UsageError("Give the tool operations= or files=, not both.")
    return HostFiles(files)


def create_read_tool(
    cwd: str | Path,
    *,
    operations: ReadOperations | None = None,
    auto_resize_images: bool = True,
    files: FileOperations | None = None,
) -> ToolDefinition:
    """``read`` for ``cwd`` (Pi's ``createReadTool``); images larger than 2000×2000 are shrunk unless
    ``auto_resize_images=False``."""
    return read.create_read_tool(
        _folder(cwd), auto_resize_images=auto_resize_images, operations=_with_files(operations, files)
    )


def create_bash_tool(
    cwd: str | Path,
    *,
    operations: BashOperations | None = None,
    shell_path: str | None = None,
    command_prefix: str | None = None,
    env: EnvSource = None,
    expose_session_environment: bool = True,
    shell: ShellExec | None = None,
) -> ToolDefinition:
    """``bash`` for ``cwd`` (Pi's ``createBashTool``). Without ``operations`` a command runs locally in
    ``shell_path`` (default: bash), after ``command_prefix`` (settings ``shellCommandPrefix``), with
    caddie's environment plus ``env`` (a mapping, or a function asked before each command); with them,
    ``operations.exec`` gets the command and that environment. ``shell`` is the older form of
    ``operations`` (a ``ShellExec`` function); ``expose_session_environment=False`` leaves out the
    session's own variables (``PI_SESSION_ID``, ``CADDIE_MODEL``, …)."""
    if operations is not None and shell is not None:
        raise UsageError("Give the bash tool operations= or shell=, not both.")
    return bash.create_bash_tool(
        _folder(cwd),
        shell_path=shell_path,
        command_prefix=command_prefix,
        env=env,
        expose_session_environment=expose_session_environment,
        shell=shell,
        operations=operations,
    )


def create_edit_tool(
    cwd: str | Path, *, operations: EditOperations | None = None, files: FileOperations | None = None
) -> ToolDefinition:
    """``edit`` for ``cwd`` (Pi's ``createEditTool``)."""
    return edit.create_edit_tool(_folder(cwd), operations=_with_files(operations, files))


def create_write_tool(
    cwd: str | Path, *, operations: WriteOperations | None = None, files: FileOperations | None = None
) -> ToolDefinition:
    """``write`` for ``cwd`` (Pi's ``createWriteTool``)."""
    return write.create_write_tool(_folder(cwd), operations=_with_files(operations, files))


def create_ls_tool(cwd: str | Path, *, operations: LsOperations | None = None) -> ToolDefinition:
    """``ls`` for ``cwd`` (Pi's ``createLsTool``)."""
    return ls.create_ls_tool(_folder(cwd), operations=operations)


def create_find_tool(cwd: str | Path, *, operations: FindOperations | None = None) -> ToolDefinition:
    """``find`` for ``cwd`` (Pi's ``createFindTool``): with ``operations``, their ``glob`` finds the paths."""
    return find.create_find_tool(_folder(cwd), operations=operations)


def create_grep_tool(cwd: str | Path) -> ToolDefinition:
    """``grep`` for ``cwd`` (Pi's ``createGrepTool``), on this machine's disk only: Pi's ``GrepOperations``
    swap the directory check and the context lines while ripgrep still searches the local disk, so caddie
    offers none. Somewhere else, give the model ``bash`` through ``BashOperations`` (it runs ``grep``/``rg``
    there) or a ``ToolDefinition`` of your own named ``grep``."""
    return grep.create_grep_tool(_folder(cwd))


def create_coding_tools(
    cwd: str | Path, *, operations: CodingOperations | None = None
) -> list[ToolDefinition]:
    """``read``, ``bash``, ``edit``, ``write`` for ``cwd`` (Pi's ``createCodingTools``), all through
    ``operations`` when given."""
    return [
        create_read_tool(cwd, operations=operations),
        create_bash_tool(cwd, operations=operations),
        create_edit_tool(cwd, operations=operations),
        create_write_tool(cwd, operations=operations),
    ]


def create_read_only_tools(cwd: str | Path) -> list[ToolDefinition]:
    """``read``, ``grep``, ``find``, ``ls`` for ``cwd`` on this machine (Pi's ``createReadOnlyTools``)."""
    return [create_read_tool(cwd), create_grep_tool(cwd), create_find_tool(cwd), create_ls_tool(cwd)]
