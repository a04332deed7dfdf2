"""OAuth for remote MCP servers, through the SDK's ``OAuthClientProvider`` (discovery, dynamic client
registration, PKCE, refresh): caddie supplies where tokens are kept and how the user's browser reaches the
authorization page and comes back.

Tokens live in ``~/.caddie/agent/mcp-auth.json`` (mode 0600, like ``auth.json``), keyed by server name and
URL; every token is registered as a secret, so error texts never show one. The browser step runs only when
the user asks (``/mcp auth NAME``): caddie listens on ``127.0.0.1`` for the redirect, opens the page with
the ``webbrowser`` module (``$BROWSER`` is honoured) and shows its URL. A connection made without that
request refuses to start the flow, and the server is listed as needing authorization.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import webbrowser
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from caddie.extensions.api import ConfigurationError, register_secret
from caddie.extensions.bundled.mcp.config import ServerConfig

AUTH_FILE = "mcp-auth.json"
CALLBACK_PATH = "/callback"
AUTH_WAIT_SECONDS = 300.0


class AuthorizationNeeded(ConfigurationError):
    """The server wants the user to authorize caddie, and this connection may not ask."""


class TokenFile:
    """The SDK's ``TokenStorage`` for one server, in the shared 0600 file."""

    def __init__(self, path: str, config: ServerConfig, sdk: Any) -> None:
        self._path = path
        self._key = f"{config.name} {config.url}"
        self._sdk = sdk

    def _read(self) -> dict[str, Any]:
        try:
            with open(self._path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _entry(self) -> dict[str, Any]:
        entry = self._read().get(self._key)
        return entry if isinstance(entry, dict) else {}

    def _write(self, field: str, value: dict[str, Any]) -> None:
        data = self._read()
        old = data.get(self._key)
        entry: dict[str, Any] = old if isinstance(old, dict) else {}
        entry[field] = value
        data[self._key] = entry
        self._write_all(data)

    def drop_client_unless(self, redirect_uri: str) -> None:
        """A client registered for another redirect address (an earlier listener's port) cannot finish this
        authorization: forget it, so the SDK registers again."""
        client = self._entry().get("client")
        if isinstance(client, dict) and redirect_uri not in (client.get("redirect_uris") or []):
            data = self._read()
            entry = data.get(self._key)
            if isinstance(entry, dict):
                entry.pop("client", None)
                self._write_all(data)

    def _write_all(self, data: dict[str, Any]) -> None:
        os.makedirs(os.path.dirname(self._path) or ".", exist_ok=True)
        tmp = f"{self._path}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self._path)

    def has_tokens(self) -> bool:
        return isinstance(self._entry().get("tokens"), dict)

    def forget(self) -> None:
        data = self._read()
        if data.pop(self._key, None) is not None:
            self._write_all(data)

    async def get_tokens(self) -> Any:
        raw = self._entry().get("tokens")
        if not isinstance(raw, dict):
            return None
        _register(raw)
        return self._sdk.OAuthToken.model_validate(raw)

    async def set_tokens(self, tokens: Any) -> None:
        raw = tokens.model_dump(mode="json", exclude_none=True)
        _register(raw)
        self._write("tokens", raw)

    async def get_client_info(self) -> Any:
        raw = self._entry().get("client")
        if not isinstance(raw, dict):
            return None
        register_secret(raw.get("client_secret"))
        return self._sdk.OAuthClientInformationFull.model_validate(raw)

    async def set_client_info(self, client_info: Any) -> None:
        raw = client_info.model_dump(mode="json", exclude_none=True)
        register_secret(raw.get("client_secret"))
        self._write("client", raw)


def _register(tokens: dict[str, Any]) -> None:
    register_secret(tokens.get("access_token"))
    register_secret(tokens.get("refresh_token"))


class BrowserFlow:
    """The redirect and callback halves of one authorization: a one-shot HTTP listener on 127.0.0.1."""

    def __init__(self, port: int | None, show: Callable[[str], None], interactive: bool) -> None:
        self._port = port or 0
        self._show = show
        self._interactive = interactive
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[tuple[str, str | None, str | None]] | None = None
        self.redirect_uri = ""

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._result = loop.create_future()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self._port)
        port = self._server.sockets[0].getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{port}{CALLBACK_PATH}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def redirect(self, url: str) -> None:
        if not self._interactive:
            raise AuthorizationNeeded("the server asks for authorization")
        self._show(url)
        await asyncio.to_thread(open_in_browser, url)

    async def callback(self) -> tuple[str, str | None, str | None]:
        assert self._result is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), AUTH_WAIT_SECONDS)
        except TimeoutError:
            raise AuthorizationNeeded(f"no answer from the browser within {AUTH_WAIT_SECONDS:g} s") from None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass
            parts = request.decode("latin-1").split(" ")
            query = parse_qs(urlsplit(parts[1]).query) if len(parts) > 1 else {}
            code = (query.get("code") or [""])[0]
            error = (query.get("error") or [""])[0]
            ok = bool(code) and urlsplit(parts[1]).path == CALLBACK_PATH
            body = (
                "caddie is authorized; you can close this tab."
                if ok
                else f"Authorization failed: {error or 'no code in the redirect'}"
            )
            writer.write(
                f"HTTP/1.1 {'200 OK' if ok else '400 Bad Request'}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n{body}".encode()
            )
            await writer.drain()
            result = self._result
            if result is not None and not result.done() and (ok or error):
                if ok:
                    state = query.get("state", [])
                    issuer = query.get("iss", [])
                    result.set_result((code, state[0] if state else None, issuer[0] if issuer else None))
                else:
                    result.set_exception(AuthorizationNeeded(f"the authorization server said {error}"))
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def open_in_browser(url: str) -> None:
    """``webbrowser.open`` (``$BROWSER`` honoured); a machine without a browser just shows the URL."""
    with contextlib.suppress(Exception):
        webbrowser.open(url)


def provider(
    sdk: Any,
    config: ServerConfig,
    storage: TokenFile,
    flow: BrowserFlow,
) -> Any:
    """The SDK's ``OAuthClientProvider`` (an ``httpx`` auth) for this server."""

    async def callback() -> Any:
        code, state, issuer = await flow.callback()
        return sdk.AuthorizationCodeResult(code=code, state=state, iss=issuer)

    oauth = config.oauth
    metadata: dict[str, Any] = {
        "client_name": "caddie",
        "redirect_uris": [flow.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post" if oauth and oauth.client_secret else "none",
    }
    if oauth is not None and oauth.scopes:
        metadata["scope"] = oauth.scopes
    redirect: Callable[[str], Awaitable[None]] = flow.redirect
    return sdk.OAuthClientProvider(
        server_url=config.url,
        client_metadata=sdk.OAuthClientMetadata.model_validate(metadata),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )


async def preset_client(storage: TokenFile, config: ServerConfig, flow: BrowserFlow, sdk: Any) -> None:
    """A client id given in the config (a server without dynamic registration) is stored as registered."""
    oauth = config.oauth
    if oauth is None or not oauth.client_id:
        storage.drop_client_unless(flow.redirect_uri)
        return
    if await storage.get_client_info() is not None:
        return
    info: dict[str, Any] = {"client_id": oauth.client_id, "redirect_uris": [flow.redirect_uri]}
    if oauth.client_secret:
        info["client_secret"] = oauth.client_secret
        info["token_endpoint_auth_method"] = "client_secret_post"
    else:
        info["token_endpoint_auth_method"] = "none"
    await storage.set_client_info(sdk.OAuthClientInformationFull.model_validate(info))
