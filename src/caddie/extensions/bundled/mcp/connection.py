"""One MCP server: its connection, held by an asyncio task of its own (the SDK's task groups must be
entered and left in one task), its lists of tools, prompts and resources, and the requests caddie makes.

The task connects (bounded by ``startupTimeout``), reads the lists, then waits for one of: stop, the
connection closing under it (a crash: the server's last stderr line says why), or a ``list_changed``
notice (the lists are read again). Requests from other tasks (a tool call) go through the SDK client;
their cancellation sends the server ``notifications/cancelled``. The server's stderr goes to its log file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import warnings
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from caddie.extensions.api import ExtensionError
from caddie.extensions.bundled.mcp.config import ServerConfig
from caddie.extensions.bundled.mcp.sdk import load_sdk

State = Literal["starting", "ready", "failed", "needs-auth", "stopped"]
LOG_LINES_KEPT = 50


class Refused(ExtensionError):
    """A server's request (elicitation, sampling) that caddie answers with an error: the message says why."""


class ConnectionHooks(Protocol):
    """What a connection asks of the extension around it."""

    def changed(self, conn: ServerConnection) -> None:
        """The state or the lists changed."""

    async def elicit(self, conn: ServerConnection, params: dict[str, Any]) -> dict[str, Any]:
        """An ``elicitation/create`` (form or URL): the ``ElicitResult`` as a dict, or raise ``Refused``."""
        ...

    async def sample(self, conn: ServerConnection, params: dict[str, Any]) -> dict[str, Any]:
        """A ``sampling/createMessage``: the ``CreateMessageResult`` as a dict, or raise ``Refused``."""
        ...

    def roots(self) -> list[dict[str, str]]:
        """The client's roots (``[{"uri": "file:///…", "name": …}]``)."""
        ...

    def logged(self, conn: ServerConnection, level: str, text: str) -> None:
        """A ``notifications/message`` from the server."""

    def transport(self, conn: ServerConnection, sdk: Any, errlog: Any) -> Any:
        """The SDK transport for this server (stdio, streamable HTTP, SSE; with auth)."""
        ...


@dataclass(slots=True)
class Lists:
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)


def dump(model: Any) -> dict[str, Any]:
    """An SDK model as JSON-shaped data (camelCase keys, no ``None``s)."""
    return dict(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def one_line(error: BaseException) -> str:
    """An exception as one line (an exception group: its first leaf)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return text


class ServerConnection:
    def __init__(self, config: ServerConfig, hooks: ConnectionHooks, log_path: str) -> None:
        self.config = config
        self.name = config.name
        self.hooks = hooks
        self.log_path = log_path
        self.state: State = "starting"
        self.error: str | None = None
        self.sandboxed: str | None = None
        """The sandbox this server runs in (its summary, e.g. ``workspace-write, network off``); None: outside."""
        self.lists = Lists()
        self.server_name = ""
        self.instructions: str | None = None
        self.protocol = ""
        self.logs: deque[str] = deque(maxlen=LOG_LINES_KEPT)
        self.started_at = 0.0
        self.ready_at: float | None = None
        self._client: Any = None
        self._sdk: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._wake = asyncio.Event()
        self._stale: set[str] = set()
        self._timed_out = False
        self.responsive = False
        """A UI is drawn by this process: the SDK's import hands the GIL back often."""
        self.patience: float | None = None
        """Seconds to wait for the connection instead of ``startupTimeout`` (the user authorizing it)."""
        self.on_stopped: Callable[[], None] | None = None

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        self.started_at = time.monotonic()
        self.state, self.error = "starting", None
        self._stop = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp:{self.name}")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self, timeout: float = 8.0) -> None:
        """End the connection (the SDK closes stdin, then terminates the process tree)."""
        task = self._task
        if task is None or task.done():
            return
        self._stop.set()
        self._wake.set()
        if self.state == "starting":  # nothing to finish: do not wait for a slow server to answer first
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=2.0)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        assert me is not None

        def give_up() -> None:
            if self.state == "starting":
                self._timed_out = True
                me.cancel()

        limit = self.patience or self.config.startup_timeout_ms / 1000
        timer = loop.call_later(limit, give_up)
        try:
            await self._connected(timer)
        except asyncio.CancelledError:
            if not self._timed_out:
                self._finish("stopped", None)
                raise
            me.uncancel()
            self._finish("failed", f"did not answer within {limit:g} s (startupTimeout)")
        except Exception as e:
            self._finish(*self._failure(e))
        else:
            self._finish("stopped" if self._stop.is_set() else "failed", self.error)
        finally:
            timer.cancel()

    def _finish(self, state: State, error: str | None) -> None:
        self._client = None
        self.state, self.error = state, error
        self.hooks.changed(self)
        if self.on_stopped is not None:
            self.on_stopped()

    def _failure(self, error: BaseException) -> tuple[State, str]:
        leaf = error
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        name = type(leaf).__name__
        if name in ("AuthorizationNeeded", "OAuthFlowError", "OAuthTokenError", "OAuthRegistrationError"):
            return "needs-auth", f"{one_line(leaf)}; run /mcp auth {self.name}"
        status = getattr(getattr(leaf, "response", None), "status_code", None)
        if status == 401:
            return "needs-auth", f"the server answered 401 Unauthorized; run /mcp auth {self.name}"
        if isinstance(leaf, FileNotFoundError):
            return "failed", f"cannot start {self.config.command!r}: no such program"
        if isinstance(leaf, PermissionError):
            return "failed", f"cannot start {self.config.command!r}: permission denied"
        return "failed", self._with_stderr(one_line(leaf))

    def _with_stderr(self, text: str) -> str:
        last = last_line(self.log_path)
        return f"{text} (stderr: {last})" if last and last not in text else text

    async def _connected(self, timer: asyncio.TimerHandle) -> None:
        sdk = await load_sdk(self.responsive)
        self._sdk = sdk
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        with open(self.log_path, "a", encoding="utf-8", errors="replace") as errlog:
            errlog.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting {self.config.describe()}\n")
            errlog.flush()
            closed = asyncio.Event()
            transport = _Watched(self.hooks.transport(self, sdk, errlog), closed)
            client = sdk.Client(
                transport,
                cache=None,
                client_info=sdk.types.Implementation(name="caddie", version=_version()),
                elicitation_callback=self._on_elicit,
                sampling_callback=self._on_sample,
                list_roots_callback=self._on_roots,
                logging_callback=self._on_log,
                message_handler=self._on_message,
                log_level="info",
                mode=self.config.protocol,
            )
            async with client:
                self._client = client
                self.protocol = client.protocol_version
                info = client.server_info
                self.server_name = f"{info.name} {info.version}".strip() if info is not None else ""
                self.instructions = client.instructions
                await self._set_log_level(client)
                await self._read_lists(client, {"tools", "prompts", "resources"})
                timer.cancel()
                self.state, self.error, self.ready_at = "ready", None, time.monotonic()
                self.hooks.changed(self)
                async with self._listening(client):
                    await self._serve(client, closed)

    async def _serve(self, client: Any, closed: asyncio.Event) -> None:
        closing = asyncio.ensure_future(closed.wait())
        try:
            while not self._stop.is_set():
                self._wake.clear()
                if self._stale:
                    kinds, self._stale = set(self._stale), set()
                    with contextlib.suppress(Exception):  # a failed re-read keeps the old lists
                        await self._read_lists(client, kinds)
                    self.hooks.changed(self)
                    continue
                waking = asyncio.ensure_future(self._wake.wait())
                await asyncio.wait({closing, waking}, return_when=asyncio.FIRST_COMPLETED)
                waking.cancel()
                if closing.done() and not self._stop.is_set():
                    self.error = self._with_stderr("the server closed the connection (it exited or crashed)")
                    return
        finally:
            closing.cancel()

    @contextlib.asynccontextmanager
    async def _listening(self, client: Any) -> AsyncIterator[None]:
        """On 2026-07-28 connections list changes come through ``subscriptions/listen``; older servers send
        ``notifications/*/list_changed`` (``_on_message``)."""
        if client.protocol_version not in self._sdk.modern_versions:
            yield
            return

        async def listen() -> None:
            with contextlib.suppress(Exception):
                async with client.listen(
                    tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
                ) as sub:
                    async for event in sub:
                        kind = type(event).__name__.lower()
                        self.mark_stale(
                            {k for k in ("tools", "prompts", "resources") if k[:-1] in kind}
                            or {"tools", "prompts", "resources"}
                        )

        task = asyncio.ensure_future(listen())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _set_log_level(self, client: Any) -> None:
        caps = client.server_capabilities
        if (
            getattr(caps, "logging", None) is not None
            and client.protocol_version not in self._sdk.modern_versions
        ):
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore"
                )  # deprecated only from 2026-07-28; handshake-era servers use it
                await client.set_logging_level("info")

    async def _read_lists(self, client: Any, kinds: set[str]) -> None:
        caps = client.server_capabilities
        if "tools" in kinds and getattr(caps, "tools", None) is not None:
            self.lists.tools = [dump(t) for t in await _paged(client.list_tools)]
        if "prompts" in kinds and getattr(caps, "prompts", None) is not None:
            self.lists.prompts = [dump(p) for p in await _paged(client.list_prompts)]
        if "resources" in kinds and getattr(caps, "resources", None) is not None:
            self.lists.resources = [dump(r) for r in await _paged(client.list_resources)]
            with contextlib.suppress(Exception):
                self.lists.templates = [dump(t) for t in await _paged(client.list_resource_templates)]

    def mark_stale(self, kinds: set[str]) -> None:
        self._stale |= kinds
        self._wake.set()

    # -- requests ---------------------------------------------------------------------------------------
    def _require(self) -> Any:
        if self._client is None or self.state != "ready":
            raise ConnectionError(f'MCP server "{self.name}" is not connected ({self.error or self.state})')
        return self._client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        on_progress: Callable[[float, float | None, str | None], Any],
    ) -> dict[str, Any]:
        client = self._require()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            on_progress(done, total, message)

        result = await client.call_tool(
            tool, arguments, read_timeout_seconds=self.config.timeout_ms / 1000, progress_callback=progress
        )
        return dump(result)

    async def get_prompt(self, prompt: str, arguments: dict[str, str]) -> dict[str, Any]:
        return dump(await self._require().get_prompt(prompt, arguments))

    async def read_resource(self, uri: str) -> dict[str, Any]:
        return dump(await self._require().read_resource(uri))

    async def roots_changed(self) -> None:
        client = self._client
        if client is not None and client.protocol_version not in self._sdk.modern_versions:
            with contextlib.suppress(Exception):
                await client.send_roots_list_changed()

    # -- the server's requests and notices --------------------------------------------------------------
    async def _on_elicit(self, _ctx: Any, params: Any) -> Any:
        types = self._sdk.types
        try:
            answer = await self.hooks.elicit(self, dump(params))
        except Refused as e:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(e))
        return types.ElicitResult.model_validate(answer)

    async def _on_sample(self, _ctx: Any, params: Any) -> Any:
        types = self._sdk.types
        try:
            answer = await self.hooks.sample(self, dump(params))
        except Refused as e:
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(e))
        return types.CreateMessageResult.model_validate(answer)

    async def _on_roots(self, _ctx: Any) -> Any:
        types = self._sdk.types
        return types.ListRootsResult(roots=[types.Root.model_validate(r) for r in self.hooks.roots()])

    async def _on_log(self, params: Any) -> None:
        data = params.data
        text = data if isinstance(data, str) else repr(data)
        if params.logger:
            text = f"{params.logger}: {text}"
        self.logs.append(f"[{params.level}] {text}")
        self.hooks.logged(self, str(params.level), text)

    async def _on_message(self, message: Any) -> None:
        name = type(message).__name__
        if name == "ToolListChangedNotification":
            self.mark_stale({"tools"})
        elif name == "PromptListChangedNotification":
            self.mark_stale({"prompts"})
        elif name == "ResourceListChangedNotification":
            self.mark_stale({"resources"})


async def _paged(fetch: Callable[..., Any], limit: int = 100) -> list[Any]:
    """Every item of a paginated list (at most ``limit`` pages, so a server that never ends cannot hang)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(limit):
        page = await (fetch(cursor=cursor) if cursor else fetch())
        for attr in ("tools", "prompts", "resources", "resource_templates"):
            if hasattr(page, attr):
                items += getattr(page, attr)
                break
        cursor = page.next_cursor
        if not cursor:
            break
    return items


class _Watched:
    """A transport whose read stream is relayed, so the connection's end is seen (``closed`` set) even when
    nothing is waiting on the server: a crash while idle."""

    def __init__(self, transport: Any, closed: asyncio.Event) -> None:
        self._transport = transport
        self._closed = closed
        self._stack: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> tuple[Any, Any]:
        import anyio

        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        try:
            read, write = await stack.enter_async_context(self._transport)
            send, receive = anyio.create_memory_object_stream[Any](0)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)
            closed = self._closed

            async def relay() -> None:
                try:
                    async with send:
                        async for item in read:
                            await send.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                finally:
                    closed.set()

            group.start_soon(relay)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        self._stack = stack
        return receive, write

    async def __aexit__(self, *exc: Any) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is not None:
            return await stack.__aexit__(*exc)
        return None


def last_line(path: str, limit: int = 4096) -> str:
    """The last non-empty line of a log file that is not one of caddie's own markers."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip() and not ln.startswith("--- ")]
    return lines[-1][:200] if lines else ""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("caddie-agent")
    except Exception:  # only the version told to MCP servers; a source checkout has no installed metadata
        return "0"
