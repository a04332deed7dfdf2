"""The official ``mcp`` SDK, imported once in a worker thread: importing it takes over a second, and neither
the first frame nor the first request may wait on it. Everything that touches the SDK gets it from here."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

from caddie.extensions.api import import_in_background

_lock = threading.Lock()
_sdk: SimpleNamespace | None = None


def _import() -> SimpleNamespace:
    global _sdk
    with _lock:
        if _sdk is None:
            import httpx2
            import mcp_types
            from mcp.client.auth import OAuthClientProvider
            from mcp.client.sse import sse_client
            from mcp.client.stdio import stdio_client
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared.auth import (
                AuthorizationCodeResult,
                OAuthClientInformationFull,
                OAuthClientMetadata,
                OAuthToken,
            )
            from mcp.shared.exceptions import MCPError
            from mcp_types.version import MODERN_PROTOCOL_VERSIONS

            from mcp import Client, StdioServerParameters

            _sdk = SimpleNamespace(
                Client=Client,
                StdioServerParameters=StdioServerParameters,
                stdio_client=stdio_client,
                streamable_http_client=streamable_http_client,
                sse_client=sse_client,
                OAuthClientProvider=OAuthClientProvider,
                OAuthClientMetadata=OAuthClientMetadata,
                OAuthClientInformationFull=OAuthClientInformationFull,
                OAuthToken=OAuthToken,
                AuthorizationCodeResult=AuthorizationCodeResult,
                MCPError=MCPError,
                types=mcp_types,
                httpx=httpx2,
                modern_versions=frozenset(MODERN_PROTOCOL_VERSIONS),
            )
        return _sdk


MODULES = (
    "httpx2",
    "mcp_types",
    "mcp",
    "mcp.client.auth",
    "mcp.client.sse",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.shared.auth",
)


async def load_sdk(responsive: bool = True) -> Any:
    """The SDK's parts (a namespace), imported off the event loop the first time (``responsive``: a UI keeps
    answering keys while the thread imports)."""
    if _sdk is not None:
        return _sdk
    await asyncio.wrap_future(import_in_background(MODULES, responsive=responsive))
    return _import()


def loaded() -> bool:
    return _sdk is not None
