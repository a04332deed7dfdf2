"""RPC mode's transport and loop: reading stdin into LF-framed lines, parsing them into commands, dispatching
each as its own task, and winding down at EOF or on ``ctx.shutdown()``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, BinaryIO

from caddie import untrusted
from caddie.ai.model import Model
from caddie.modes.rpc.commands import handle
from caddie.modes.rpc.server import RpcServer
from caddie.modes.rpc.ui import RpcUI
from caddie.runtime.session_api import Session

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest command line the reader accepts; a longer one gets a ``parse`` error and is skipped."""
EOF_GRACE_S = 5.0
"""How long work in flight at EOF may take to wind down after it was aborted."""

# -- input ------------------------------------------------------------------------------------------------


class LineTooLong:
    """Stands in for a line that exceeded the reader's limit (it was skipped)."""

    def __init__(self, size: int) -> None:
        self.size = size


def _pollable(stdin: Any) -> bool:
    """Whether the event loop can watch ``stdin``: a pipe, a socket or a terminal. A regular file or a
    device such as ``/dev/null`` cannot be (epoll refuses them) and is read in a thread instead."""
    try:
        fd = stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return True  # not a real descriptor: let connect_read_pipe decide
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _chunks(stdin: Any) -> AsyncIterator[bytes]:
    """Raw stdin chunks; pipes and sockets through the event loop, files and devices through a thread."""
    loop = asyncio.get_running_loop()
    try:
        if not _pollable(stdin):
            raise ValueError("not pollable")
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except ValueError:  # a regular file (``caddie --mode rpc < commands.jsonl``) or ``< /dev/null``
        binary = getattr(stdin, "buffer", stdin)
        fd = binary.fileno() if hasattr(binary, "fileno") else None
        read = (lambda: os.read(fd, 1 << 20)) if fd is not None else (lambda: binary.read(1 << 20))
        while chunk := await asyncio.to_thread(read):
            yield chunk
        return
    while chunk := await reader.read(1 << 20):
        yield chunk


async def _lines(stdin: Any, max_line_bytes: int = MAX_LINE_BYTES) -> AsyncIterator[bytes | LineTooLong]:
    """Lines split on LF only. A line over ``max_line_bytes`` is dropped as it streams in (memory stays
    bounded) and reported once as ``LineTooLong``; the next line is read normally."""
    buffer = bytearray()
    skipping = 0  # bytes of an over-long line dropped so far (0: not skipping)
    async for chunk in _chunks(stdin):
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            if skipping:
                skipping += len(piece)
            else:
                buffer += piece
                if len(buffer) > max_line_bytes:
                    skipping = len(buffer)
                    buffer.clear()
            if newline < 0:
                break
            if skipping:
                yield LineTooLong(skipping)
                skipping = 0
            else:
                yield bytes(buffer)
                buffer.clear()
            start = newline + 1
    if skipping:
        yield LineTooLong(skipping)
    elif buffer:
        yield bytes(buffer)


async def run_rpc(
    session: Session,
    ui: RpcUI,
    find_model: Callable[[str, str], Model | None],
    start: Callable[[], Awaitable[None]],
    stdin: BinaryIO | None = None,
    *,
    has_auth: Callable[[Model], bool] = lambda _m: True,
    max_line_bytes: int = MAX_LINE_BYTES,
    eof_grace_s: float = EOF_GRACE_S,
) -> int:
    """Serve commands until stdin ends. ``start`` (the session's ``session_start``) runs once the reader is
    up, so an extension may open a dialog from it. Every command runs as its own task: a command waiting
    for a dialog answer, a compaction or a shell command never blocks ``abort`` or the dialog's answer."""
    write = ui._write
    server = RpcServer(session, ui, write, find_model, has_auth)
    shutdown = asyncio.ensure_future(session.wait_for_shutdown_request())  # ctx.shutdown(), once idle
    starting = asyncio.ensure_future(start())
    async for line in _until(_lines(stdin or sys.stdin, max_line_bytes), shutdown):
        if isinstance(line, LineTooLong):
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": f"Failed to parse command: the line is {line.size} bytes, over the "
                    f"{max_line_bytes}-byte limit; it was skipped",
                }
            )
            continue
        text = line.decode("utf-8", "replace")
        if text.endswith("\r"):
            text = text[:-1]
        if not text.strip():
            continue
        try:
            request = untrusted.loads(text)  # nesting bounded, lone surrogates made U+FFFD
        except ValueError as e:
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": f"Failed to parse command: {e}",
                }
            )
            continue
        if not isinstance(request, dict):
            write(
                {
                    "type": "response",
                    "command": "parse",
                    "success": False,
                    "error": "Failed to parse command: each line must be a JSON object",
                }
            )
            continue
        if request.get("type") == "extension_ui_response":
            ui.resolve(request)
        else:
            server.spawn(_after(starting, handle(server, request)))
    if shutdown.done():  # graceful: the commands in flight answer first (Pi: after the current response)
        pending = [t for t in server.tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=eof_grace_s)
    else:
        shutdown.cancel()
    await _wind_down(server, starting, eof_grace_s)
    return 0


async def _until(
    lines: AsyncIterator[bytes | LineTooLong], stopped: asyncio.Future[None]
) -> AsyncIterator[bytes | LineTooLong]:
    """``lines`` until they end or ``stopped`` is done (an extension's ``ctx.shutdown()``)."""
    iterator = aiter(lines)
    while True:
        following: asyncio.Future[Any] = asyncio.ensure_future(anext(iterator))
        waiting: list[asyncio.Future[Any]] = [following, stopped]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not following.done():
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await following
            return
        try:
            line = following.result()
        except StopAsyncIteration:
            return
        yield line


async def _wind_down(server: RpcServer, starting: asyncio.Future[None], grace_s: float) -> None:
    """EOF: nobody is left to answer a dialog or to send ``abort``. Cancel the dialogs, abort the running
    work (again whenever something new started), and give what is in flight ``grace_s`` to answer."""
    server.eof = True
    server.ui.cancel_all()
    session = server.session
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while True:
        session.abort()
        session.abort("bash")
        pending = [t for t in server.tasks if not t.done()]
        if not starting.done():
            pending.append(starting)  # type: ignore[arg-type]
        if not pending:
            break
        left = deadline - loop.time()
        if left <= 0:
            for task in pending:
                task.cancel()
            break
        await asyncio.wait(pending, timeout=min(0.05, left))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(session.wait_for_idle(background=False), max(0.1, deadline - loop.time()))


async def _after(first: asyncio.Future[None], then: Awaitable[None]) -> None:
    """Run ``then`` once the session has started (commands that arrive during start-up wait for it)."""
    with contextlib.suppress(Exception):  # a failing session_start handler was reported already
        await asyncio.shield(first)
    await then
