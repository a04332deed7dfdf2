"""How caddie reaches one server: a stdio process, or streamable HTTP / SSE with headers and the SDK's
OAuth. Returns the SDK transport (an async context manager yielding the two message streams)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import is_secret_variable, register_secret, register_secret_headers
from caddie.extensions.bundled.mcp import oauth
from caddie.extensions.bundled.mcp.config import ServerConfig


def secret_env_values(env: tuple[tuple[str, str], ...]) -> list[str]:
    """The values of a server's ``env`` that are secrets (redacted from error texts): caddie's one list of
    secret-looking variables (``is_secret_variable``: names with KEY, TOKEN, PASSWORD, PAT, AUTH…, and URLs
    carrying a password), the same the tools' environment filter uses."""
    return [value for name, value in env if is_secret_variable(name, value)]


@dataclass(frozen=True, slots=True)
class Place:
    cwd: str
    """Where stdio servers start unless their entry says ``cwd``."""
    agent_dir: str
    """Where the OAuth tokens are kept."""


def open_transport(
    config: ServerConfig,
    sdk: Any,
    errlog: Any,
    place: Place,
    interactive: bool,
    show_url: Callable[[str], None],
) -> Any:
    if config.transport == "stdio":
        for value in secret_env_values(config.env):
            register_secret(value)
        params = sdk.StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=config.cwd or place.cwd,
        )
        return sdk.stdio_client(params, errlog=errlog)
    return remote(config, sdk, place, interactive, show_url)


@contextlib.asynccontextmanager
async def remote(
    config: ServerConfig, sdk: Any, place: Place, interactive: bool, show_url: Callable[[str], None]
) -> AsyncIterator[Any]:
    """Streamable HTTP or SSE, with the configured headers and (unless an Authorization header is set) OAuth
    through the SDK: stored tokens are used and refreshed; the browser opens only when ``interactive``
    (``/mcp auth NAME``)."""
    headers = dict(config.headers)
    register_secret_headers(headers)
    flow = oauth.BrowserFlow(config.oauth.callback_port if config.oauth else None, show_url, interactive)
    auth = None
    if not any(k.lower() == "authorization" for k in headers):
        await flow.open()
        storage = oauth.TokenFile(os.path.join(place.agent_dir or ".", oauth.AUTH_FILE), config, sdk)
        if interactive:
            await oauth.preset_client(storage, config, flow, sdk)
        auth = oauth.provider(sdk, config, storage, flow)
    http = sdk.httpx.AsyncClient(headers=headers, auth=auth, timeout=sdk.httpx.Timeout(30.0, read=300.0))
    try:
        if config.transport == "sse":
            async with sdk.sse_client(config.url, headers=headers, auth=auth) as streams:
                yield streams
        else:
            async with sdk.streamable_http_client(config.url, http_client=http) as streams:
                yield streams
    finally:
        await http.aclose()
        await flow.close()
