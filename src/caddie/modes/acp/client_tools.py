"""The built-in tools' file access and commands, done by the editor (ACP ``fs/*`` and ``terminal/*``).

``read``/``edit``/``write`` go through ``fs/read_text_file`` / ``fs/write_text_file`` when the client offers
them, so the agent sees (and changes) the buffers the user sees, unsaved edits included. Binary files
(images) are still read from disk: the protocol carries text only. A read the editor declines (a file outside
its project, say) fails with the editor's reason — caddie does not read the file from disk behind its back —
and a FIFO, device or socket is refused before the editor is asked (its read would never end). ``bash`` runs in a client terminal the
user can watch when the client offers terminals; its output reaches the model the same way.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from acp.schema import EnvVariable

from acp import RequestError
from caddie.ai.abort import AbortSignal
from caddie.errors import Aborted
from caddie.tools import FileOperations, ToolError
from caddie.tools.bash import command_env, get_shell_config
from caddie.tools.images import SNIFF_BYTES, detect_image_mime_type
from caddie.tools.operations import ShellTimedOut
from caddie.untrusted import NotRegularFileError, non_regular_kind, open_regular, read_regular, utf8

TERMINAL_OUTPUT_LIMIT = 1_000_000
"""Bytes of output the client keeps per command (it drops the oldest beyond this)."""


class ClientConnection(Protocol):
    """The part of the SDK's ``AgentSideConnection`` the tools use."""

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> Any: ...

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any: ...

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any: ...

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any: ...


def _client_error(e: BaseException) -> str:
    if isinstance(e, RequestError):
        data = e.data
        detail = data.get("details") or data.get("message") if isinstance(data, dict) else None
        return f"{e}{f': {detail}' if detail else ''}"
    return str(e) or type(e).__name__


def _is_binary(path: str) -> bool:
    """Whether the file on disk is an image or other binary (those are read from disk, not the buffer)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(8000)
    except OSError:
        return False
    return detect_image_mime_type(head[:SNIFF_BYTES]) is not None or b"\0" in head


def client_files(
    conn: ClientConnection, session_id: Callable[[], str], *, read: bool, write: bool
) -> FileOperations:
    async def read_file(path: str) -> bytes:
        kind = non_regular_kind(path)
        if kind is not None:  # a FIFO would hang the editor's read (and ours); /dev/zero never ends
            raise NotRegularFileError(kind, path)
        if not read or await asyncio.to_thread(_is_binary, path):
            return await asyncio.to_thread(read_regular, path)
        if not os.path.exists(path):
            os.stat(path)  # raises FileNotFoundError: the same words as a local read
        try:
            response = await conn.read_text_file(session_id=session_id(), path=path)
        except (RequestError, ConnectionError) as e:  # a refusal is a refusal: never the disk behind it
            raise ToolError(f"The editor declined to read {path}: {_client_error(e)}") from None
        text: str = response.content
        return utf8(text)

    async def write_file(path: str, content: str) -> None:
        if not write:
            await asyncio.to_thread(_write_local, path, content)
            return
        try:
            await conn.write_text_file(session_id=session_id(), path=path, content=content)
        except (RequestError, ConnectionError) as e:
            raise ToolError(f"The editor could not write {path}: {_client_error(e)}") from None

    return FileOperations(read_file, write_file)


def _write_local(path: str, content: str) -> None:
    with open(path, "wb") as fh:
        fh.write(content.encode("utf-8", "surrogatepass"))


class ClientTerminal:
    """A ``ShellExec`` that runs each command in a terminal of the client (``terminal/create``)."""

    def __init__(
        self,
        conn: ClientConnection,
        session_id: Callable[[], str],
        on_terminal: Callable[[str, str], Awaitable[None]],
        shell_path: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._on_terminal = on_terminal
        """Called with (tool call id, terminal id) once the terminal exists, to show it in the tool call."""
        self._shell_path = shell_path

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
    ) -> int | None:
        if signal is not None and signal.aborted:
            raise Aborted
        shell = get_shell_config(self._shell_path())
        if not os.path.exists(cwd):
            raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
        base = command_env(None)
        extra = [EnvVariable(name=k, value=v) for k, v in env.items() if base.get(k) != v]
        sid = self._session_id()
        try:
            created = await self._conn.create_terminal(
                session_id=sid,
                command=shell.shell,
                args=[*shell.args, command],
                env=extra,
                cwd=cwd,
                output_byte_limit=TERMINAL_OUTPUT_LIMIT,
            )
        except (RequestError, ConnectionError) as e:
            raise ToolError(f"The editor could not open a terminal: {_client_error(e)}") from None
        terminal_id: str = created.terminal_id
        await self._on_terminal(tool_call_id, terminal_id)
        stopped = asyncio.Event()
        remove = signal.add_listener(stopped.set) if signal is not None else None
        waiting = asyncio.ensure_future(
            self._conn.wait_for_terminal_exit(session_id=sid, terminal_id=terminal_id)
        )
        stopping = asyncio.ensure_future(stopped.wait())
        try:
            done, _ = await asyncio.wait(
                {waiting, stopping}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            aborted = stopping in done and waiting not in done
            timed_out = not done
            if aborted or timed_out:
                waiting.cancel()
                try:
                    await self._conn.kill_terminal(session_id=sid, terminal_id=terminal_id)
                except (RequestError, ConnectionError):
                    pass
                exit_code: int | None = None
            else:
                exit_status = waiting.result()
                exit_code = exit_status.exit_code if exit_status.signal is None else None
            try:
                output = await self._conn.terminal_output(session_id=sid, terminal_id=terminal_id)
                if output.output:
                    on_data(output.output.encode("utf-8"))
            except (RequestError, ConnectionError):
                pass
            if aborted:
                raise Aborted
            if timed_out:
                raise ShellTimedOut
            return exit_code
        except (RequestError, ConnectionError) as e:
            raise ToolError(f"The editor's terminal failed: {_client_error(e)}") from None
        finally:
            stopping.cancel()
            if not waiting.done():
                waiting.cancel()
            if remove is not None:
                remove()
            try:
                await self._conn.release_terminal(session_id=sid, terminal_id=terminal_id)
            except (RequestError, ConnectionError):
                pass
