"""Driving ``caddie acp`` in a subprocess with the SDK's own client side, against the fake model server.

``EditorClient`` plays the editor: it records every ``session/update``, answers permission requests from
a script, keeps "buffers" (unsaved text that differs from the file on disk) for ``fs/*``, and runs
terminals as real processes. ``open_agent`` spawns the agent and yields the SDK's ``ClientSideConnection``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from acp import PROTOCOL_VERSION, spawn_agent_process
from tests.support import fake_llm as fl

MODEL = "fake/fake-model"


@dataclass
class Terminal:
    process: asyncio.subprocess.Process
    output: bytearray = field(default_factory=bytearray)
    reader: asyncio.Task[None] | None = None
    command: list[str] = field(default_factory=list)


class EditorClient:
    """The editor side of ACP, recording what it is sent."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permission_requests: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answers: list[str | None] = []
        """Option ids to pick, in order (None: answer "cancelled"); empty: pick "allow"."""
        self.hold_permission: asyncio.Event | None = None
        """When set, permission requests wait for this event before answering."""
        self.buffers: dict[str, str] = {}
        self.fs_reads: list[str] = []
        self.fs_writes: dict[str, str] = {}
        self.terminals: dict[str, Terminal] = {}
        self.update_event = asyncio.Event()

    # -- recording ------------------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.update_event.set()

    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def message_text(self) -> str:
        return "".join(u.content.text for u in self.of("agent_message_chunk") if u.content.type == "text")

    def tool_updates(self, call_id: str) -> list[Any]:
        return [
            u
            for _, u in self.updates
            if u.session_update in ("tool_call", "tool_call_update") and u.tool_call_id == call_id
        ]

    def clear(self) -> None:
        self.updates.clear()
        self.permission_requests.clear()

    async def wait_for(self, predicate: Any, timeout: float = 10.0) -> None:
        async def loop() -> None:
            while not predicate():
                self.update_event.clear()
                await self.update_event.wait()

        await asyncio.wait_for(loop(), timeout)

    # -- permissions ------------------------------------------------------------------------------------
    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.permission_requests.append((tool_call, options))
        self.update_event.set()
        if self.hold_permission is not None:
            await self.hold_permission.wait()
        answer = self.answers.pop(0) if self.answers else "allow"
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    # -- editor buffers --------------------------------------------------------------------------------
    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        self.fs_reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.fs_writes[path] = content
        self.buffers[path] = content
        Path(path).write_text(content)  # the editor saves
        return WriteTextFileResponse()

    # -- terminals --------------------------------------------------------------------------------------
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        environment = dict(os.environ)
        environment.update({v.name: v.value for v in env or []})
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal = Terminal(process, command=[command, *(args or [])])

        async def pump() -> None:
            assert process.stdout is not None
            while chunk := await process.stdout.read(4096):
                terminal.output.extend(chunk)

        terminal.reader = asyncio.ensure_future(pump())
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        t = self.terminals[terminal_id]
        status = None
        if t.process.returncode is not None:
            if t.reader is not None:
                await t.reader
            status = TerminalExitStatus(
                exit_code=max(t.process.returncode, 0) if t.process.returncode >= 0 else None
            )
        return TerminalOutputResponse(
            output=t.output.decode("utf-8", "replace"), truncated=False, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        t = self.terminals[terminal_id]
        code = await t.process.wait()
        if t.reader is not None:
            await t.reader
        if code < 0:
            return WaitForTerminalExitResponse(exit_code=None, signal=f"signal {-code}")
        return WaitForTerminalExitResponse(exit_code=code)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        t = self.terminals[terminal_id]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(t.process.pid, 9)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        return ReleaseTerminalResponse()

    # -- elicitation (caddie never asks; an editor that is asked declines) ------------------------------
    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> DeclineElicitationResponse:
        return DeclineElicitationResponse(action="decline")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        pass


def capabilities(*, fs: bool = False, terminal: bool = False) -> ClientCapabilities:
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs),
        terminal=terminal,
    )


@dataclass
class Agent:
    conn: ClientSideConnection
    process: asyncio.subprocess.Process
    client: EditorClient
    home: Path
    project: Path
    llm: fl.FakeLLM

    async def initialize(self, *, fs: bool = False, terminal: bool = False) -> Any:
        return await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs=fs, terminal=terminal)
        )

    def session_files(self) -> list[Path]:
        return sorted((self.home / "agent" / "sessions").rglob("*.jsonl"))

    async def raw(self, line: bytes) -> None:
        """Write raw bytes to the agent's stdin (for malformed-input tests)."""
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        await self.process.stdin.drain()


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CADDIE_DIR=str(home), NO_COLOR="1", CADDIE_OLLAMA_URL="http://127.0.0.1:9", **extra)
    return env


@contextlib.asynccontextmanager
async def open_agent(
    home: Path, project: Path, llm: fl.FakeLLM, *args: str, client: EditorClient | None = None
) -> AsyncIterator[Agent]:
    editor = client or EditorClient()
    home.mkdir(parents=True, exist_ok=True)
    with (home / "acp-stderr.log").open("ab") as stderr, contextlib.ExitStack():
        async with _spawn(editor, home, project, llm, stderr, args) as agent:
            yield agent


@contextlib.asynccontextmanager
async def _spawn(
    editor: EditorClient, home: Path, project: Path, llm: fl.FakeLLM, stderr: Any, args: tuple[str, ...]
) -> AsyncIterator[Agent]:
    async with spawn_agent_process(
        editor,
        sys.executable,
        "-m",
        "caddie",
        "acp",
        "--model",
        MODEL,
        *args,
        env=agent_env(home),
        cwd=str(project),
        transport_kwargs={"stderr": stderr.fileno()},
    ) as (conn, process):
        yield Agent(conn, process, editor, home, project, llm)
