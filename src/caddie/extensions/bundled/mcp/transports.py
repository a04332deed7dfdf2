"""How caddie reaches one server: a stdio process, or streamable HTTP / SSE with headers and the SDK's
OAuth. Returns the SDK transport (an async context manager yielding the two message streams).

A stdio server runs in the session's sandbox when one is on (``ctx.sandbox``), like the ``bash`` tool's
commands, unless its entry says ``"sandbox": false``: the SDK starts the sandbox's standalone command line
(``Sandbox.prepare_standalone``), which needs no descriptors passed."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import Sandbox, is_secret_variable, register_secret, register_secret_headers
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
    sandbox: Sandbox | None = None,
) -> Any:
    if config.transport == "stdio":
        for value in secret_env_values(config.env):
            register_secret(value)
        if sandbox is not None and sandbox.active and config.sandbox:
            return sandboxed(config, sdk, errlog, config.cwd or place.cwd, sandbox)
        params = sdk.StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=config.cwd or place.cwd,
        )
        return sdk.stdio_client(params, errlog=errlog)
    return remote(config, sdk, place, interactive, show_url)


def in_sandbox(config: ServerConfig, sandbox: Sandbox | None) -> bool:
    """Whether this server runs in ``sandbox`` (stdio, the sandbox on, the entry not opting out)."""
    return config.transport == "stdio" and config.sandbox and sandbox is not None and sandbox.active


@contextlib.asynccontextmanager
async def sandboxed(
    config: ServerConfig, sdk: Any, errlog: Any, cwd: str, sandbox: Sandbox
) -> AsyncIterator[Any]:
    """The stdio transport for a server confined by ``sandbox``: the same environment it would get outside
    (the SDK's safe variables plus ``env``) and the sandbox's own (``TMPDIR``, the proxy, …)."""
    env = dict(config.env)
    search = env.get("PATH", os.environ.get("PATH"))
    if "/" not in config.command and shutil.which(config.command, path=search) is None:
        raise FileNotFoundError(2, "No such file or directory", config.command)
    prepared = sandbox.prepare_standalone([config.command, *config.args], cwd, env)
    errlog.write(f"(in the sandbox: {sandbox.summary()})\n")
    errlog.flush()
    try:
        params = sdk.StdioServerParameters(
            command=prepared.argv[0], args=prepared.argv[1:], env=prepared.env, cwd=cwd
        )
        async with sdk.stdio_client(params, errlog=errlog) as streams:
            yield streams
    finally:
        prepared.close()


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
