"""The mcp extension against a real server process built with the SDK's own server API
(``small_server.py``): tools, results, progress, list changes, prompts, resources, roots, and the ways a
server fails (crash, hang, slow start, a broken schema, a huge result)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from caddie.agent.events import ToolExecutionUpdateEvent
from caddie.ai.messages import ImageContent, TextContent, ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.bundled.mcp.runtime import pool
from tests.mcp.helpers import McpRun, mcp_session, small, until


def results(run: McpRun) -> list[ToolResultMessage]:
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)]


def text_blocks(content: Sequence[object]) -> str:
    return "\n".join(b.text for b in content if isinstance(b, TextContent))


def text(result: ToolResultMessage) -> str:
    return text_blocks(result.content)


async def call(run: McpRun, tool: str, args: dict[str, object] | None = None) -> ToolResultMessage:
    run.faux.set_responses([faux_message([faux_tool_call(tool, args or {})]), faux_message("ok")])
    await run.session.prompt(f"call {tool}")
    return results(run)[-1]


async def test_tools_results_progress_prompts_and_resources(tmp_path: Path) -> None:
    os.environ["CADDIE_TEST_SECRET_NAME"] = "from-the-environment"
    run = await mcp_session(
        tmp_path, {"small": small("--bad-schema", env={"GREETING": "${CADDIE_TEST_SECRET_NAME}"})}
    )
    try:
        names = set(run.session.core.tools.active_names())
        assert {"mcp__small__add", "mcp__small__shout", "mcp__small__broken"} <= names
        # the broken schema became an open object, with one line saying so
        broken = next(t for t in run.session.core.tools.all() if t.name == "mcp__small__broken")
        assert broken.json_schema()["additionalProperties"] is True
        assert run.notices().count("tool broken: its input schema is invalid") == 1

        # the model sees the server's schema and gets the server's answer
        tool = next(t for t in run.session.core.tools.all() if t.name == "mcp__small__add")
        assert tool.json_schema()["required"] == ["a", "b"]
        result = await call(run, "mcp__small__add", {"a": 2, "b": 40})
        assert text(result) == "42" and not result.is_error
        assert run.faux.requests[0].tools and "mcp__small__add" in [
            t.name for t in run.faux.requests[0].tools
        ]

        # progress notices arrive as partial results while the call runs
        updates: list[str] = []

        def on_event(event: object) -> None:
            if isinstance(event, ToolExecutionUpdateEvent):
                updates.append(text_blocks(event.partial_result.content))

        run.session.subscribe(on_event)
        result = await call(run, "mcp__small__shout", {"text": "hi"})
        assert text(result) == "HI"
        assert "progress 3/3: step 3" in updates
        assert any("shouting 2 characters" in line for line in pool()["small"].logs)

        # images stay images; the environment reaches the server (with ${VAR} expanded)
        result = await call(run, "mcp__small__picture")
        assert any(isinstance(b, ImageContent) and b.mime_type == "image/png" for b in result.content), (
            result.content
        )
        assert text(await call(run, "mcp__small__whoami", {"name": "GREETING"})) == "from-the-environment"
        # roots are the workspace
        assert text(await call(run, "mcp__small__roots")) == tmp_path.resolve().as_uri()

        # a huge result is cut as bash cuts it, the whole of it in a temp file
        result = await call(run, "mcp__small__huge", {"lines": 5000})
        assert "[Showing lines 3998-5000 of 5000 (50.0KB limit). Full output: " in text(result)
        full = result.details["fullOutputPath"]
        assert Path(full).read_text().count("\n") == 4999

        # list_changed: the new tool joins the session
        await call(run, "mcp__small__grow")
        await until(
            lambda: "mcp__small__extra" in run.session.core.tools.active_names(), what="the extra tool"
        )
        assert text(await call(run, "mcp__small__extra")) == "extra ran"

        # a prompt is a command; its text becomes the user's turn
        run.faux.set_responses([faux_message("reviewed")])
        await run.session.prompt("/mcp__small__review src/app.py focus=security")
        await run.session.wait_for_idle()
        assert "Please review src/app.py looking for security." in run.request_texts()[-1]
        # a missing argument is one line, no turn
        before = len(run.faux.requests)
        await run.session.prompt("/mcp__small__review")
        assert len(run.faux.requests) == before
        assert "missing path (usage: <path> <focus>)" in run.notices()

        # @server:uri attaches the resource
        run.faux.set_responses([faux_message("noted")])
        await run.session.prompt("what is in @small:notes://today ?")
        sent = run.request_texts()[-1]
        assert '<resource server="small" uri="notes://today">\nbuy milk\n</resource>' in sent

        # the server's stderr went to its log, not the screen
        log = Path(pool()["small"].log_path)
        assert f"small server {text(await call(run, 'mcp__small__pid'))} starting" in log.read_text()

        # /mcp lists the server and its tools
        await run.session.prompt("/mcp")
        assert "small — connected · 14 tools, 1 prompts, 1 resources" in run.notices()
        assert run.notices().count("tool broken: its input schema is invalid") == 1  # once, not per change
        await run.session.prompt("/mcp tools small")
        assert "mcp__small__add — Add two integers." in run.notices()
    finally:
        await run.session.shutdown("quit")
    assert pool() == {}


async def test_crash_gives_one_line_and_the_tools_go_away(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()})
    try:
        result = await call(run, "mcp__small__crash")
        assert result.is_error
        assert "small" in text(result) and "crash" in text(result)
        await until(lambda: pool()["small"].state == "failed", what="the failed state")
        assert not any(n.startswith("mcp__small__") for n in run.session.core.tools.active_names())
        failures = [t for t, _ in run.ui.notices if t.startswith('MCP server "small" failed')]
        assert len(failures) == 1, run.ui.notices
        # the turn went on: the model got the error and answered
        assert run.session.messages[-1].role == "assistant"

        # /mcp reconnect starts it again and the tools come back
        await run.session.prompt("/mcp reconnect small")
        assert 'MCP server "small" connected: 12 tools.' in run.notices()
        assert "mcp__small__add" in run.session.core.tools.active_names()
    finally:
        await run.session.shutdown("quit")


async def test_a_hanging_call_is_cancelled_by_abort(tmp_path: Path) -> None:
    run = await mcp_session(tmp_path, {"small": small()})
    try:
        run.faux.set_responses([faux_message([faux_tool_call("mcp__small__hang", {})]), faux_message("ok")])
        started = asyncio.Event()
        run.session.subscribe(lambda e: started.set() if e.type == "tool_execution_start" else None)
        task = asyncio.ensure_future(run.session.prompt("hang"))
        await asyncio.wait_for(started.wait(), 30)
        await asyncio.sleep(0.2)
        run.session.abort()
        await asyncio.wait_for(task, 15)
        last = results(run)[-1]
        assert last.is_error and "aborted" in text(last)
        # the connection survived the cancellation
        assert pool()["small"].state == "ready"
        assert text(await call(run, "mcp__small__add", {"a": 1, "b": 1})) == "2"
    finally:
        await run.session.shutdown("quit")


async def test_slow_and_broken_servers_do_not_hold_up_the_first_request(tmp_path: Path) -> None:
    servers = {
        "slow": small("--slow-start", "30", startupTimeout=1500),
        "missing": {"command": str(tmp_path / "no-such-server")},
        "unset": {"command": "${CADDIE_TEST_NO_SUCH_VAR}"},
    }
    run = await mcp_session(tmp_path, servers, wait=())
    try:
        run.faux.set_responses([faux_message("hello")])
        await asyncio.wait_for(run.session.prompt("hi"), 5)  # answered while the servers start or fail
        assert pool()["slow"].state == "starting"
        await until(lambda: pool()["slow"].state == "failed", what="the startup timeout")
        await until(lambda: "missing" in pool() and pool()["missing"].state == "failed", what="missing")
        notices = run.notices()
        assert 'MCP server "slow" failed: did not answer within 1.5 s (startupTimeout)' in notices
        assert "cannot start" in notices and "no such program" in notices
        await run.session.prompt("/mcp")
        assert "unset — not started: environment variable CADDIE_TEST_NO_SUCH_VAR is not set" in run.notices()
    finally:
        await run.session.shutdown("quit")
