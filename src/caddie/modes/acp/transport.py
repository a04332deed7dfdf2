"""Newline-delimited JSON-RPC over stdio for the SDK's connection, answering malformed input.

The SDK's own stdio framing logs a line that is not JSON and moves on; a client that sent it would wait
forever. This transport (the SDK's ``Transport`` shape: ``send``/``receive``/``close``) answers such a line
with JSON-RPC's ``-32700 Parse error``, and anything that is JSON but not a request, notification or
response with ``-32600 Invalid request``, then keeps reading. The process stays up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from caddie import untrusted

MAX_LINE = 64 * 1024 * 1024
EOF_GRACE_S = 30.0
"""After stdin ends, how long requests already received may take to be answered (prompts are cancelled)."""


def _error(request_id: Any, code: int, message: str, details: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"details": details}},
    }


def problem(message: Any) -> tuple[Any, str] | None:
    """Why a decoded message is not valid JSON-RPC, with the id to answer to; None when it is fine."""
    if isinstance(message, list):
        return None, "batches are not supported; send one JSON-RPC object per line"
    if not isinstance(message, dict):
        return None, "each line must be a JSON-RPC object"
    request_id = message.get("id")
    if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, str | int)):
        return None, "id must be a string or an integer"
    if "method" in message:
        if not isinstance(message["method"], str):
            return request_id, "method must be a string"
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            return request_id, "params must be an object"
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None  # a response to one of our requests
    return request_id, "a request needs a method (a response needs a result or an error)"


class StdioTransport:
    """Lines from ``stdin``, lines to ``out`` (an OS-level file descriptor, written in order).

    When stdin ends, every request already received is still answered before the end is reported:
    ``on_eof`` runs first (it cancels running prompts), then the transport waits for the answers.
    """

    def __init__(
        self,
        read_line: Callable[[], Awaitable[bytes]],
        out_fd: int,
        on_eof: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._read_line = read_line
        self._out = out_fd
        self._lock = asyncio.Lock()
        self._closed = False
        self._on_eof = on_eof
        self._unanswered: set[Any] = set()
        self._answered = asyncio.Event()

    async def send(self, message: dict[str, Any]) -> None:
        if self._closed:
            raise ConnectionError("Connection closed")
        data = untrusted.utf8(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
        async with self._lock:
            await asyncio.to_thread(_write_all, self._out, data)
        if "method" not in message and "id" in message:
            self._unanswered.discard(message["id"])
            self._answered.set()

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if not line:
                await self._finish()
                return None
            text = line.strip()
            if not text:
                continue
            try:
                message = untrusted.loads(text)  # nesting bounded, lone surrogates made U+FFFD
            except ValueError as e:
                await self.send(_error(None, -32700, "Parse error", str(e)))
                continue
            wrong = problem(message)
            if wrong is not None:
                await self.send(_error(wrong[0], -32600, "Invalid request", wrong[1]))
                continue
            assert isinstance(message, dict)
            if "method" in message and message.get("id") is not None:
                self._unanswered.add(message["id"])
            return message

    async def _finish(self) -> None:
        if self._on_eof is not None:
            await self._on_eof()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EOF_GRACE_S
        while self._unanswered and loop.time() < deadline:
            self._answered.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._answered.wait(), 0.1)

    async def close(self) -> None:
        self._closed = True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


async def stdin_lines(stdin: BinaryIO | None = None) -> Callable[[], Awaitable[bytes]]:
    """A ``readline`` for stdin: the event loop for pipes and sockets, a thread for regular files."""
    source = stdin or sys.stdin.buffer
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), source)
    except ValueError:  # a regular file: commands replayed from disk

        async def from_file() -> bytes:
            return await asyncio.to_thread(source.readline)

        return from_file

    async def from_pipe() -> bytes:
        try:
            return await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            return e.partial
        except asyncio.LimitOverrunError as e:  # an enormous line: drop it, answer a parse error
            await reader.readexactly(e.consumed)
            return b"\x00"

    return from_pipe


def claim_stdout() -> int:
    """Keep stdout for the protocol alone: returns a private copy of fd 1 and points fd 1 (and
    ``sys.stdout``) at stderr, so a stray print from an extension cannot corrupt the stream."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd
