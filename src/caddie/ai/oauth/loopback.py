"""The one-shot loopback server of a browser login, and its race with a pasted redirect URL or code.

The server listens on 127.0.0.1 only (never another interface), serves the callback ``path`` once, and
checks the ``state`` the login put in the authorization URL: a request with another state is answered
with an error page and ignored. It gives up after ``LOGIN_TIMEOUT_S``.

``wait_for_code`` races it against the user pasting the final redirect URL (or ``code#state``, a query
string, or the bare code) — for a browser on another machine, which cannot reach this loopback address.
Whichever comes first wins; the other is withdrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from caddie.ai.oauth.types import LoginFailed, LoginInteraction, LoginPrompt

HOST = "127.0.0.1"
LOGIN_TIMEOUT_S = 300.0
"""How long a browser login waits for the callback or a paste."""


@dataclass(frozen=True, slots=True)
class CallbackResult:
    code: str
    state: str | None


def _page(title: str, detail: str = "") -> bytes:
    body = f"<p>{html.escape(detail)}</p>" if detail else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>caddie</title></head>"
        f"<body style='font-family:sans-serif;margin:3em'><h2>{html.escape(title)}</h2>{body}</body></html>"
    ).encode()


class LoopbackServer:
    """Serves ``GET <path>?code=…&state=…`` once on 127.0.0.1 (see the module docstring). ``on_code``, when
    given, runs before the browser gets its answer (OpenRouter exchanges the code there, so the page can
    say whether the login worked)."""

    def __init__(
        self,
        path: str,
        expected_state: str | None,
        success_text: str,
        on_code: Callable[[str], Awaitable[object]] | None = None,
    ) -> None:
        self.path = path
        self.expected_state = expected_state
        self.success_text = success_text
        self.on_code = on_code
        self.port = 0
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[CallbackResult] | None = None
        self._claimed = False

    async def start(self, port: int) -> LoopbackServer:
        """Listen on ``port`` (0: any free one); ``LoginFailed`` when it is taken."""
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._serve, HOST, port)
        except OSError as exc:
            raise LoginFailed(
                f"Cannot listen on {HOST}:{port} for the login callback ({exc.strerror or exc}); close what "
                "uses that port, or paste the redirect URL when asked."
            ) from None
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, host: str = HOST) -> str:
        return f"http://{host}:{self.port}{self.path}"

    async def wait(self) -> CallbackResult:
        assert self._result is not None
        return await asyncio.shield(self._result)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._result is not None and not self._result.done():
            self._result.cancel()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, page = await self._answer(reader)
            reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 409: "Conflict"}.get(status, "Error")
            head = (
                f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\n"
                f"cache-control: no-store\r\ncontent-length: {len(page)}\r\nconnection: close\r\n\r\n"
            )
            writer.write(head.encode() + page)
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass  # a broken browser connection: the login keeps waiting
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        request_line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
        while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
            pass
        parts = request_line.split()
        target = urlsplit(parts[1] if len(parts) > 1 else "/")
        if (parts[0] if parts else "") != "GET" or target.path != self.path:
            return 404, _page("Callback route not found.")
        query = {k: v[0] for k, v in parse_qs(target.query).items()}
        result = self._result
        assert result is not None
        if self._claimed or result.done():
            return 409, _page("This login callback has already been used.")
        if self.expected_state is not None and query.get("state") != self.expected_state:
            return 400, _page("State mismatch.", "This page does not belong to the login in progress.")
        if query.get("error"):
            detail = query.get("error_description") or query["error"]
            result.set_exception(LoginFailed(f"The authorization was refused: {detail}."))
            return 400, _page("Authentication did not complete.", detail)
        code = query.get("code")
        if not code:
            return 400, _page("Missing authorization code.")
        self._claimed = True
        if self.on_code is not None:
            try:
                await self.on_code(code)
            except Exception as exc:
                result.set_exception(exc)
                return 502, _page("The login failed.", str(exc))
        result.set_result(CallbackResult(code, query.get("state")))
        return 200, _page(self.success_text, "You can close this window and return to caddie.")


def parse_pasted(text: str) -> CallbackResult | None:
    """A pasted redirect URL, ``code#state``, ``code=…&state=…`` or bare code; None when empty."""
    value = text.strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme in ("http", "https") and parts.netloc:
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        code = query.get("code")
        return CallbackResult(code, query.get("state")) if code else None
    if "#" in value:
        code, _, state = value.partition("#")
        return CallbackResult(code, state or None)
    if "code=" in value:
        query = {k: v[0] for k, v in parse_qs(value).items()}
        code = query.get("code")
        return CallbackResult(code, query.get("state")) if code else None
    return CallbackResult(value, None)


async def wait_for_code(
    interaction: LoginInteraction,
    server: LoopbackServer,
    *,
    message: str,
    placeholder: str,
    expected_state: str | None,
    timeout_s: float | None = None,
) -> CallbackResult:
    """The first of: the browser reaching ``server``, or the user pasting the redirect URL or code (its
    ``state``, when it has one, must be the login's). ``LoginFailed`` on a timeout or a mismatch."""
    withdrawn = asyncio.Event()
    prompt = asyncio.ensure_future(
        interaction.prompt(LoginPrompt("manual_code", message, placeholder, withdrawn=withdrawn))
    )
    callback = asyncio.ensure_future(server.wait())
    limit = LOGIN_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done, _ = await asyncio.wait({prompt, callback}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        if callback in done:
            return callback.result()
        if prompt in done:
            pasted = parse_pasted(prompt.result() or "")
            if pasted is None:
                if callback.done():
                    return callback.result()
                raise LoginFailed("Login cancelled; nothing stored.")
            if expected_state is not None and pasted.state is not None and pasted.state != expected_state:
                raise LoginFailed(
                    "The pasted URL belongs to another login (its state does not match); try again."
                )
            return pasted
        raise LoginFailed(f"No login callback and no pasted code within {limit:g}s; run /login again.")
    finally:
        withdrawn.set()
        for task in (prompt, callback):
            if not task.done():
                task.cancel()
        for task in (prompt, callback):
            with contextlib.suppress(BaseException):
                await task
