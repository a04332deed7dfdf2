"""Plain HTTP for the wire APIs caddie speaks without a vendor SDK: one POST, a server-sent-event stream back.

Gemini (generative language and Vertex), ChatGPT's Codex responses, Mistral's chat completions and the
``pi-messages`` gateway protocol are documented HTTP APIs whose bodies caddie builds itself; the vendor
SDKs either have no public way to send bytes caddie serialised (``google-genai`` re-validates the whole
conversation through pydantic on every request: 65 ms at 200 messages, 0.6 s at 2,000) or do not exist.
They are sent here with ``httpx2`` — the HTTP client the ``openai``, ``anthropic`` and ``google-genai`` SDKs
are built on — on a client kept per configuration (``transport.ClientCache``) that refuses cross-origin
redirects, and the reply is read as SSE.

A reply that is not 2xx raises ``HttpStatusError`` (``status_code``, ``body``, ``response``: the shape
``failures.describe_failure`` reads for every SDK's errors), after its body has been read.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any

from caddie.ai.providers.transport import redirect_hooks
from caddie.errors import ProviderError

__all__ = ["HttpStatusError", "SseEvent", "SseStream", "make_http_client", "post_sse"]


class HttpStatusError(ProviderError):
    """A reply with an error status (or an error object inside a 200 stream): ``status_code``, the decoded
    ``body`` (JSON when it is JSON, else its text) and the ``response`` (its ``headers``)."""

    def __init__(self, status_code: int, body: Any, response: Any) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code
        self.body = body
        self.response = response


def decode_body(raw: bytes) -> Any:
    """An error body as JSON when it is JSON, else as text."""
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


class SseEvent:
    """One server-sent event: its ``event`` name (``""`` when the server named none) and its ``data``."""

    __slots__ = ("data", "event")

    def __init__(self, event: str, data: str) -> None:
        self.event = event
        self.data = data


class SseStream:
    """The events of one streamed reply; ``response`` is the ``httpx2`` response (status, headers).
    ``__anext__`` returns each event; ``close()`` ends the body (reading it to its end first is what lets
    the connection go back to the pool)."""

    def __init__(self, response: Any) -> None:
        self.response = response
        self._events = _events(response.aiter_lines())

    def __aiter__(self) -> SseStream:
        return self

    async def __anext__(self) -> SseEvent:
        return await self._events.__anext__()

    async def close(self) -> None:
        await self._events.aclose()
        await self.response.aclose()


async def _events(lines: AsyncIterator[str]) -> AsyncGenerator[SseEvent, None]:
    """The SSE framing (the WHATWG rules caddie needs): ``event:`` names the next event, ``data:`` lines
    join with newlines, a blank line dispatches, ``:`` lines are comments."""
    event = ""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield SseEvent(event, "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield SseEvent(event, "\n".join(data))


def make_http_client(idle_timeout_s: float) -> Any:
    """An ``httpx2.AsyncClient`` for one configuration: the idle timeout, no cross-origin redirects."""
    import httpx2

    timeout = httpx2.Timeout(idle_timeout_s if idle_timeout_s > 0 else None)
    return httpx2.AsyncClient(timeout=timeout, event_hooks=redirect_hooks(), follow_redirects=True)


async def post_sse(client: Any, url: str, headers: Mapping[str, str], body: bytes) -> SseStream:
    """POST ``body`` to ``url`` and return the reply's events; ``HttpStatusError`` for a non-2xx reply."""
    request = client.build_request("POST", url, headers=dict(headers), content=body)
    response = await client.send(request, stream=True)
    if response.status_code >= 300:
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        raise HttpStatusError(response.status_code, decode_body(raw), response)
    return SseStream(response)
