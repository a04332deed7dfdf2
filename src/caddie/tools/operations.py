"""Where the file and shell tools do their work: the local machine by default, or a host's stand-in.

Pi's pluggable ``ReadOperations`` / ``EditOperations`` / ``WriteOperations`` / ``BashOperations`` in one
place. A host passes ``ToolOperations`` to ``create_builtin_tools`` (``SessionRequest.tool_operations``) so
that ``read``/``edit``/``write`` see, for example, an editor's unsaved buffers and ``bash`` runs in a
terminal the user watches. The model gets the same text either way: argument handling, truncation and the
result wording stay in the tools.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from caddie.ai.abort import AbortSignal
from caddie.errors import ToolError


class ShellTimedOut(ToolError):
    """Raised by a ``ShellExec`` once it has stopped a command that outlived its timeout."""


@dataclass(frozen=True, slots=True)
class FileOperations:
    """File contents for ``read``, ``edit`` and ``write`` (paths are absolute).

    Either function may raise ``ToolError`` (its text reaches the model as is) or ``OSError`` (reported
    the way Node words it, as for local files).
    """

    read_file: Callable[[str], Awaitable[bytes]]
    write_file: Callable[[str, str], Awaitable[None]]
    """Replace the file's content with this text; the parent directory exists already."""


class ShellExec(Protocol):
    """Runs one ``bash`` command somewhere and feeds its merged output to ``on_data``.

    Returns the exit code (None when a signal ended it); raises ``caddie.errors.Aborted`` / ``ShellTimedOut`` after
    stopping the command, ``ToolError`` when it cannot start.
    """

    async def __call__(
        self,
        command: str,
        cwd: str,
        *,
        tool_call_id: str,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None: ...


@dataclass(frozen=True, slots=True)
class ToolOperations:
    files: FileOperations | None = None
    """None: the local disk."""
    shell: ShellExec | None = None
    """None: a local process (``run_shell_command``)."""
