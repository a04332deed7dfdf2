"""The ACP agent: the SDK's ``Agent`` interface, implemented by opening caddie sessions.

Methods: ``initialize``, ``session/new``, ``session/load`` (replays the file as updates, then continues
it), ``session/list``, ``session/prompt``, ``session/cancel``, ``session/set_mode``,
``session/set_config_option`` (mode, model, thinking level). Anything else is JSON-RPC "Method not found"
from the SDK's router.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)

from acp import PROTOCOL_VERSION, RequestError
from caddie import __version__
from caddie.modes.acp.convert import PromptBlock, bad_params
from caddie.modes.acp.live import AcpOptions, AcpSession
from caddie.session.store import list_sessions


def pi_sessions_dir(cwd: str) -> Path:
    from caddie.session.store import encode_cwd

    root = os.environ.get("PI_CODING_AGENT_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".pi" / "agent"
    return base / "sessions" / encode_cwd(cwd)


def find_session_file(cwd: str, session_id: str, session_dir: str | None) -> Path | None:
    """A session by id: caddie's sessions of ``cwd``, then Pi's; an absolute path to a file works too."""
    if session_id.endswith(".jsonl") and os.path.isabs(session_id) and os.path.isfile(session_id):
        return Path(session_id)
    for directory in (session_dir, str(pi_sessions_dir(cwd))):  # session_dir None: caddie's default
        for summary in list_sessions(cwd, directory):
            if summary.id == session_id:
                return summary.path
    return None


class CaddieAgent:
    def __init__(self, options: AcpOptions) -> None:
        self.options = options
        self.conn: Any = None
        self.client = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}
        self._starting: dict[str, asyncio.Task[None]] = {}
        self._retiring: set[asyncio.Task[None]] = set()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.client = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[],
            agent_info=Implementation(name="caddie", title="caddie", version=__version__),
        )

    # -- sessions ------------------------------------------------------------------------------------
    def _cwd(self, cwd: str) -> str:
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise bad_params(f"cwd must be an existing absolute directory, not {cwd!r}")
        return cwd

    def _begin(self, live: AcpSession, reason: str) -> None:
        """Start the session once the response naming it is on its way (so the editor knows the id its
        first updates carry); a prompt that arrives meanwhile waits for this."""

        async def start() -> None:
            await asyncio.sleep(0)
            await live.start(reason)
            live.announce()

        async def retire() -> None:
            """An extension's ``ctx.shutdown()``: once the prompt in progress has been answered, that session
            ends (``session_shutdown``, its file complete) and is forgotten; the agent keeps serving the
            editor's other sessions."""
            if self.sessions.get(live.id) is live:
                del self.sessions[live.id]
            await live.close()

        watch = live.on_shutdown_request(retire)
        self._retiring.add(watch)
        watch.add_done_callback(self._retiring.discard)
        self._starting[live.id] = asyncio.ensure_future(start())

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        live = AcpSession(self.conn, self.client, self.options)
        await live.open(self._cwd(cwd), "new")
        try:
            live.session.store.save_now()  # loadable by id (session/load, another process) before a prompt
        except OSError as e:
            await live.close()
            raise RequestError(-32603, f"cannot save the new session: {e.strerror or e}") from None
        self.sessions[live.id] = live
        self._begin(live, "startup")
        return NewSessionResponse(
            session_id=live.id, modes=live.modes(), config_options=live.config_options()
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        path = find_session_file(self._cwd(cwd), session_id, self.options.session_dir)
        if path is None:
            raise bad_params(f"No session {session_id} for {cwd}. session/list shows the sessions there.")
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await old.close()
        live = AcpSession(self.conn, self.client, self.options)
        await live.open(cwd, "file", str(path))
        live.id = session_id  # updates carry the id the editor asked for
        self.sessions[session_id] = live
        live.replay()
        await live.flush()
        self._begin(live, "resume")
        return LoadSessionResponse(modes=live.modes(), config_options=live.config_options())

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        where = cwd or os.getcwd()
        found = list_sessions(where, self.options.session_dir)
        ids = {s.id for s in found}
        found += [s for s in list_sessions(where, str(pi_sessions_dir(where))) if s.id not in ids]  # Pi's
        found.sort(key=lambda s: s.modified, reverse=True)
        infos = [
            SessionInfo(
                session_id=s.id,
                cwd=s.cwd,
                title=s.name or s.first_message[:80],
                updated_at=datetime.fromtimestamp(s.modified, UTC).isoformat().replace("+00:00", "Z"),
            )
            for s in found
        ]
        return ListSessionsResponse(sessions=infos)

    async def _live(self, session_id: str) -> AcpSession:
        live = self.sessions.get(session_id)
        if live is None:
            raise bad_params(f"Unknown session {session_id}: open it with session/new or session/load first.")
        starting = self._starting.get(session_id)
        if starting is not None:
            # a start that failed answered its own request with the error
            with contextlib.suppress(Exception):
                await asyncio.shield(starting)
        return live

    async def prompt(self, session_id: str, prompt: list[PromptBlock], **kwargs: Any) -> PromptResponse:
        live = await self._live(session_id)
        return await live.prompt(prompt)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self.sessions.get(session_id)
        if live is not None:
            live.cancel()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        live = await self._live(session_id)
        live.set_mode(mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        live = await self._live(session_id)
        await live.set_config(config_id, value)
        return SetSessionConfigOptionResponse(config_options=live.config_options())

    async def cancel_all(self) -> None:
        """The editor is gone (stdin ended): stop every turn, so their prompts can be answered and end."""
        await asyncio.gather(*self._starting.values(), return_exceptions=True)
        for live in self.sessions.values():
            live.cancel()

    async def shutdown(self) -> None:
        for task in self._starting.values():
            task.cancel()
        await asyncio.gather(*(live.close() for live in self.sessions.values()), return_exceptions=True)
