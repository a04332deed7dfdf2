"""A fake of ChatGPT's Codex WebSocket endpoint on 127.0.0.1: each ``response.create`` message is answered
with the Responses events of the next scripted reply (``fake_llm.responses_events``), as messages.

Records every handshake (``handshakes``: path and lower-case headers) and every request message
(``messages``: the decoded JSON). ``url`` is the ``http://`` base the agents are given; they turn it into
``ws://…/codex/responses`` themselves. ``response_ids`` numbers each reply's response id
(``resp_ws_1``, …) so continuations can be told apart.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from tests.support import fake_llm as fl


class FakeCodexWebSocket:
    def __init__(self) -> None:
        self.replies: list[fl.Reply] = []
        self.handshakes: list[tuple[str, dict[str, str]]] = []
        self.messages: list[dict[str, Any]] = []
        self.refuse = False
        """Answer the handshake with 403 (the agent should fall back to SSE)."""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Future[None] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self._count = 0

    def __enter__(self) -> FakeCodexWebSocket:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        def stop() -> None:
            if self._stop is not None and not self._stop.done():
                self._stop.set_result(None)

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/backend-api"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        from websockets.asyncio.server import serve
        from websockets.datastructures import Headers
        from websockets.http11 import Response

        def process_request(connection: Any, request: Any) -> Any:
            self.handshakes.append((request.path, {k.lower(): v for k, v in request.headers.raw_items()}))
            if self.refuse:
                return Response(403, "Forbidden", Headers(), b"no websockets here")
            return None

        self._stop = self._loop.create_future()
        async with serve(self._handle, "127.0.0.1", 0, process_request=process_request) as server:
            self.port = next(iter(server.sockets)).getsockname()[1]
            self._ready.set()
            await self._stop

    async def _handle(self, socket: Any) -> None:
        async for raw in socket:
            message = json.loads(raw)
            self.messages.append(message)
            reply = self.replies.pop(0) if self.replies else fl.text("ok")
            self._count += 1
            for chunk in fl.responses_events(reply, str(message.get("model"))):
                data = next(line[6:] for line in chunk.splitlines() if line.startswith("data: "))
                event = json.loads(data)
                if isinstance(event.get("response"), dict):
                    event["response"]["id"] = f"resp_ws_{self._count}"
                await socket.send(json.dumps(event))
