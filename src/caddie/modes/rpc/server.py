"""RPC mode's server state: the session, the client's writer, the prompts in flight, and the replies
(``commands.handle`` dispatches each command to its handler); every session event goes to the client."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from caddie.ai.model import Model
from caddie.modes.rpc.ui import RpcUI, Write
from caddie.modes.rpc.wire import rpc_event
from caddie.runtime.session_api import Session

NO_DATA = object()


class RpcServer:
    def __init__(
        self,
        session: Session,
        ui: RpcUI,
        write: Write,
        find_model: Callable[[str, str], Model | None],
        has_auth: Callable[[Model], bool] = lambda _m: True,
    ) -> None:
        self.session = session
        self.ui = ui
        self.write = write
        self.find_model = find_model
        self.has_auth = has_auth
        self.tasks: set[asyncio.Task[Any]] = set()
        self.eof = False
        self.prompting = 0
        """Prompts between arrival and acceptance (a second one without streamingBehavior is refused)."""
        session.subscribe(self._on_event)

    def _on_event(self, event: Any) -> None:
        self.write(rpc_event(event))

    def respond(self, request: dict[str, Any], data: Any = NO_DATA, error: str | None = None) -> None:
        out: dict[str, Any] = {"type": "response", "command": request.get("type"), "success": error is None}
        if "id" in request and request["id"] is not None:
            out = {"id": request["id"], **out}
        if error is not None:
            out["error"] = error
        elif data is not NO_DATA:
            out["data"] = data
        self.write(out)

    async def reply(self, request: dict[str, Any], data: Any = NO_DATA, error: str | None = None) -> None:
        """The response, after every event the command caused (Pi emits those synchronously before it)."""
        await self.session.flush_events()
        self.respond(request, data, error)

    def spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            self.tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                self.write({"type": "error", "error": f"{type(t.exception()).__name__}: {t.exception()}"})

        task.add_done_callback(done)

    def is_command(self, message: str) -> bool:
        """An extension command: it runs at once, even while the agent works."""
        name = message[1:].partition(" ")[0] if message.startswith("/") else ""
        return bool(name) and any(c.name == name for c in self.session.commands() if c.kind == "extension")
