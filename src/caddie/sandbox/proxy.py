"""The network allow-list: an HTTP proxy (``CONNECT`` tunnels and plain ``http://`` requests) that lets
sandboxed commands reach only the hosts the configuration names.

Commands run in a network namespace with nothing but loopback, so the proxy is their only way out. It runs
in caddie's process, on an event loop of its own in a daemon thread (sync callers such as ``caddie batch``
use it too). Each command gets a *channel*: one end of a Unix socket pair that the sandbox inherits. Inside,
``netns_helper.py`` binds the proxy port on the sandbox's loopback and sends that listening socket back over
the channel; the proxy accepts on it directly — no relay process, no port on the host. A command started by
something that passes no descriptors (an SDK's own process spawning, see ``Sandbox.prepare_standalone``)
reaches its channel through a Unix socket in the sandbox's private directory instead: ``expect_channel``
gives it a one-time token, its launcher connects and sends the token, and that connection is the channel.
A refused host is answered ``403`` with a sentence naming the setting, and remembered per channel so the
command's result can say so. ``host_allowed`` is the pure rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from caddie.sandbox.config import NetworkRule

log = logging.getLogger("caddie.sandbox")

HEAD_LIMIT = 64 * 1024
CONNECT_TIMEOUT_S = 30.0
TOKEN_BYTES = 16
"""A standalone command's launcher sends ``TOKEN_BYTES`` random bytes as hex and a newline first."""
TOKEN_LENGTH = 2 * TOKEN_BYTES + 1
SOCKET_NAME = "proxy.sock"
_DROPPED_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive", b"host"}
"""Not passed on with a plain request (see ``parse_request``)."""


def _matches(host: str, pattern: str) -> bool:
    pattern = pattern.strip().lower().rstrip(".")
    if pattern == "*":
        return True
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern


def host_allowed(host: str, allowed: Sequence[str], denied: Sequence[str] = ()) -> bool:
    """``host`` (a name or IP literal) matches an allowed pattern and no denied one. ``example.com`` is that
    host only; ``*.example.com`` its subdomains (not itself); ``*`` any host."""
    host = host.strip().lower().rstrip(".").strip("[]")
    if not host or any(_matches(host, p) for p in denied):
        return False
    return any(_matches(host, p) for p in allowed)


def split_host_port(target: str, default_port: int) -> tuple[str, int]:
    """``host:port`` / ``[v6]:port`` / ``host`` → (host, port); ``ValueError`` when it is not one."""
    if target.startswith("["):
        end = target.index("]")
        host, rest = target[1:end], target[end + 1 :]
        port = int(rest[1:]) if rest.startswith(":") else default_port
    elif target.count(":") == 1:
        host, _, port_text = target.partition(":")
        port = int(port_text)
    else:
        host, port = target, default_port
    if not host or not 0 < port < 65536:
        raise ValueError(target)
    return host, port


@dataclass(slots=True)
class _Channel:
    control: socket.socket
    servers: list[asyncio.Server] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)


class FilteringProxy:
    """One per sandbox (started on first use); ``open_channel`` per command, ``close`` at the end."""

    def __init__(self, rule: NetworkRule) -> None:
        self.rule = rule
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._channels: dict[int, _Channel] = {}
        self._lock = threading.Lock()
        self._next = 0
        self._expected: dict[str, int] = {}
        """Tokens handed out by ``expect_channel`` whose launcher has not connected yet → channel ids."""
        self._listener: socket.socket | None = None
        self._adopting: set[asyncio.Task[None]] = set()

    # --------------------------------------------------------------------------------------------
    # Called from any thread

    def open_channel(self) -> tuple[int, socket.socket]:
        """A new channel: its id and the end the sandboxed command inherits (close it after the start)."""
        loop = self._ensure_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        with self._lock:
            self._next += 1
            channel_id = self._next
        ready = threading.Event()

        def adopt() -> None:
            channel = _Channel(ours)
            self._channels[channel_id] = channel
            loop.add_reader(ours.fileno(), self._receive, channel_id)
            ready.set()

        loop.call_soon_threadsafe(adopt)
        ready.wait(5)
        return channel_id, theirs

    def expect_channel(self, directory: str) -> tuple[int, str, str]:
        """A channel for a command that inherits no descriptors: (its id, the token its launcher sends, the Unix
        socket to send it to — a path in ``directory``, private to this caddie, or ``@name``, see
        ``_socket_address``). The socket listens from the first call on."""
        loop = self._ensure_loop()
        with self._lock:
            if self._listener is None:
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                listener.bind(_socket_address(directory))
                listener.listen(64)
                listener.setblocking(False)
                self._listener = listener
                loop.call_soon_threadsafe(loop.add_reader, listener.fileno(), self._accept, listener)
            address = self._listener.getsockname()
            self._next += 1
            channel_id = self._next
            token = secrets.token_hex(TOKEN_BYTES)
            self._expected[token] = channel_id
        return channel_id, token, _shown(address)

    def close_channel(self, channel_id: int) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):
            asyncio.run_coroutine_threadsafe(self._drop(channel_id), loop).result(5)

    def refused_hosts(self, channel_id: int | None) -> list[str]:
        channel = self._channels.get(channel_id) if channel_id is not None else None
        return list(channel.refused) if channel is not None else []

    def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        for channel_id in list(self._channels):
            self.close_channel(channel_id)
        listener, self._listener = self._listener, None
        if listener is not None:

            def stop_listening() -> None:
                with contextlib.suppress(ValueError, OSError):
                    loop.remove_reader(listener.fileno())
                with contextlib.suppress(OSError):
                    address = listener.getsockname()
                    if isinstance(address, str) and address.startswith("/"):
                        os.unlink(address)  # the socket file: nothing connects once caddie stops listening
                listener.close()

            loop.call_soon_threadsafe(stop_listening)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        self._loop = self._thread = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="caddie-sandbox-proxy", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    # --------------------------------------------------------------------------------------------
    # On the proxy's loop

    def _accept(self, listener: socket.socket) -> None:
        try:
            conn, _addr = listener.accept()
        except OSError:
            return
        conn.setblocking(False)
        task = asyncio.get_running_loop().create_task(self._adopt(conn))
        self._adopting.add(task)
        task.add_done_callback(self._adopting.discard)

    async def _adopt(self, conn: socket.socket) -> None:
        """A launcher's connection: read exactly its token line (the listening socket that follows carries
        descriptors, which a longer read would drop), then serve it as the channel the token names."""
        loop = asyncio.get_running_loop()
        data = b""
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                while len(data) < TOKEN_LENGTH:
                    chunk = await loop.sock_recv(conn, TOKEN_LENGTH - len(data))
                    if not chunk:
                        break
                    data += chunk
        except (OSError, TimeoutError):
            data = b""
        with self._lock:
            channel_id = self._expected.pop(data[:-1].decode("ascii", "replace"), None)
        if channel_id is None or not data.endswith(b"\n"):
            conn.close()
            return
        self._channels[channel_id] = _Channel(conn)
        loop.add_reader(conn.fileno(), self._receive, channel_id)

    def _receive(self, channel_id: int) -> None:
        channel = self._channels.get(channel_id)
        if channel is None:
            return
        loop = asyncio.get_running_loop()
        try:
            _data, fds, _flags, _addr = socket.recv_fds(channel.control, 16, 4)
        except BlockingIOError:
            return
        except OSError:
            fds = []
            _data = b""
        if not fds:  # the command ended (or never sent its port): nothing more will come
            loop.remove_reader(channel.control.fileno())
            return
        for fd in fds:
            listener = socket.socket(fileno=fd)
            listener.setblocking(False)
            task = loop.create_task(self._serve(channel_id, listener))
            channel.tasks.add(task)
            task.add_done_callback(channel.tasks.discard)

    async def _serve(self, channel_id: int, listener: socket.socket) -> None:
        channel = self._channels.get(channel_id)
        if channel is None:
            listener.close()
            return

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            if task is not None:
                channel.tasks.add(task)
            try:
                await self._handle(channel, reader, writer)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                pass
            finally:
                writer.close()
                if task is not None:
                    channel.tasks.discard(task)

        server = await asyncio.start_server(handle, sock=listener, limit=HEAD_LIMIT)
        channel.servers.append(server)

    async def _drop(self, channel_id: int) -> None:
        with self._lock:
            for token in [t for t, c in self._expected.items() if c == channel_id]:
                del self._expected[token]
        channel = self._channels.pop(channel_id, None)
        if channel is None:
            return
        loop = asyncio.get_running_loop()
        with contextlib.suppress(ValueError, OSError):
            loop.remove_reader(channel.control.fileno())
        channel.control.close()
        for server in channel.servers:
            server.close()
        current = asyncio.current_task()
        for task in list(channel.tasks):
            if task is not current:
                task.cancel()

    async def _handle(
        self, channel: _Channel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        request = parse_request(await reader.readuntil(b"\r\n\r\n"))
        if isinstance(request, str):
            await _reply(writer, 400, f"caddie sandbox proxy: {request}")
            return
        if not host_allowed(request.host, self.rule.allowed, self.rule.denied):
            channel.refused.append(request.host)
            text = f"Blocked by the sandbox: {request.host} is not in the network allow-list (settings sandbox.network)."
            await _reply(writer, 403, text)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(request.host, request.port), CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as e:
            await _reply(
                writer, 502, f"caddie sandbox proxy: cannot reach {request.host}:{request.port}: {e}"
            )
            return
        try:
            if request.forward is None:
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                await writer.drain()
            else:
                upstream_writer.write(request.forward)
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        finally:
            upstream_writer.close()


def _socket_address(directory: str) -> str:
    """Where launchers reach the proxy: a socket file in ``directory`` (private to this caddie), or — when that
    path is longer than a Unix socket address may be — an abstract socket with a random name (any local
    process could connect to it, but a connection without a token handed out here is closed at once)."""
    path = os.path.join(directory, SOCKET_NAME)
    if len(os.fsencode(path)) < 100:
        return path
    return f"\0caddie-sandbox-proxy-{os.getpid()}-{secrets.token_hex(8)}"


def _shown(address: str | bytes) -> str:
    """A bound address as ``launcher.py`` takes it: a path, or ``@name`` for an abstract socket."""
    text = address.decode("utf-8", "replace") if isinstance(address, bytes) else address
    return "@" + text[1:] if text.startswith("\0") else text


@dataclass(frozen=True, slots=True)
class ProxyRequest:
    host: str
    port: int
    forward: bytes | None
    """A plain request's head as it goes upstream; None for a ``CONNECT`` tunnel."""


def parse_request(head: bytes) -> ProxyRequest | str:
    """A proxy request's head (up to the blank line) → where it goes and what to send there, or why not.

    A plain request is sent on in origin form with ``Host`` set from its URL (a different ``Host`` header
    could reach another site on an allowed server), hop-by-hop headers dropped and ``Connection: close``
    (so one connection cannot carry requests for another host)."""
    request_line, *header_lines = head.removesuffix(b"\r\n\r\n").split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3:
        return "a request line is METHOD TARGET VERSION."
    method, target, version = parts
    try:
        if method.upper() == b"CONNECT":
            host, port = split_host_port(target.decode("latin-1"), 443)
            return ProxyRequest(host, port, None)
        url = urlsplit(target.decode("latin-1"))
        if url.scheme != "http" or not url.hostname:
            return "send absolute http:// URLs, or CONNECT for https."
        host, port = url.hostname, url.port or 80
    except ValueError:
        return "the request's target is not host:port."
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    authority = url.netloc.rpartition("@")[2]
    kept = [h for h in header_lines if h.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS]
    lines = [
        b" ".join([method, path.encode("latin-1"), version]),
        b"Host: " + authority.encode("latin-1"),
        *kept,
    ]
    return ProxyRequest(host, port, b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()


async def _reply(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nX-Caddie-Sandbox: blocked\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
