"""OAuth for a remote server, through the SDK's auth support, against a local fake authorization server
(``oauth_server.py``): refused until the user asks, then the browser round trip (``$BROWSER``), tokens
stored 0600 and reused by the next run, and a token that shows up in an error redacted."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mcp.helpers import free_port
from tests.rpc.conftest import Host, Rpc
from tests.rpc.conftest import host as host
from tests.support import fake_llm as fl

SERVER = str(Path(__file__).with_name("oauth_server.py"))
BROWSER = str(Path(__file__).with_name("browser.py"))


@pytest.fixture
def guarded() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"{base}/.well-known/oauth-authorization-server", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        yield f"{base}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def notice(rpc: Rpc, text: str, timeout: float = 60) -> str:
    found = rpc.wait_for(
        lambda o: (
            o.get("type") == "extension_ui_request"
            and o.get("method") == "notify"
            and text in o.get("message", "")
        ),
        timeout,
    )
    return str(found["message"])


def test_authorize_store_reuse_and_redact(host: Host, guarded: str, tmp_path: Path) -> None:
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{BROWSER}" "$1"\n')
    browser.chmod(0o755)
    settings = host.home / "agent" / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "mcpServers": {"remote": {"type": "http", "url": guarded}},
                "disabledExtensions": ["mulligan", "goal"],
            }
        )
    )
    env = {"BROWSER": str(browser)}

    rpc = host.rpc(env=env)
    try:
        assert "run /mcp auth remote" in notice(rpc, 'MCP server "remote" needs authorization')
        rpc.send({"type": "prompt", "id": "a", "message": "/mcp auth remote"})
        assert "Authorize caddie for MCP server" in notice(rpc, "Authorize caddie")
        notice(rpc, 'MCP server "remote" connected: 2 tools.')
        assert rpc.close() == 0
    finally:
        rpc.kill()

    stored = host.home / "agent" / "mcp-auth.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    entry = json.loads(stored.read_text())[f"remote {guarded}"]
    token = entry["tokens"]["access_token"]
    assert token.startswith("at-") and entry["client"]["client_id"]

    # the next run uses the stored token: no browser, tools at once
    browser.write_text("#!/bin/sh\nexit 1\n")
    host.llm.push(
        fl.tool_call("mcp__remote__secret", {}),
        fl.text("ok"),
        fl.tool_call("mcp__remote__leak", {}),
        fl.text("ok"),
    )
    rpc = host.rpc("--mcp-wait", "60", env=env)
    try:
        rpc.ok({"type": "prompt", "message": "tell me the secret"})
        rpc.event("agent_end", 60)
        assert host.llm.llm_requests[1].tool_results[0][1] == "the cake is a lie"
        rpc.ok({"type": "prompt", "message": "leak it"})
        rpc.event("agent_end", 60)
        leaked = host.llm.llm_requests[3].tool_results[-1][1]
        assert "token was [redacted]" in leaked and token not in leaked
        assert rpc.close() == 0
    finally:
        rpc.kill()
    assert not any("needs authorization" in json.dumps(o) for o in rpc.seen)
