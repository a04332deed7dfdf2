"""The connection under a request: abort and stall guarding, cross-origin redirects, reused SDK clients."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from caddie.ai.abort import AbortSignal
from caddie.errors import Aborted, ProviderError

T = TypeVar("T")

DEFAULT_IDLE_TIMEOUT_S = 300.0
"""Used when ``StreamOptions.timeout_s`` is None (Pi's ``httpIdleTimeoutMs`` default)."""


class Stalled(ProviderError):
    """No data arrived from the server for the idle timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no data for {seconds:g}s")
        self.seconds = seconds


class NoProgress(ProviderError):
    """Data kept arriving, but no content (only empty chunks or keep-alives) for the no-progress deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no content for {seconds:g}s")
        self.seconds = seconds


class CrossOriginRedirect(ProviderError):
    """The server redirected a request to another origin; the request is not sent there."""

    def __init__(self, source: str, target: str) -> None:
        super().__init__(f"redirect from {source} to {target}")
        self.source = source
        self.target = target


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: Any) -> tuple[str, str, int | None]:
    scheme = str(url.scheme).lower()
    return scheme, str(url.host).lower(), url.port or _DEFAULT_PORTS.get(scheme)


async def refuse_cross_origin_redirects(response: Any) -> None:
    """An httpx response hook: a redirect to another origin (scheme, host, port) raises
    ``CrossOriginRedirect`` before the redirected request is built, so no header of ours — key, models.json
    headers — ever reaches that origin. Same-origin redirects, and the upgrade of the same host from http
    to https on default ports, are followed as usual."""
    if not response.has_redirect_location:
        return
    source = response.request.url
    target = source.join(response.headers["location"])
    here, there = _origin(source), _origin(target)
    if here == there:
        return
    upgrade = here[0] == "http" and there[0] == "https" and here[1] == there[1] and here[2] == 80
    if upgrade and there[2] == 443:
        return
    raise CrossOriginRedirect(str(source), str(target.copy_with(query=None, fragment=None)))


def redirect_hooks() -> dict[str, list[Any]]:
    """``event_hooks`` for an SDK's httpx client (see ``refuse_cross_origin_redirects``)."""
    return {"response": [refuse_cross_origin_redirects]}


def openai_client_factory(
    base_url: str | None, max_retries: int, *, azure_api_version: str | None = None
) -> Callable[[str | None, dict[str, str], Any], Any]:
    """``make_client`` for ``stream_via_sdk`` on an OpenAI-protocol endpoint: an ``AsyncOpenAI`` (or, with
    ``azure_api_version``, an ``AsyncAzureOpenAI``) with the key, headers, retries and idle timeout, on an
    httpx client that refuses cross-origin redirects. The SDK is imported when a client is made."""

    def make(key: str | None, headers: dict[str, str], idle: Any) -> Any:
        import openai

        where: dict[str, Any] = {"base_url": base_url}
        if azure_api_version is not None:
            where["api_version"] = azure_api_version
        sdk_class = openai.AsyncAzureOpenAI if azure_api_version is not None else openai.AsyncOpenAI
        return sdk_class(
            api_key=key,
            max_retries=max_retries,
            default_headers=headers,
            timeout=idle,
            http_client=openai.DefaultAsyncHttpxClient(timeout=idle, event_hooks=redirect_hooks()),
            **where,
        )

    return make


class ClientCache:
    """SDK clients kept per event loop and configuration, so requests reuse HTTP connections.

    Creating a client per request costs a TCP (and TLS) handshake and the SDK's set-up on every turn; a
    long session makes hundreds of requests to the same endpoint. Clients are bound to the loop they were
    created on (their connection pool is), hence the loop in the key; clients of a loop that has closed are
    dropped the next time the cache is used.
    """

    def __init__(self, limit: int = 16) -> None:
        self._clients: dict[tuple[Any, ...], tuple[asyncio.AbstractEventLoop, Any]] = {}
        self._limit = limit

    def get(self, key: tuple[Any, ...], create: Any) -> Any:
        loop = asyncio.get_running_loop()
        for k, (owner, _) in list(self._clients.items()):
            if owner.is_closed():
                del self._clients[k]
        full_key = (id(loop), *key)
        entry = self._clients.get(full_key)
        if entry is None:
            if len(self._clients) >= self._limit:
                self._clients.pop(next(iter(self._clients)))
            entry = (loop, create())
            self._clients[full_key] = entry
        return entry[1]

    async def get_async(self, key: tuple[Any, ...], create: Any) -> Any:
        """``get``, but a new client is built in a worker thread (its TLS set-up reads the CA bundle)."""
        if (id(asyncio.get_running_loop()), *key) in self._clients:
            return self.get(key, create)
        client = await asyncio.to_thread(create)
        return self.get(key, lambda: client)


class StreamGuard:
    """Runs each network await against the abort signal and an idle timeout.

    ``await guard.run(x)`` returns ``x``'s result, raises ``Aborted`` at once when the signal fires (the
    pending read is cancelled, which closes the HTTP stream) and ``Stalled`` when ``x`` takes longer than
    the idle timeout. ``x`` runs in the caller's task (no task per chunk): an abort cancels that task only
    while it waits in ``run``; one that fires in between is seen by the next ``run``.
    """

    def __init__(self, signal: AbortSignal | None, idle_timeout_s: float | None) -> None:
        self.idle_timeout_s = idle_timeout_s if idle_timeout_s and idle_timeout_s > 0 else None
        self._loop = asyncio.get_running_loop()
        self._aborted = False
        self._waiting: asyncio.Task[Any] | None = None
        """The task waiting in ``run``, which an abort cancels."""
        self._cancelled_by_abort = False
        self._remove = signal.add_listener(self._on_abort) if signal is not None else None

    def _on_abort(self) -> None:
        def fire() -> None:
            if self._aborted:
                return
            self._aborted = True
            if self._waiting is not None:
                self._cancelled_by_abort = True
                self._waiting.cancel()

        try:
            self._loop.call_soon_threadsafe(fire)
        except RuntimeError:  # loop already closed
            pass

    @property
    def aborted(self) -> bool:
        return self._aborted

    async def run(self, awaitable: Awaitable[T], timeout_s: float | None = None) -> T:
        """``awaitable``'s result; ``Stalled`` after ``timeout_s`` (default: the idle timeout)."""
        limit = timeout_s if timeout_s is not None else self.idle_timeout_s
        if self._aborted:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise Aborted()
        task = asyncio.current_task()
        assert task is not None
        self._waiting = task
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await awaitable
        except asyncio.CancelledError:
            if self._cancelled_by_abort:
                self._cancelled_by_abort = False
                task.uncancel()
                raise Aborted() from None
            raise
        except TimeoutError:
            if deadline.expired():
                raise Stalled(limit or 0.0) from None
            raise
        finally:
            self._waiting = None

    def close(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None
