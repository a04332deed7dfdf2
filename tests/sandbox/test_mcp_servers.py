"""stdio MCP servers run in the session's sandbox (unless their entry says ``"sandbox": false``): a real
server process started by the mcp extension through the MCP SDK, under real bubblewrap."""

from __future__ import annotations

import asyncio
import http.server
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import TextContent, ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.bundled.mcp.commands import report
from tests.mcp.helpers import McpRun, closing, mcp_session
from tests.sandbox.conftest import SECRET, require_bwrap

PROBE = str(Path(__file__).with_name("probe_server.py"))


@pytest.fixture(autouse=True)
def bwrap(home: Path) -> None:
    require_bwrap()


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello through the proxy"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://localhost:{server.server_port}/"
    server.shutdown()
    server.server_close()


def probe(**fields: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [PROBE], **fields}


async def call(run: McpRun, tool: str, args: dict[str, object] | None = None) -> str:
    run.faux.set_responses([faux_message([faux_tool_call(tool, args or {})]), faux_message("ok")])
    await run.session.prompt(f"call {tool}")
    result = [m for m in run.session.messages if isinstance(m, ToolResultMessage)][-1]
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_a_stdio_server_runs_in_the_sandbox_unless_its_entry_opts_out(
    workspace: Path, outside: Path, home: Path, site: str
) -> None:
    settings = {"sandbox": {"mode": "workspace-write", "network": ["localhost"]}}
    servers = {"boxed": probe(), "free": probe(sandbox=False)}
    run = await mcp_session(workspace, servers, settings=settings)

    async def body() -> None:
        keep, key = outside / "keep.txt", home / ".ssh" / "id_ed25519"
        assert (
            await call(run, "mcp__boxed__write", {"path": str(workspace / "in.txt"), "text": "in"})
            == "written"
        )
        assert await call(run, "mcp__boxed__write", {"path": str(keep), "text": "x"}) == (
            "not written: Read-only file system"
        )
        assert await call(run, "mcp__boxed__read", {"path": str(key)}) == "not read: Permission denied"
        assert await call(run, "mcp__boxed__env", {"name": "CADDIE_SANDBOXED"}) == "workspace-write"
        assert await call(run, "mcp__boxed__pid") == "2"  # a PID namespace of its own
        assert await call(run, "mcp__boxed__fetch", {"url": site}) == "hello through the proxy"
        refused = await call(run, "mcp__boxed__fetch", {"url": "http://example.com/"})
        assert refused.startswith("fetch failed: HTTP Error 403")
        assert (workspace / "in.txt").read_text() == "in" and keep.read_text() == "original\n"

        assert await call(run, "mcp__free__env", {"name": "CADDIE_SANDBOXED"}) == "<unset>"
        assert await call(run, "mcp__free__read", {"path": str(key)}) == SECRET
        assert await call(run, "mcp__free__write", {"path": str(keep), "text": "changed"}) == "written"

        lines = report(run.mcp).splitlines()
        boxed = next(line for line in lines if line.strip().startswith("boxed"))
        free = next(line for line in lines if line.strip().startswith("free"))
        assert "connected · 5 tools · sandbox: workspace-write, network: only localhost" in boxed
        assert "sandbox:" not in free

    await closing(run, body)
    deadline = time.monotonic() + 10
    while running(PROBE) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert running(PROBE) == []  # quitting ended the sandboxed server with everything in its namespace


def running(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def test_with_the_sandbox_off_servers_run_as_before_and_a_failure_says_where_it_ran(
    workspace: Path, outside: Path
) -> None:
    plain = await mcp_session(workspace, {"probe": probe()})

    async def unconfined() -> None:
        assert await call(plain, "mcp__probe__env", {"name": "CADDIE_SANDBOXED"}) == "<unset>"
        assert "sandbox:" not in report(plain.mcp)

    await closing(plain, unconfined)

    settings = {"sandbox": {"mode": "read-only"}}
    run = await mcp_session(workspace, {"broken": probe(args=[PROBE, "--fail"])}, settings=settings)

    async def failed() -> None:
        line = next(line for line in report(run.mcp).splitlines() if "broken" in line)
        assert "failed" in line and "probe: failing at start, as asked" in line
        assert (
            '(it runs in the sandbox: read-only, network off; "sandbox": false in its entry runs it outside)'
            in line
        )
        assert '"sandbox": false in its entry runs it outside' in run.notices()

    await closing(run, failed)
