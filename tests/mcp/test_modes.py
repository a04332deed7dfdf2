"""The same MCP server in every mode of the real ``caddie`` command (subprocesses, fake model server):
``-p`` (tools, a prompt command, elicitation refused with a reason), RPC (elicitation as extension UI
requests, abort cancelling a call), ACP (tools in an editor session)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acp import text_block
from tests.acp.conftest import Setup
from tests.acp.conftest import setup as setup
from tests.acp.harness import open_agent
from tests.mcp.helpers import small
from tests.rpc.conftest import Host
from tests.rpc.conftest import host as host
from tests.support import fake_llm as fl


def settings(home: Path, **extra: object) -> None:
    path = home / "agent" / "settings.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update({"mcpServers": {"small": small()}, "disabledExtensions": ["mulligan", "goal"], **extra})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def print_mode(home: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9")
    return subprocess.run(
        [sys.executable, "-m", "caddie", "--model", "fake/fake-model", "--mcp-wait", "60", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_print_mode(setup: Setup) -> None:
    settings(setup.home)
    setup.llm.push(
        fl.tool_call("mcp__small__add", {"a": 20, "b": 22}),
        fl.tool_call("mcp__small__ask", {}),
        fl.tool_call("mcp__small__pid", {}),
        fl.text("The sum is 42."),
        fl.text("reviewed"),
    )
    done = print_mode(setup.home, setup.project, "-p", "add 20 and 22, then ask me")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The sum is 42."
    assert "small server" not in done.stderr  # its stderr went to the log
    results = setup.llm.llm_requests[3].tool_results
    assert results[0][1] == "42"
    assert "caddie is running without a user interface" in results[1][1]
    pid = int(results[2][1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the server ended with the run
    # a prompt command in print mode
    done = print_mode(setup.home, setup.project, "-p", "/mcp__small__review app.py")
    assert done.returncode == 0, done.stderr
    assert "Please review app.py looking for bugs." in (setup.llm.llm_requests[-1].last_user_text or "")


def test_rpc_mode(host: Host) -> None:
    settings(host.home)
    host.llm.push(fl.tool_call("mcp__small__ask", {}), fl.text("greeted"))
    rpc = host.rpc("--mcp-wait", "60")
    try:
        rpc.send({"type": "prompt", "id": "p1", "message": "who am I?"})
        for value in ("Ann", "7"):
            request = rpc.wait_for(
                lambda o: o.get("type") == "extension_ui_request" and o.get("method") == "input", 60
            )
            rpc.send({"type": "extension_ui_response", "id": request["id"], "value": value})
        rpc.event("agent_end", 60)
        assert host.llm.llm_requests[1].tool_results[0][1] == "hello Ann, 7"

        # abort cancels a call the server never answers
        host.llm.push(fl.tool_call("mcp__small__hang", {}), fl.text("stopped"))
        rpc.send({"type": "prompt", "id": "p2", "message": "hang"})
        rpc.wait_for(
            lambda o: o.get("type") == "tool_execution_start" and o.get("toolName") == "mcp__small__hang", 30
        )
        rpc.ok({"type": "abort"})
        end = rpc.wait_for(
            lambda o: o.get("type") == "tool_execution_end" and o.get("toolName") == "mcp__small__hang", 30
        )
        assert end["isError"] is True
        assert "aborted" in json.dumps(end["result"])
        assert rpc.close() == 0
    finally:
        rpc.kill()


async def test_acp_mode(setup: Setup) -> None:
    settings(setup.home)
    setup.llm.push(fl.tool_call("mcp__small__add", {"a": 1, "b": 2}), fl.text("three"))
    async with open_agent(setup.home, setup.project, setup.llm) as agent:
        await agent.initialize()
        session = await agent.conn.new_session(cwd=str(setup.project))
        for _ in range(600):  # /mcp runs no model request: poll until the server is connected
            agent.client.clear()
            await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("/mcp")])
            if "small — connected" in agent.client.message_text():
                break
            await asyncio.sleep(0.1)
        await agent.conn.prompt(session_id=session.session_id, prompt=[text_block("add 1 and 2")])
        assert [text for _id, text in setup.llm.llm_requests[1].tool_results] == ["3"]
        assert "three" in agent.client.message_text()
