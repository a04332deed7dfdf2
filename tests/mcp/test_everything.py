"""Against the reference server nobody here wrote: ``@modelcontextprotocol/server-everything`` from npm,
over stdio and over streamable HTTP — its echo, sum, image, resource, prompt, elicitation, sampling and
long-running-operation tools. Skips locally when it is not installed; fails under CI=1 (.ci/run installs it
into ~/.cache/caddie/mcp-everything)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from caddie.agent.events import ToolExecutionUpdateEvent
from caddie.ai.messages import ImageContent, TextContent, ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.bundled.mcp.runtime import pool
from tests.mcp.helpers import McpRun, everything, free_port, mcp_session, until
from tests.runtime.harness import RecordingUI


class FormFiller(RecordingUI):
    """Answers server-everything's form: a name and an email typed, the first choice, defaults otherwise."""

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        self.asked.append(("input", title))
        field = title.splitlines()[1]
        if field.startswith("String with email format"):
            return "ann@example.com"
        if field.startswith("String —"):
            return "Ann Example"
        return ""

    async def select(
        self, title: str, options: Sequence[str], timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        self.asked.append(("select", title))
        return options[0]

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: Any = None
    ) -> bool:
        self.asked.append(("confirm", title))
        return True


def result_text(result: ToolResultMessage) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def call(run: McpRun, tool: str, args: dict[str, object] | None = None) -> ToolResultMessage:
    run.faux.append_responses([faux_message([faux_tool_call(tool, args or {})]), faux_message("ok")])
    await run.session.prompt(f"call {tool}")
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)][-1]


async def exercise(run: McpRun, server: str) -> None:
    tool = f"mcp__{server}__"
    await until(
        lambda: f"{tool}trigger-sampling-request" in run.session.core.tools.active_names(),
        what="conditional tools",
    )
    assert result_text(await call(run, f"{tool}echo", {"message": "hi"})) == "Echo: hi"
    assert "The sum of 2 and 40 is 42." in result_text(await call(run, f"{tool}get-sum", {"a": 2, "b": 40}))
    image = await call(run, f"{tool}get-tiny-image")
    assert any(isinstance(b, ImageContent) and b.mime_type == "image/png" for b in image.content)

    # a prompt with arguments, as a command
    run.faux.append_responses([faux_message("sunny")])
    await run.session.prompt(f"/mcp__{server}__args-prompt city=Paris")
    await run.session.wait_for_idle()
    assert "What's weather in Paris?" in run.request_texts()[-1]

    # a resource attached with @server:uri
    run.faux.append_responses([faux_message("read it")])
    await run.session.prompt(f"summarise @{server}:demo://resource/static/document/architecture.md please")
    sent = run.request_texts()[-1]
    assert f'<resource server="{server}" uri="demo://resource/static/document/architecture.md">' in sent
    assert "# Everything Server" in sent


async def test_server_everything_over_stdio(tmp_path: Path) -> None:
    node, index = everything()
    run = await mcp_session(tmp_path, {"everything": {"command": node, "args": [index, "stdio"]}})
    run.ui.__class__ = FormFiller
    try:
        await exercise(run, "everything")

        # long-running operation: progress arrives while it runs
        updates: list[str] = []
        run.session.subscribe(
            lambda e: (
                updates.append(str(e.partial_result.content[0]))
                if isinstance(e, ToolExecutionUpdateEvent)
                else None
            )
        )
        done = await call(run, "mcp__everything__trigger-long-running-operation", {"duration": 1, "steps": 2})
        assert "Long running operation completed. Duration: 1 seconds, Steps: 2." in result_text(done)
        assert any("progress 2/2" in u for u in updates)

        # elicitation: the form's fields, one dialog each
        form = result_text(await call(run, "mcp__everything__trigger-elicitation-request"))
        assert "✅ User provided the requested information!" in form
        assert "- Name: Ann Example" in form and "- Email: ann@example.com" in form
        assert "- Favorite Integer: 42" in form  # the default, kept by an empty answer
        assert '"untitledSingleSelectEnum": "Monica"' in form

        # sampling: approved, answered by the session's model
        run.faux.append_responses(
            [
                faux_message(
                    [faux_tool_call("mcp__everything__trigger-sampling-request", {"prompt": "haiku?"})]
                )
            ]
        )
        run.faux.append_responses([faux_message("an old pond"), faux_message("ok")])
        await run.session.prompt("sample")
        sampled = [m for m in run.session.messages if isinstance(m, ToolResultMessage)][-1]
        assert '"text": "an old pond"' in result_text(sampled)

        # roots: the workspace
        roots = result_text(await call(run, "mcp__everything__get-roots-list"))
        assert tmp_path.resolve().as_uri() in roots
    finally:
        await run.session.shutdown("quit")


@pytest.fixture
def everything_http() -> Iterator[str]:
    with serving("streamableHttp", "listening on port") as base:
        yield f"{base}/mcp"


@contextlib.contextmanager
def serving(transport: str, ready: str) -> Iterator[str]:
    node, index = everything()
    port = free_port()
    proc = subprocess.Popen(
        [node, index, transport],
        env={"PORT": str(port), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for _ in range(200):
            line = proc.stderr.readline()
            if ready in line or not line:
                break
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_server_everything_over_streamable_http(tmp_path: Path, everything_http: str) -> None:
    run = await mcp_session(tmp_path, {"web": {"type": "http", "url": everything_http}})
    try:
        assert pool()["web"].state == "ready", pool()["web"].error
        await exercise(run, "web")
        await asyncio.sleep(0)
    finally:
        await run.session.shutdown("quit")


async def test_server_everything_over_sse(tmp_path: Path) -> None:
    with serving("sse", "Server is running on port") as base:
        run = await mcp_session(tmp_path, {"old": {"type": "sse", "url": f"{base}/sse"}})
        try:
            assert pool()["old"].state == "ready", pool()["old"].error
            assert result_text(await call(run, "mcp__old__echo", {"message": "over sse"})) == "Echo: over sse"
        finally:
            await run.session.shutdown("quit")
