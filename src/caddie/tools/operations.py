"""Where the file and shell tools do their work: the local machine by default, or someone else's.

Pi's pluggable ``ReadOperations`` / ``EditOperations`` / ``WriteOperations`` / ``BashOperations`` /
``LsOperations`` / ``FindOperations``, as Protocols: a program passes an object with these async methods to
a tool factory (``create_read_tool(cwd, operations=...)``, ``caddie.sdk``) and the tool reads, writes,
lists and runs through it — on a remote machine, in a container, in memory. One object may serve them all.
The model gets the same text either way: argument handling, truncation and the result wording stay in the
tools. A method may raise ``ToolError`` (its text reaches the model as is) or ``OSError`` (worded the way
Node words it, as for local files).

An editor host (ACP) passes ``ToolOperations`` to ``create_builtin_tools`` instead: ``FileOperations`` so that
``read``/``edit``/``write`` see unsaved buffers of files on this machine, and a ``ShellExec`` that runs
``bash`` in a terminal the user watches.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from caddie.ai.abort import AbortSignal
from caddie.errors import ToolError
from caddie.untrusted import non_regular_kind


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


class ReadOperations(Protocol):
    """What ``read`` needs (Pi's ``ReadOperations``); paths are absolute."""

    async def read_file(self, path: str) -> bytes:
        """The file's whole content (text or an image; the tool decides which from the bytes)."""
        ...

    async def access(self, path: str) -> None:
        """Raise (``OSError``, e.g. ``FileNotFoundError``) when the file cannot be read."""
        ...


class WriteOperations(Protocol):
    """What ``write`` needs (Pi's ``WriteOperations``)."""

    async def write_file(self, path: str, content: str) -> None:
        """Create or replace the file with this text."""
        ...

    async def mkdir(self, path: str) -> None:
        """Create the directory and its missing parents (no error when it exists)."""
        ...


class EditOperations(Protocol):
    """What ``edit`` needs (Pi's ``EditOperations``)."""

    async def read_file(self, path: str) -> bytes: ...

    async def write_file(self, path: str, content: str) -> None: ...

    async def access(self, path: str) -> None:
        """Raise (``OSError``) when the file cannot be both read and written."""
        ...


class BashOperations(Protocol):
    """What ``bash`` needs (Pi's ``BashOperations``)."""

    async def exec(
        self,
        command: str,
        cwd: str,
        *,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None:
        """Run ``command`` in ``cwd`` and feed its output (stdout and stderr merged) to ``on_data`` as it
        comes; return the exit code (None when a signal ended it). Stop the command and raise
        ``caddie.errors.Aborted`` when ``signal`` is aborted, ``ShellTimedOut`` after ``timeout`` seconds."""
        ...


class LsOperations(Protocol):
    """What ``ls`` needs (Pi's ``LsOperations``)."""

    async def exists(self, path: str) -> bool: ...

    async def is_directory(self, path: str) -> bool:
        """Whether ``path`` is a directory (raise ``OSError`` when it cannot be looked at: ``ls`` then
        leaves that entry out)."""
        ...

    async def readdir(self, path: str) -> list[str]:
        """The names in the directory (not paths; in any order)."""
        ...


class FindOperations(Protocol):
    """What ``find`` needs (Pi's ``FindOperations``)."""

    async def exists(self, path: str) -> bool: ...

    async def glob(self, pattern: str, cwd: str, *, ignore: list[str], limit: int) -> list[str]:
        """Paths under ``cwd`` matching ``pattern`` (absolute, or relative to ``cwd``; ``/`` after a directory),
        leaving out those matching an ``ignore`` glob (``**/node_modules/**``, ``**/.git/**``); at most
        ``limit``."""
        ...


def shell_of(operations: BashOperations) -> ShellExec:
    """``operations`` as the ``ShellExec`` the ``bash`` tool runs commands with."""

    async def run(
        command: str,
        cwd: str,
        *,
        tool_call_id: str,
        on_data: Callable[[bytes], None],
        signal: AbortSignal | None,
        timeout: float | None,
        env: dict[str, str],
    ) -> int | None:
        return await operations.exec(command, cwd, on_data=on_data, signal=signal, timeout=timeout, env=env)

    return run


class HostFiles:
    """An editor host's ``FileOperations`` as the file tools' operations: contents go through the host,
    the files themselves are on this machine (so access checks and folders are local)."""

    def __init__(self, files: FileOperations) -> None:
        self.files = files

    async def read_file(self, path: str) -> bytes:
        return await self.files.read_file(path)

    async def write_file(self, path: str, content: str) -> None:
        kind = non_regular_kind(path)
        if kind is not None:  # opening a FIFO for writing blocks until a reader comes
            raise ToolError(f"Could not write {path}: it is {kind}, not a regular file.")
        await self.files.write_file(path, content)

    async def access(self, path: str) -> None:
        return None  # the host's read answers for itself (an editor may hold a buffer not yet on disk)

    async def mkdir(self, path: str) -> None:
        from caddie.tools.write import make_dirs  # the write tool's own local folders (Node's error words)

        make_dirs(path)
