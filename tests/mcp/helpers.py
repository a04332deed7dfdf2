"""Sessions with MCP servers for the tests: the real AgentSession (faux model, recording UI) with the
bundled mcp extension, and real server processes — ``small_server.py`` (built with the SDK's own server
API) and the reference ``@modelcontextprotocol/server-everything`` from npm, when installed."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from caddie.extensions.bundled.mcp import register
from caddie.extensions.bundled.mcp.runtime import McpRuntime, pool
from tests.interop.pi import skip_or_fail
from tests.runtime.harness import Run, inline_extension, start_session

SMALL = str(Path(__file__).with_name("small_server.py"))
EVERYTHING_DIR = Path(
    os.environ.get("CADDIE_MCP_EVERYTHING", Path.home() / ".cache" / "caddie" / "mcp-everything")
)
EVERYTHING_JS = (
    EVERYTHING_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)
NODE_CANDIDATES = (
    Path(os.environ.get("CADDIE_PI_DIR", Path.home() / ".cache" / "caddie" / "pi"))
    / "node_modules"
    / "node"
    / "bin"
    / "node",
    Path.home() / ".cache" / "caddie" / "pi" / "node_modules" / "node" / "bin" / "node",
)


def small(*args: str, **fields: Any) -> dict[str, Any]:
    """A stdio entry running the small test server."""
    return {"command": sys.executable, "args": [SMALL, *args], **fields}


def node() -> str | None:
    for candidate in NODE_CANDIDATES:
        if candidate.is_file():
            return str(candidate)
    return shutil.which("node")


def everything() -> tuple[str, str]:
    """Node and server-everything's entry point (skips locally without them, fails under CI=1)."""
    exe = node()
    if exe is None or not EVERYTHING_JS.is_file():
        skip_or_fail(
            f"@modelcontextprotocol/server-everything is not installed in {EVERYTHING_DIR} "
            "(.ci/run installs it)"
        )
    assert exe is not None
    return exe, str(EVERYTHING_JS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def mcp_session(
    cwd: Path,
    servers: dict[str, Any],
    *,
    wait: tuple[str, ...] | None = None,
    settings: dict[str, Any] | None = None,
    mode: str = "tui",
    **kwargs: Any,
) -> McpRun:
    """A started session with ``servers`` in the user settings and the mcp extension loaded from its
    ``register`` (so the test holds its state: ``McpRun.mcp``); waits until ``wait`` (default: all) are
    connected or have failed."""
    data = {"mcpServers": servers, "disabledExtensions": ["mulligan", "goal", "mcp"], **(settings or {})}
    held: list[McpRuntime] = []
    extension = inline_extension(lambda api: held.append(register(api)), "mcp")
    extensions = [*kwargs.pop("extensions", ()), extension]
    run = await start_session(cwd, settings=data, bundled=True, mode=mode, extensions=extensions, **kwargs)
    await settle(tuple(servers) if wait is None else wait)
    return McpRun(run.session, run.faux, run.ui, run.events, held[0])


@dataclass
class McpRun(Run):
    mcp: McpRuntime = field(default=None)  # type: ignore[assignment]

    def notices(self) -> str:
        return "\n".join(text for text, _level in self.ui.notices)


async def settle(names: tuple[str, ...], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        conns = pool()
        if all(n in conns and conns[n].state != "starting" for n in names):
            return
        await asyncio.sleep(0.05)
    states = {n: (c.state, c.error) for n, c in pool().items()}
    raise AssertionError(f"MCP servers did not settle in {timeout} s: {states}")


async def until(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def closing(run: Run, body: Callable[[], Awaitable[None]]) -> None:
    try:
        await body()
    finally:
        await run.session.shutdown("quit")
