"""The ``openai-codex-responses`` API: ChatGPT Plus/Pro (OpenAI Codex) through ChatGPT's Codex backend.

The body is the Responses request (``openai_responses`` converts the conversation) in Codex's shape, as Pi
0.84.4 sends it: the system prompt as ``instructions``, ``store: false``, ``text.verbosity`` ``low``, the
encrypted reasoning included, ``tool_choice`` ``auto`` with parallel calls, ``prompt_cache_key`` the
session id. Auth is the login's access token plus the ChatGPT account id from its JWT
(``chatgpt-account-id``), ``originator: pi``.

Two transports, chosen by ``StreamOptions.transport`` (settings ``transport``; Pi's default ``auto``):

- ``websocket`` / ``auto``: ``wss://…/codex/responses`` with ``OpenAI-Beta: responses_websockets=…``; the
  request is one ``response.create`` message and the events come back as messages. A session keeps its
  connection (five minutes idle at most, 55 minutes in all) and, in ``auto``, sends only the new input
  items with ``previous_response_id`` when the rest of the request is unchanged. If the WebSocket fails
  before the first event, ``auto`` falls back to SSE for the rest of the session.
- ``sse``: ``POST …/codex/responses`` (``accept: text/event-stream``), as plain HTTP (``http_stream``).

Unlike Pi, the SSE body is not zstd-compressed (Python 3.11 has no zstd without another dependency); the
server accepts either.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import grammar_input_properties
from caddie.ai.messages import AssistantMessage
from caddie.ai.model import Context, Model, ModelCompat, StreamOptions
from caddie.ai.oauth.openai_codex import account_id
from caddie.ai.providers.http_stream import HttpStatusError, SseStream, make_http_client, post_sse
from caddie.ai.providers.openai_responses import (
    PROMPT_CACHE_KEY_MAX,
    TOOL_CALL_PROVIDERS,
    ResponsesAssembler,
    convert_messages,
    convert_tools,
)
from caddie.ai.providers.request import encode_body
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_thinking_level
from caddie.ai.providers.transport import ClientCache
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.errors import ProviderError

API = "openai-codex-responses"
DEFAULT_BASE_URL = "https://chatgpt.com/backend-api"
WEBSOCKET_BETA = "responses_websockets=2026-02-06"
WEBSOCKET_CONNECT_TIMEOUT_S = 15.0
WEBSOCKET_IDLE_S = 5 * 60
WEBSOCKET_MAX_AGE_S = 55 * 60
DEFAULT_INSTRUCTIONS = "You are a helpful assistant."
_TERMINAL = ("response.completed", "response.done", "response.incomplete")


class CodexError(ProviderError):
    """An error the Codex backend reported in the stream (an ``error`` or ``response.failed`` event)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.body = {"error": {"message": message, "code": code}}


def codex_url(base_url: str) -> str:
    """``…/codex/responses`` under the model's base URL (Pi's rules)."""
    url = (base_url.strip() or DEFAULT_BASE_URL).rstrip("/")
    if url.endswith("/codex/responses"):
        return url
    if url.endswith("/codex"):
        return f"{url}/responses"
    return f"{url}/codex/responses"


def websocket_url(base_url: str) -> str:
    parts = urlsplit(codex_url(base_url))
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, *parts[1:]))


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The Codex request body (Pi's field order)."""
    compat = (model.compat or ModelCompat()).merged(None)
    strict_supported = compat.supports_strict_mode is not False
    history = Context(None, context.messages, context.tools, context.conversion_cache)
    body: dict[str, Any] = {
        "model": model.id,
        "store": False,
        "stream": True,
        "instructions": context.system_prompt or DEFAULT_INSTRUCTIONS,
        "input": convert_messages(model, history, None, TOOL_CALL_PROVIDERS),
        "text": {"verbosity": "low"},
        "include": ["reasoning.encrypted_content"],
    }
    session = cache_session(options)
    if session is not None:
        body["prompt_cache_key"] = session
    body["tool_choice"] = "auto"
    body["parallel_tool_calls"] = True
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.service_tier is not None:
        body["service_tier"] = options.service_tier
    if context.tools:
        tools_compat = msgspec.structs.replace(compat, supports_strict_mode=strict_supported)
        body["tools"] = convert_tools(context.tools, tools_compat, default_strict=None)
    level = clamp_thinking_level(model, options.reasoning) if options.reasoning else "off"
    if level != "off":
        mapped = (model.thinking_level_map or {}).get(level, level)
        if mapped is not None:
            body["reasoning"] = {"effort": mapped, "summary": "auto"}
    return body


def cache_session(options: StreamOptions) -> str | None:
    if options.cache_retention == "none" or not options.session_id:
        return None
    return options.session_id[:PROMPT_CACHE_KEY_MAX]


def base_headers(model: Model, options: StreamOptions, token: str, account: str) -> dict[str, str]:
    headers = {**(model.headers or {}), **(options.headers or {})}
    headers.update({"Authorization": f"Bearer {token}", "chatgpt-account-id": account, "originator": "pi"})
    headers.setdefault("User-Agent", "caddie")
    return headers


# --------------------------------------------------------------------------------------------------
# Events: both transports deliver Responses events; Codex's own terminal and error events are mapped


def codex_event(event: dict[str, Any]) -> dict[str, Any]:
    """One event as ``ResponsesAssembler`` reads it; Codex errors raise ``CodexError``."""
    kind = event.get("type")
    if kind == "error":
        raw = event.get("error")
        nested: dict[str, Any] = raw if isinstance(raw, dict) else {}
        code = event.get("code") or nested.get("code")
        message = event.get("message") or nested.get("message")
        raise CodexError(
            f"Codex error: {message or code or json.dumps(event)}", code if isinstance(code, str) else None
        )
    if kind == "response.failed":
        response = event.get("response") or {}
        error = response.get("error") or {}
        raise CodexError(error.get("message") or "Codex response failed", error.get("code"))
    if kind in _TERMINAL:
        response = dict(event.get("response") or {})
        status = response.get("status")
        if status not in ("completed", "incomplete", "failed", "cancelled", "queued", "in_progress"):
            response.pop("status", None)
        return {**event, "type": "response.completed", "response": response}
    return event


class _SseEvents:
    def __init__(self, events: SseStream) -> None:
        self._events = events
        self.response = events.response

    async def __anext__(self) -> dict[str, Any]:
        while True:
            event = await self._events.__anext__()
            if event.data.strip() in ("", "[DONE]"):
                continue
            return codex_event(json.loads(event.data))

    async def close(self) -> None:
        await self._events.close()


def usage_limit_text(status: int, body: Any) -> str | None:
    """Pi's friendly text for ChatGPT usage limits: ``You have hit your ChatGPT usage limit (plus plan).
    Try again in ~12 min.``"""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    code = str(error.get("code") or error.get("type") or "")
    if status != 429 and not any(
        k in code for k in ("usage_limit_reached", "usage_not_included", "rate_limit_exceeded")
    ):
        return None
    plan = f" ({str(error['plan_type']).lower()} plan)" if error.get("plan_type") else ""
    when = ""
    if isinstance(error.get("resets_at"), int | float):
        minutes = max(0, round((error["resets_at"] * 1000 - time.time() * 1000) / 60000))
        when = f" Try again in ~{minutes} min."
    return f"You have hit your ChatGPT usage limit{plan}.{when}".strip()


async def _post_sse(client: Any, url: str, headers: dict[str, str], body: dict[str, Any]) -> _SseEvents:
    try:
        return _SseEvents(await post_sse(client, url, headers, encode_body(body)))
    except HttpStatusError as exc:
        friendly = usage_limit_text(exc.status_code, exc.body)
        if friendly is None:
            raise
        raise HttpStatusError(exc.status_code, {"error": {"message": friendly}}, exc.response) from None


# --------------------------------------------------------------------------------------------------
# WebSocket transport


@dataclass
class _Connection:
    socket: Any
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    busy: bool = False
    last_body: dict[str, Any] | None = None
    last_response_id: str | None = None
    last_items: list[dict[str, Any]] = field(default_factory=list)


_connections: dict[tuple[int, str, str], _Connection] = {}
"""(event loop, session, account) → the session's WebSocket."""
_sse_sessions: set[str] = set()
"""Sessions whose WebSocket failed: they stay on SSE."""


def _without_input(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("input", "previous_response_id")}


def continuation(connection: _Connection, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as a continuation of the connection's last response (only the new input items, with
    ``previous_response_id``) when the rest is unchanged and the input extends what was already sent."""
    last = connection.last_body
    if last is None or connection.last_response_id is None or _without_input(body) != _without_input(last):
        connection.last_body = None
        return body
    baseline = [*last.get("input", []), *connection.last_items]
    current = body.get("input", [])
    if len(current) < len(baseline) or current[: len(baseline)] != baseline:
        connection.last_body = None
        return body
    return {**body, "previous_response_id": connection.last_response_id, "input": current[len(baseline) :]}


async def _connect(url: str, headers: dict[str, str]) -> Any:
    from websockets.asyncio.client import connect

    return await connect(
        url,
        additional_headers=headers,
        open_timeout=WEBSOCKET_CONNECT_TIMEOUT_S,
        max_size=None,
        compression=None,
        user_agent_header=None,
    )


def _usable(connection: _Connection) -> bool:
    from websockets.protocol import State

    now = time.monotonic()
    return (
        connection.socket.state is State.OPEN
        and now - connection.created < WEBSOCKET_MAX_AGE_S
        and now - connection.last_used < WEBSOCKET_IDLE_S
    )


class _WebSocketEvents:
    """The events of one ``response.create`` on a (kept) WebSocket; the first event was read already."""

    def __init__(
        self, connection: _Connection, key: tuple[int, str, str] | None, first: dict[str, Any]
    ) -> None:
        self.connection = connection
        self.key = key
        self._first: dict[str, Any] | None = first
        self._done = False
        self.response = None
        self.completed: dict[str, Any] | None = None

    async def __anext__(self) -> dict[str, Any]:
        if self._first is not None:
            event, self._first = self._first, None
        elif self._done:
            raise StopAsyncIteration
        else:
            event = await _receive(self.connection.socket)
        mapped = codex_event(event)
        if mapped.get("type") == "response.completed":
            # The reply is whole: the connection is free for the session's next request at once (the
            # stream may be closed later, when its consumer lets go of it).
            self._done = True
            self.completed = mapped
            self.connection.busy = False
            self.connection.last_used = time.monotonic()
        return mapped

    async def close(self) -> None:
        connection = self.connection
        connection.busy = False
        connection.last_used = time.monotonic()
        if not self._done:  # an abandoned or failed stream: the connection's state is unknown
            connection.last_body = None
            await _drop(connection, self.key)


async def _receive(socket: Any) -> dict[str, Any]:
    from websockets.exceptions import ConnectionClosed

    try:
        raw = await socket.recv()
    except ConnectionClosed as exc:
        raise ConnectionResetError(f"WebSocket closed {exc.rcvd.code if exc.rcvd else ''}".strip()) from None
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("a Codex WebSocket message that is not an object")
    return data


async def _drop(connection: _Connection, key: tuple[int, str, str] | None) -> None:
    if key is not None and _connections.get(key) is connection:
        del _connections[key]
    with contextlib.suppress(Exception):
        await connection.socket.close()


async def open_websocket(
    url: str, headers: dict[str, str], body: dict[str, Any], session: str | None, account: str, cached: bool
) -> _WebSocketEvents:
    """Send ``body`` as ``response.create`` on the session's connection (a new one when needed) and read
    the first event; any failure before that event is raised for the caller to fall back to SSE."""
    key = (id(asyncio.get_running_loop()), session, account) if session else None
    connection = _connections.get(key) if key is not None else None
    if connection is not None and (connection.busy or not _usable(connection)):
        if not connection.busy:
            await _drop(connection, key)
        connection = None
    if connection is None:
        request_id = session or str(uuid.uuid4())
        ws_headers = {
            k: v for k, v in headers.items() if k.lower() not in ("accept", "content-type", "openai-beta")
        }
        ws_headers.update(
            {"OpenAI-Beta": WEBSOCKET_BETA, "x-client-request-id": request_id, "session-id": request_id}
        )
        connection = _Connection(await _connect(url, ws_headers))
        if key is not None and key not in _connections:
            _connections[key] = connection
        elif key is not None:
            key = None  # another request of this session holds the kept one: this one is private
    connection.busy = True
    request = continuation(connection, body) if cached else body
    try:
        await connection.socket.send(json.dumps({"type": "response.create", **request}))
        first = await _receive(connection.socket)
    except BaseException:
        connection.busy = False
        await _drop(connection, key)
        raise
    return _WebSocketEvents(connection, key, first)


# --------------------------------------------------------------------------------------------------
# The provider


class OpenAICodexResponsesProvider:
    """Streams one assistant message from ChatGPT's Codex backend (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        token = options.api_key or ""
        account = account_id(token) if token else None
        headers = base_headers(model, options, token, account or "")
        sse_headers = {**headers, "OpenAI-Beta": "responses=experimental", "accept": "text/event-stream"}
        sse_headers["content-type"] = "application/json"
        session = cache_session(options)
        if session is not None:
            sse_headers["session-id"] = session
            sse_headers["x-client-request-id"] = session
        transport = options.transport or "auto"
        grammar_tools = (model.compat or ModelCompat()).supports_open_ai_grammar_tools is True

        def assembler() -> ResponsesAssembler:  # built inside stream_via_sdk: a bad grammar is an error event
            return ResponsesAssembler(
                output, model, options.service_tier, grammar_input_properties(context.tools, grammar_tools)
            )

        async def create(client: Any, body: dict[str, Any]) -> Any:
            if account is None:
                raise HttpStatusError(401, {"error": {"message": _NO_ACCOUNT}}, _NoResponse())
            if transport != "sse" and (session is None or session not in _sse_sessions):
                try:
                    events = await open_websocket(
                        websocket_url(model.base_url),
                        headers,
                        body,
                        session,
                        account,
                        transport != "websocket",
                    )
                except (CodexError, asyncio.CancelledError):
                    raise
                except Exception:
                    if transport == "websocket":
                        raise
                    if session is not None:
                        _sse_sessions.add(session)
                else:
                    return _Remembering(events, model, body, output)
            return await _post_sse(client, codex_url(model.base_url), sse_headers, body)

        events = stream_via_sdk(
            model,
            options,
            output,
            assembler,
            headers={},
            api_key=options.api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_body(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_http_client(idle),
            create=create,
        )
        async for event in events:
            yield event


_NO_ACCOUNT = "The OpenAI Codex token names no ChatGPT account; run /login openai-codex again."


class _NoResponse:
    headers: dict[str, str] = {}  # noqa: RUF012


class _Remembering:
    """A WebSocket reply that, once complete, leaves what the next continuation needs on its connection."""

    def __init__(
        self, events: _WebSocketEvents, model: Model, body: dict[str, Any], output: AssistantMessage
    ) -> None:
        self.events = events
        self.model = model
        self.body = body
        self.output = output
        self.response = None

    async def __anext__(self) -> dict[str, Any]:
        event = await self.events.__anext__()
        if self.events.completed is event:
            response_id = (event.get("response") or {}).get("id") or self.output.response_id
            connection = self.events.connection
            if isinstance(response_id, str) and response_id:
                connection.last_body = self.body
                connection.last_response_id = response_id
                connection.last_items = _response_items(self.model, self.output)
        return event

    async def close(self) -> None:
        await self.events.close()


def _response_items(model: Model, output: AssistantMessage) -> list[dict[str, Any]]:
    """The input items the model's reply becomes in the next request (as ``convert_messages`` writes
    them), so a continuation can check the new request extends it."""
    items = convert_messages(model, Context(None, [output]), None, TOOL_CALL_PROVIDERS)
    return [i for i in items if i.get("type") not in ("function_call_output", "custom_tool_call_output")]


_CLIENTS = ClientCache()
PROVIDER = OpenAICodexResponsesProvider()
