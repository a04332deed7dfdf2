"""Loaded into every task's ``caddie`` process by ``caddie batch`` (``-e``): the batch's gate.

The batch hands the goal process one end of a socket pair (its descriptor number in
``CADDIE_BATCH_GATE_FD``). After every reply the extension sends that reply's input + output tokens and
waits for the batch's answer before anything else happens: ``go``, or ``stop`` when the batch's spend cap is
reached or it is being stopped (Ctrl+C). On ``stop`` — or when nobody answers — the run ends after the
current turn, at the same point where a goal's own budget check stops it: the reply's tool calls still run
and no further model request is made. The goal stays active in the session, so the next ``caddie batch``
run continues it. Because every reply is charged before the next request is made, however fast the replies
come, spend passes the cap by at most one reply per running task.
"""

from __future__ import annotations

import asyncio
import os
import socket

from caddie.extensions.api import AssistantMessage, ExtensionAPI, ExtensionContext, MessageEndEvent

GATE_FD_ENV = "CADDIE_BATCH_GATE_FD"
ANSWER_TIMEOUT_S = 120.0
"""How long a reply waits for the batch's answer (a Ray control actor on a busy cluster) before stopping."""


def register(api: ExtensionAPI) -> None:
    fd = os.environ.get(GATE_FD_ENV)
    if not fd or not fd.isdigit():
        return
    gate = socket.socket(fileno=int(fd))
    gate.setblocking(False)
    lock = asyncio.Lock()

    async def ask(tokens: int) -> bool:
        """Charge ``tokens``; True when the batch says go on."""
        loop = asyncio.get_running_loop()
        async with lock:
            try:
                await loop.sock_sendall(gate, f"{tokens}\n".encode())
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = await asyncio.wait_for(loop.sock_recv(gate, 64), ANSWER_TIMEOUT_S)
                    if not chunk:
                        return False  # the batch is gone
                    answer += chunk
            except (OSError, TimeoutError):
                return False
        return answer.strip() == b"go"

    async def on_message_end(event: MessageEndEvent, ctx: ExtensionContext) -> None:
        if not isinstance(event.message, AssistantMessage):
            return
        usage = event.message.usage
        if not await ask(usage.input + usage.output):
            ctx.stop_after_turn()

    api.on("message_end", on_message_end)
