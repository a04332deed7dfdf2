"""A scriptable fake LLM server for tests: real HTTP on 127.0.0.1 speaking OpenAI (Chat Completions and
Responses), Anthropic (direct, Bedrock and Vertex) and Gemini.

It lets tests drive the real ``openai`` / ``anthropic`` SDKs (and ``caddie -p`` in a subprocess) through
whole conversations, offline and fast, and inspect every request that was actually sent.

Quick start::

    from tests.support import fake_llm as fl

    with fl.FakeLLM() as llm:                     # starts on a random port, stops on exit
        llm.push(
            fl.tool_call("read", {"path": "a.py"}),   # turn 1: the model calls a tool
            fl.text("The file defines main()."),      # turn 2: it answers
        )
        ...  # point a client at llm.openai_base_url or llm.anthropic_base_url
        assert llm.llm_requests[1].tool_results == [("call_1", "def main(): ...")]

Endpoints
    ``POST /v1/chat/completions``  OpenAI Chat Completions, streamed (SSE) or not, per the request's
                                   ``stream``; usage chunk when ``stream_options.include_usage`` is set.
    ``POST /v1/messages``          Anthropic Messages, streamed (message_start, content_block_start/
                                   delta/stop, message_delta, message_stop) or not.
    ``POST …/responses``           OpenAI Responses, streamed with named events (reasoning item with summary
                                   deltas and ``encrypted_content``, output message, function calls,
                                   ``response.completed``/``incomplete``); Azure's ``/openai/v1/responses``.
    ``POST …/models/<id>:streamGenerateContent``  Gemini (``alt=sse``): thought parts, text, function calls,
                                   the thought signature, ``finishReason`` and ``usageMetadata``.
    ``POST /model/<id>/invoke-with-response-stream``  Bedrock: Anthropic events in AWS event-stream frames.
    ``POST …/publishers/anthropic/models/<id>:streamRawPredict``  Vertex: Anthropic SSE.
    ``POST …/token``               a Google OAuth token (``access_token``; ``token_requests`` counts them).
    ``GET /v1/models``             OpenAI-style model list (``openai_models``).
    ``GET /api/tags``              Ollama-style model list (only when ``ollama_models`` is given).
    Both POST endpoints also answer under any prefix (``/anything/v1/messages``).

Scripting — ``FakeLLM``
    ``push(*replies)`` / ``set_replies(replies)``  queue replies, consumed FIFO by POST requests of either
        protocol; a reply is a ``Reply`` or a callable ``(RecordedRequest) -> Reply`` for answers that
        depend on the request. ``pending`` is the queue length; ``clear()`` empties it.
    ``default_reply``  used when the queue is empty (else the server answers 500 "fake_llm: no reply queued").
    ``requests``  every request received (``RecordedRequest``), in order; ``llm_requests`` only the chat
        POSTs (no model listings); ``last_request``; ``wait_for_requests(n, timeout=5.0)``.
    ``url``, ``openai_base_url`` (``url + "/v1"``), ``anthropic_base_url`` (``url``; the SDK adds ``/v1``).
    ``models_json(...)`` / ``write_models_json(agent_dir, ...)``  a Pi-format models.json that points a
        provider at this server (for ``caddie -p --model fake/fake-model`` end-to-end tests).

Replies — ``Reply`` (a dataclass; every field has a default) and module-level builders:
    ``text(t)``  ``thinking(reasoning, answer="")``  ``tool_call(name, args, id=None)``
    ``tool_calls(ToolCallSpec(name, args, id), ...)`` (parallel calls)  ``error(status, message, type=None,
    code=None, retry_after=None, headers=None)``  ``overloaded()`` (529)  ``context_overflow(api)``
    (``"anthropic"`` or ``"openai"`` wording)  ``stall(after_events=1, seconds=30)``
    ``malformed(after_events=1)``  ``disconnect(after_events=2)``  ``empty_chunks(after_events=1)``. Every builder also takes ``Reply``
    fields as keywords (``fl.text("hi", usage=fl.UsageSpec(100, 5), delay_s=0.05)``).
    Fields worth knowing: ``usage`` (``UsageSpec(input, output, cache_read, cache_write, reasoning)``),
    ``no_usage`` (Chat Completions: no usage at all, as servers that ignore ``include_usage``),
    ``finish`` (raw finish_reason / stop_reason override), ``chunk_size`` (characters per delta; tool
    arguments are split the same way, so small sizes exercise many-delta assembly), ``delay_s`` (pause
    between events: slow streams for abort tests), ``interleave_tool_calls`` (OpenAI: alternate argument
    deltas of parallel calls by index), ``reasoning_field`` (OpenAI delta field for thinking, default
    ``reasoning_content``), ``thinking_signature`` / ``redacted_thinking`` (Anthropic),
    ``stream_error_after`` + ``error`` (an error event in the middle of a 200 stream), ``headers``.

Recorded requests — ``RecordedRequest``
    ``method``, ``path``, ``headers`` (lower-case keys), ``body`` (parsed JSON or None), ``raw`` (bytes),
    ``api`` (``"openai"``, ``"anthropic"``, ``"responses"``, ``"gemini"``, ``"bedrock"``, ``"vertex"`` or ``"other"``), ``client_disconnected`` (the client closed the
    connection while the server was still streaming), and helpers ``messages``, ``system`` (system
    prompt text for either protocol), ``tool_names``, ``last_user_text``, ``tool_results`` (``[(id,
    text)]`` for either protocol), ``model``, ``stream``.
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "FakeLLM",
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "Route",
    "ToolCallSpec",
    "UsageSpec",
    "context_overflow",
    "disconnect",
    "empty_chunks",
    "error",
    "malformed",
    "overloaded",
    "stall",
    "text",
    "thinking",
    "tool_call",
    "tool_calls",
]


@dataclass
class UsageSpec:
    """Token counts to report. ``input`` excludes cache reads and writes (caddie's convention)."""

    input: int = 10
    output: int = 5
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    """A dict (sent as JSON) or a raw string (sent verbatim, e.g. to test broken arguments)."""
    id: str | None = None
    custom: bool = False
    """An OpenAI custom tool call (a grammar tool's): ``arguments`` is its input text (Responses and Chat
    Completions)."""

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Reply:
    """One scripted response, rendered in whichever protocol the request used."""

    text: str = ""
    thinking: str = ""
    thinking_signature: str = "fake-signature"
    redacted_thinking: str | None = None
    reasoning_field: str = "reasoning_content"
    encrypted_reasoning: str | None = None
    """OpenAI Responses: the reasoning item's ``encrypted_content`` (default ``enc-`` + the signature)."""
    service_tier: str | None = None
    """OpenAI Responses: the ``service_tier`` the response reports."""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    usage: UsageSpec | None = None
    no_usage: bool = False
    """OpenAI Chat Completions: report no usage at all, even when asked (as llama-cpp-python's server)."""
    finish: str | None = None
    model: str | None = None
    status: int = 200
    error: str | None = None
    error_type: str | None = None
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int = 4
    delay_s: float = 0.0
    interleave_tool_calls: bool = False
    stall_after: int | None = None
    stall_s: float = 30.0
    malformed_after: int | None = None
    disconnect_after: int | None = None
    stream_error_after: int | None = None
    empty_after: int | None = None
    empty_interval_s: float = 0.05


# --------------------------------------------------------------------------------------------------
# Reply builders (module-level so they read well: ``fl.text("hi")``, ``fl.error(429, "slow down")``)


def text(content: str, **kw: Any) -> Reply:
    """A plain text answer."""
    return Reply(text=content, **kw)


def thinking(reasoning: str, answer: str = "", **kw: Any) -> Reply:
    """Thinking (OpenAI: ``reasoning_content`` deltas; Anthropic: a signed thinking block), then text."""
    return Reply(thinking=reasoning, text=answer, **kw)


def tool_call(
    name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None, **kw: Any
) -> Reply:
    """One tool call (ids default to ``call_1``, ``call_2``... within a reply)."""
    return Reply(tool_calls=[ToolCallSpec(name, {} if arguments is None else arguments, id)], **kw)


def tool_calls(*calls: ToolCallSpec, **kw: Any) -> Reply:
    """Several tool calls in one reply (parallel tool calls)."""
    return Reply(tool_calls=list(calls), **kw)


def error(
    status: int,
    message: str,
    *,
    type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """An HTTP error in the protocol's error shape; ``retry_after`` (seconds) adds a Retry-After header."""
    hdrs = dict(headers or {})
    if retry_after is not None:
        hdrs["retry-after"] = f"{retry_after:g}"
    return Reply(status=status, error=message, error_type=type, error_code=code, headers=hdrs)


def overloaded() -> Reply:
    """Anthropic's 529 overloaded_error."""
    return error(529, "Overloaded", type="overloaded_error")


def context_overflow(api: str = "anthropic") -> Reply:
    """A 400 with the provider's real "context too long" wording (``api``: ``anthropic`` or ``openai``)."""
    if api == "anthropic":
        return error(400, "prompt is too long: 213462 tokens > 200000 maximum")
    return error(
        400,
        "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "130001 tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


def stall(after_events: int = 1, seconds: float = 30.0, content: str = "a reply that never ends") -> Reply:
    """Send ``after_events`` SSE events, then go silent for ``seconds`` (the client should time out)."""
    return Reply(text=content, stall_after=after_events, stall_s=seconds)


def empty_chunks(after_events: int = 1, interval_s: float = 0.05, content: str = "never finished") -> Reply:
    """Send ``after_events`` events, then content-free chunks every ``interval_s`` until the client leaves
    (OpenAI: chunks with an empty ``delta``; Anthropic: empty ``text_delta``s of block 0, so
    ``after_events`` must be at least 3 there): busy, but no progress."""
    return Reply(text=content, empty_after=after_events, empty_interval_s=interval_s)


def malformed(after_events: int = 1, content: str = "hello there") -> Reply:
    """Send ``after_events`` good events, then one whose JSON is cut off."""
    return Reply(text=content, malformed_after=after_events)


def disconnect(after_events: int = 2, content: str = "this reply is cut off in the middle") -> Reply:
    """Send ``after_events`` events, then drop the TCP connection mid-body."""
    return Reply(text=content, disconnect_after=after_events)


ReplySource = Reply | Callable[["RecordedRequest"], Reply]
Route = Callable[["RecordedRequest"], tuple[int, Any]]
"""An extra endpoint (``FakeLLM(routes=...)``): the request → (HTTP status, JSON body)."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    api: str
    client_disconnected: bool = False

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream")) if isinstance(self.body, dict) else False

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages") if isinstance(self.body, dict) else None
        return msgs if isinstance(msgs, list) else []

    @property
    def system(self) -> str | None:
        """The system prompt: Anthropic's ``system`` or OpenAI's leading system/developer message."""
        if not isinstance(self.body, dict):
            return None
        if self.api == "anthropic":
            sys_value = self.body.get("system")
            if isinstance(sys_value, str):
                return sys_value
            if isinstance(sys_value, list):
                return "\n".join(b.get("text", "") for b in sys_value if isinstance(b, dict))
            return None
        for m in self.messages:
            if m.get("role") in ("system", "developer"):
                return _text_of(m.get("content"))
        return None

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names: list[str] = []
        for t in tools or []:
            if isinstance(t, dict):
                fn = t.get("function")
                names.append(str(fn.get("name") if isinstance(fn, dict) else t.get("name")))
        return names

    @property
    def last_user_text(self) -> str | None:
        for m in reversed(self.messages):
            if m.get("role") != "user":
                continue
            content = m.get("content")
            if isinstance(content, list) and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                continue
            return _text_of(content)
        return None

    @property
    def tool_results(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for m in self.messages:
            if m.get("role") == "tool":
                out.append((str(m.get("tool_call_id")), _text_of(m.get("content"))))
            elif m.get("role") == "user" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        out.append((str(b.get("tool_use_id")), _text_of(b.get("content"))))
        return out


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Disconnect(Exception):
    pass


# --------------------------------------------------------------------------------------------------
# Rendering


def _default_usage(reply: Reply) -> UsageSpec:
    chars = len(reply.text) + len(reply.thinking) + sum(len(c.arguments_json()) for c in reply.tool_calls)
    return UsageSpec(input=10, output=max(1, chars // 4))


def _call_ids(reply: Reply) -> list[str]:
    return [c.id or f"call_{i + 1}" for i, c in enumerate(reply.tool_calls)]


def _openai_error_body(reply: Reply) -> dict[str, Any]:
    kind = reply.error_type or ("rate_limit_error" if reply.status == 429 else "invalid_request_error")
    return {"error": {"message": reply.error, "type": kind, "param": None, "code": reply.error_code}}


_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _anthropic_error_body(reply: Reply) -> dict[str, Any]:
    kind = reply.error_type or _ANTHROPIC_TYPES.get(reply.status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": reply.error}}


def _openai_usage(u: UsageSpec) -> dict[str, Any]:
    prompt = u.input + u.cache_read + u.cache_write
    details: dict[str, Any] = {"cached_tokens": u.cache_read}
    if u.cache_write:
        details["cache_write_tokens"] = u.cache_write
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output,
        "total_tokens": prompt + u.output,
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": u.reasoning},
    }


def _openai_finish(reply: Reply) -> str:
    return reply.finish or ("tool_calls" if reply.tool_calls else "stop")


def _anthropic_finish(reply: Reply) -> str:
    return reply.finish or ("tool_use" if reply.tool_calls else "end_turn")


def openai_events(reply: Reply, model: str, include_usage: bool) -> list[str]:
    """The SSE ``data:`` payloads of one streamed Chat Completions reply (``[DONE]`` included)."""
    created = int(time.time())
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    for piece in _pieces(reply.thinking, reply.chunk_size):
        events.append(chunk({reply.reasoning_field: piece}))
    for piece in _pieces(reply.text, reply.chunk_size):
        events.append(chunk({"content": piece}))
    ids = _call_ids(reply)
    per_call: list[list[dict[str, Any]]] = []
    for i, call in enumerate(reply.tool_calls):
        if call.custom:
            custom: list[dict[str, Any]] = [
                {"index": i, "id": ids[i], "type": "custom", "custom": {"name": call.name, "input": ""}}
            ]
            custom += [
                {"index": i, "custom": {"input": p}} for p in _pieces(call.arguments_json(), reply.chunk_size)
            ]
            per_call.append(custom)
            continue
        deltas: list[dict[str, Any]] = [
            {"index": i, "id": ids[i], "type": "function", "function": {"name": call.name, "arguments": ""}}
        ]
        deltas += [
            {"index": i, "function": {"arguments": p}}
            for p in _pieces(call.arguments_json(), reply.chunk_size)
        ]
        per_call.append(deltas)
    if reply.interleave_tool_calls:
        longest = max((len(d) for d in per_call), default=0)
        for step in range(longest):
            for deltas in per_call:
                if step < len(deltas):
                    events.append(chunk({"tool_calls": [deltas[step]]}))
    else:
        for deltas in per_call:
            events += [chunk({"tool_calls": [d]}) for d in deltas]
    events.append(chunk({}, _openai_finish(reply)))
    if include_usage and not reply.no_usage:
        usage = reply.usage or _default_usage(reply)
        events.append(json.dumps({**base, "choices": [], "usage": _openai_usage(usage)}))
    events.append("[DONE]")
    return [f"data: {e}\n\n" for e in events]


def openai_completion(reply: Reply, model: str) -> dict[str, Any]:
    ids = _call_ids(reply)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.thinking:
        message[reply.reasoning_field] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": ids[i], "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
            for i, c in enumerate(reply.tool_calls)
        ]
    completion = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(reply)}],
        "usage": _openai_usage(reply.usage or _default_usage(reply)),
    }
    if reply.no_usage:
        del completion["usage"]
    return completion


def _anthropic_usage(u: UsageSpec, output: int) -> dict[str, Any]:
    return {
        "input_tokens": u.input,
        "output_tokens": output,
        "cache_read_input_tokens": u.cache_read,
        "cache_creation_input_tokens": u.cache_write,
    }


def anthropic_events(reply: Reply, model: str) -> list[str]:
    """The SSE events of one streamed Messages reply."""
    usage = reply.usage or _default_usage(reply)
    out: list[tuple[str, dict[str, Any]]] = []
    message: dict[str, Any] = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(usage, 1),
    }
    out.append(("message_start", {"type": "message_start", "message": message}))
    out.append(("ping", {"type": "ping"}))
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        out.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        for d in deltas:
            out.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1

    if reply.thinking:
        deltas = [
            {"type": "thinking_delta", "thinking": p} for p in _pieces(reply.thinking, reply.chunk_size)
        ]
        deltas.append({"type": "signature_delta", "signature": reply.thinking_signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if reply.redacted_thinking is not None:
        block({"type": "redacted_thinking", "data": reply.redacted_thinking}, [])
    if reply.text:
        block(
            {"type": "text", "text": ""},
            [{"type": "text_delta", "text": p} for p in _pieces(reply.text, reply.chunk_size)],
        )
    for call_id, call in zip(_call_ids(reply), reply.tool_calls, strict=True):
        block(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": {}},
            [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(call.arguments_json(), reply.chunk_size)
            ],
        )
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": _anthropic_finish(reply), "stop_sequence": None},
                "usage": _anthropic_usage(usage, usage.output),
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in out]


def anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    usage = reply.usage or _default_usage(reply)
    content: list[dict[str, Any]] = []
    if reply.thinking:
        content.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": reply.thinking_signature}
        )
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, call in zip(_call_ids(reply), reply.tool_calls, strict=True):
        args = call.arguments if isinstance(call.arguments, dict) else json.loads(call.arguments or "{}")
        content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": args})
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": _anthropic_finish(reply),
        "stop_sequence": None,
        "usage": _anthropic_usage(usage, usage.output),
    }


# --------------------------------------------------------------------------------------------------
# OpenAI Responses (SSE with named events, as documented for ``stream: true``)


def responses_events(reply: Reply, model: str) -> list[str]:
    """The SSE events of one streamed Responses reply: reasoning item (summary deltas, encrypted
    content), output message (text deltas), function calls (argument deltas), then
    ``response.completed`` (or ``response.incomplete`` when ``finish`` names an incomplete reason)."""
    usage = reply.usage or _default_usage(reply)
    seq = 0
    out: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **data: Any) -> None:
        nonlocal seq
        out.append((kind, {"type": kind, "sequence_number": seq, **data}))
        seq += 1

    response: dict[str, Any] = {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    emit("response.created", response=dict(response))
    emit("response.in_progress", response=dict(response))
    items: list[dict[str, Any]] = []
    index = 0
    if reply.thinking:
        item_id = "rs_fake_1"
        emit(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        part = {"type": "summary_text", "text": ""}
        emit(
            "response.reasoning_summary_part.added",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            part=part,
        )
        for piece in _pieces(reply.thinking, reply.chunk_size):
            emit(
                "response.reasoning_summary_text.delta",
                item_id=item_id,
                output_index=index,
                summary_index=0,
                delta=piece,
            )
        emit(
            "response.reasoning_summary_text.done",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            text=reply.thinking,
        )
        emit(
            "response.reasoning_summary_part.done",
            item_id=item_id,
            output_index=index,
            summary_index=0,
            part={"type": "summary_text", "text": reply.thinking},
        )
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": reply.thinking}],
            "encrypted_content": reply.encrypted_reasoning or f"enc-{reply.thinking_signature}",
        }
        emit("response.output_item.done", output_index=index, item=item)
        items.append(item)
        index += 1
    if reply.text:
        item_id = f"msg_fake_{index}"
        emit(
            "response.output_item.added",
            output_index=index,
            item={
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        )
        emit(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for piece in _pieces(reply.text, reply.chunk_size):
            emit(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
                logprobs=[],
            )
        emit(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=reply.text,
            logprobs=[],
        )
        text_part = {"type": "output_text", "text": reply.text, "annotations": []}
        emit(
            "response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=text_part
        )
        item = {
            "id": item_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [text_part],
        }
        emit("response.output_item.done", output_index=index, item=item)
        items.append(item)
        index += 1
    for call_id, call in zip(_call_ids(reply), reply.tool_calls, strict=True):
        if call.custom:
            item_id = f"ctc_fake_{index}"
            text_in = call.arguments_json()
            begin = {"id": item_id, "type": "custom_tool_call", "status": "in_progress", "call_id": call_id,
                     "name": call.name, "input": ""}  # fmt: skip
            emit("response.output_item.added", output_index=index, item=begin)
            for piece in _pieces(text_in, reply.chunk_size):
                emit(
                    "response.custom_tool_call_input.delta", item_id=item_id, output_index=index, delta=piece
                )
            emit("response.custom_tool_call_input.done", item_id=item_id, output_index=index, input=text_in)
            done_item = {**begin, "status": "completed", "input": text_in}
            emit("response.output_item.done", output_index=index, item=done_item)
            items.append(done_item)
            index += 1
            continue
        item_id = f"fc_fake_{index}"
        args = call.arguments_json()
        start = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": call.name,
            "arguments": "",
        }
        emit("response.output_item.added", output_index=index, item=start)
        for piece in _pieces(args, reply.chunk_size):
            emit("response.function_call_arguments.delta", item_id=item_id, output_index=index, delta=piece)
        emit("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=args)
        item = {**start, "status": "completed", "arguments": args}
        emit("response.output_item.done", output_index=index, item=item)
        items.append(item)
        index += 1
    incomplete = reply.finish not in (None, "completed")
    final = {
        **response,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": reply.finish} if incomplete else None,
        "output": items,
        "usage": {
            "input_tokens": usage.input + usage.cache_read + usage.cache_write,
            "input_tokens_details": {"cached_tokens": usage.cache_read},
            "output_tokens": usage.output,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning},
            "total_tokens": usage.input + usage.cache_read + usage.cache_write + usage.output,
        },
    }
    if reply.service_tier:
        final["service_tier"] = reply.service_tier
    emit("response.incomplete" if incomplete else "response.completed", response=final)
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in out]


# --------------------------------------------------------------------------------------------------
# Gemini (``:streamGenerateContent?alt=sse``: ``data:`` lines, each a GenerateContentResponse)


def gemini_events(reply: Reply, model: str) -> list[str]:
    """Thought parts (``thought: true``), text parts, then function calls; the thought signature rides
    on the first function call, or on the last text part when there is none (as Gemini sends it)."""
    usage = reply.usage or _default_usage(reply)
    chunks: list[list[dict[str, Any]]] = []
    for piece in _pieces(reply.thinking, reply.chunk_size):
        chunks.append([{"text": piece, "thought": True}])
    for piece in _pieces(reply.text, reply.chunk_size):
        chunks.append([{"text": piece}])
    for i, call in enumerate(reply.tool_calls):
        args = call.arguments if isinstance(call.arguments, dict) else json.loads(call.arguments or "{}")
        fc: dict[str, Any] = {"name": call.name, "args": args}
        if call.id:
            fc["id"] = call.id
        part: dict[str, Any] = {"functionCall": fc}
        if i == 0 and reply.thinking_signature:
            part["thoughtSignature"] = reply.thinking_signature
        chunks.append([part])
    if not reply.tool_calls and reply.thinking_signature and reply.text and chunks:
        chunks[-1][0]["thoughtSignature"] = reply.thinking_signature
    if not chunks:
        chunks.append([{"text": ""}])
    events = []
    for n, parts in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": "gemini_fake"}
        if n == len(chunks) - 1:
            candidate["finishReason"] = reply.finish or "STOP"
            prompt = usage.input + usage.cache_read
            body["usageMetadata"] = {
                "promptTokenCount": prompt,
                "candidatesTokenCount": usage.output,
                "thoughtsTokenCount": usage.reasoning,
                "cachedContentTokenCount": usage.cache_read,
                "totalTokenCount": prompt + usage.output + usage.reasoning,
            }
        events.append(f"data: {json.dumps(body)}\r\n\r\n")
    return events


_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _google_error_body(reply: Reply) -> dict[str, Any]:
    return {
        "error": {
            "code": reply.status,
            "message": reply.error,
            "status": _GOOGLE_STATUS.get(reply.status, "UNKNOWN"),
        }
    }


# --------------------------------------------------------------------------------------------------
# Bedrock (``invoke-with-response-stream``: AWS event-stream frames, each carrying one Anthropic event)


def _crc32(data: bytes) -> int:
    import zlib

    return zlib.crc32(data) & 0xFFFFFFFF


def aws_event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One ``application/vnd.amazon.eventstream`` message (string headers, CRC-checked prelude and body)."""
    import struct

    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += (
            struct.pack(">B", len(raw_name))
            + raw_name
            + b"\x07"
            + struct.pack(">H", len(raw_value))
            + raw_value
        )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", _crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", _crc32(message))


def bedrock_frames(reply: Reply, model: str) -> list[bytes]:
    import base64

    frames = []
    for event in anthropic_events(reply, model):
        data = event.split("data: ", 1)[1].strip()
        payload = json.dumps({"bytes": base64.b64encode(data.encode()).decode()}).encode()
        frames.append(
            aws_event_frame(
                {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
                payload,
            )
        )
    return frames


def converse_frames(reply: Reply, model: str) -> list[bytes]:
    """Bedrock ``ConverseStream``: messageStart, content blocks (reasoning, text, tool use), messageStop,
    metadata — each an AWS event-stream message whose ``:event-type`` names it."""
    usage = reply.usage or _default_usage(reply)
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    index = 0
    if reply.thinking:
        for piece in _pieces(reply.thinking, reply.chunk_size):
            events.append(
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"reasoningContent": {"text": piece}}},
                )
            )
        events.append(
            (
                "contentBlockDelta",
                {
                    "contentBlockIndex": index,
                    "delta": {"reasoningContent": {"signature": reply.thinking_signature}},
                },
            )
        )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    if reply.text:
        for piece in _pieces(reply.text, reply.chunk_size):
            events.append(("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}))
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    for call_id, call in zip(_call_ids(reply), reply.tool_calls, strict=True):
        events.append(
            (
                "contentBlockStart",
                {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": call_id, "name": call.name}}},
            )
        )
        for piece in _pieces(call.arguments_json(), reply.chunk_size):
            events.append(
                ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}})
            )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    stop = reply.finish or ("tool_use" if reply.tool_calls else "end_turn")
    events.append(("messageStop", {"stopReason": stop}))
    total = usage.input + usage.output + usage.cache_read + usage.cache_write
    events.append(
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": usage.input,
                    "outputTokens": usage.output,
                    "totalTokens": total,
                    "cacheReadInputTokens": usage.cache_read,
                    "cacheWriteInputTokens": usage.cache_write,
                },
                "metrics": {"latencyMs": 1},
            },
        )
    )
    return [
        aws_event_frame(
            {":event-type": name, ":content-type": "application/json", ":message-type": "event"},
            json.dumps(body).encode(),
        )
        for name, body in events
    ]


# --------------------------------------------------------------------------------------------------
# Server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeLLM

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, addr = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.owner.connections += 1
        return conn, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops a kept-alive connection (at exit, say) is not an error; anything else is."""
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    # -- plumbing ---------------------------------------------------------------------------------
    def _record(self, body_bytes: bytes) -> RecordedRequest:
        body: Any = None
        if self.headers.get("content-encoding", "").lower() == "zstd" and body_bytes:
            import zstandard  # Pi compresses its Codex requests

            body_bytes = zstandard.ZstdDecompressor().decompressobj().decompress(body_bytes)
        if self.server.owner.parse_bodies:
            try:
                body = json.loads(body_bytes) if body_bytes else None
            except json.JSONDecodeError:
                body = None
        elif body_bytes:  # benchmarks: no parsing of megabytes of JSON; every agent streams
            body = {"stream": True}
            if b'"include_usage":true' in body_bytes:  # Chat Completions clients that ask for usage get it
                body["stream_options"] = {"include_usage": True}
        path = self.path.split("?", 1)[0]
        api = (
            "openai"
            if path.endswith("/chat/completions")
            else "anthropic"
            if path.endswith("/messages")
            else "responses"
            if path.endswith("/responses")
            else "gemini"
            if path.endswith((":streamGenerateContent", ":generateContent"))
            else "converse"
            if path.endswith("/converse-stream")
            else "bedrock"
            if path.endswith(("/invoke-with-response-stream", "/invoke"))
            else "vertex"
            if path.endswith((":streamRawPredict", ":rawPredict"))
            else "other"
        )
        req = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=body_bytes,
            body=body,
            api=api,
        )
        self.server.owner._record(req)
        return req

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _write_chunk(self, req: RecordedRequest, text: str) -> None:
        data = text.encode()
        try:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            req.client_disconnected = True
            raise _Disconnect() from None

    def _stream(self, req: RecordedRequest, reply: Reply, events: list[str], protocol: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        keep_alive = self.server.owner.keep_alive
        if not keep_alive:
            self.send_header("Connection", "close")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.close_connection = not keep_alive
        stop = self.server.owner._stop
        try:
            for n, event in enumerate(events):
                if reply.stall_after is not None and n == reply.stall_after:
                    stop.wait(reply.stall_s)
                    # Keep waiting for the client to give up; then say nothing more.
                    return
                if reply.empty_after is not None and n == reply.empty_after:
                    empty = (
                        f"data: {json.dumps({'id': 'chatcmpl-fake', 'object': 'chat.completion.chunk', 'choices': [{'index': 0, 'delta': {}, 'finish_reason': None}]})}\n\n"
                        if protocol == "openai"
                        else 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
                        '"delta": {"type": "text_delta", "text": ""}}\n\n'
                    )
                    while not stop.wait(reply.empty_interval_s):
                        self._write_chunk(req, empty)
                    return
                if reply.disconnect_after is not None and n == reply.disconnect_after:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.malformed_after is not None and n == reply.malformed_after:
                    bad = (
                        '{"choices": [{"delta": {"content": "oops"'
                        if protocol == "openai"
                        else '{"type": "content_block_delta", "index": 0, "delta": {'
                    )
                    prefix = "" if protocol == "openai" else "event: content_block_delta\n"
                    self._write_chunk(req, f"{prefix}data: {bad}\n\n")
                if reply.stream_error_after is not None and n == reply.stream_error_after:
                    if protocol == "responses":
                        body = {
                            "type": "error",
                            "code": reply.error_code or "server_error",
                            "message": reply.error,
                            "param": None,
                        }
                        self._write_chunk(req, f"event: error\ndata: {json.dumps(body)}\n\n")
                    elif protocol == "gemini":
                        self._write_chunk(req, f"data: {json.dumps(_google_error_body(reply))}\n\n")
                    elif protocol == "openai":
                        self._write_chunk(req, f"data: {json.dumps(_openai_error_body(reply))}\n\n")
                    else:
                        self._write_chunk(
                            req, f"event: error\ndata: {json.dumps(_anthropic_error_body(reply))}\n\n"
                        )
                    break
                if reply.delay_s and n > 0 and stop.wait(reply.delay_s):
                    return
                self._write_chunk(req, event)
            self._write_chunk_end(req)
        except _Disconnect:
            return

    def _write_chunk_end(self, req: RecordedRequest) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            req.client_disconnected = True

    # -- routes -----------------------------------------------------------------------------------
    def _extra_route(self, req: RecordedRequest) -> bool:
        route = self.server.owner.routes.get((req.method, req.path.split("?", 1)[0]))
        if route is None:
            return False
        status, body = route(req)
        self._send_json(status, body)
        return True

    def do_GET(self) -> None:
        req = self._record(b"")
        owner = self.server.owner
        path = req.path.split("?", 1)[0]
        if self._extra_route(req):
            return
        if path.endswith("/api/tags") and owner.ollama_models is not None:
            models = [{"name": m, "model": m, "size": 1, "details": {}} for m in owner.ollama_models]
            self._send_json(200, {"models": models})
        elif path.endswith("/models"):
            ids = (
                owner.openai_models
                if owner.openai_models is not None
                else (owner.ollama_models or ["fake-model"])
            )
            self._send_json(
                200,
                {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in ids]},
            )
        else:
            self._send_json(404, {"error": {"message": f"no route for GET {path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body_bytes = self.rfile.read(length) if length else b""
        req = self._record(body_bytes)
        owner = self.server.owner
        if self._extra_route(req):
            return
        if req.api == "other":
            if req.path.split("?", 1)[0].endswith("/token"):  # OAuth refresh for Google credentials
                owner.token_requests += 1
                self._send_json(
                    200, {"access_token": owner.access_token, "expires_in": 3600, "token_type": "Bearer"}
                )
                return
            self._send_json(404, {"error": {"message": f"no route for POST {req.path}"}})
            return
        source = owner._next_reply()
        if source is None:
            missing = Reply(status=500, error="fake_llm: no reply queued")
            self._send_error(req, missing)
            return
        reply = source(req) if callable(source) else source
        if reply.status != 200:
            self._send_error(req, reply)
            return
        model = reply.model or req.model or "fake-model"
        if req.api == "openai":
            if req.stream:
                opts = req.body.get("stream_options") if isinstance(req.body, dict) else None
                include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
                self._stream(req, reply, openai_events(reply, model, include_usage), "openai")
            else:
                self._send_json(200, openai_completion(reply, model), reply.headers)
        elif req.api == "responses":
            self._stream(req, reply, responses_events(reply, model), "responses")
        elif req.api == "gemini":
            self._stream(req, reply, gemini_events(reply, _gemini_model(req.path)), "gemini")
        elif req.api == "bedrock":
            self._stream_frames(req, reply, bedrock_frames(reply, _bedrock_model(req.path)))
        elif req.api == "converse":
            self._stream_frames(req, reply, converse_frames(reply, _bedrock_model(req.path)))
        elif req.stream:
            self._stream(req, reply, anthropic_events(reply, model), "anthropic")
        else:
            self._send_json(200, anthropic_message(reply, model), reply.headers)

    def _stream_frames(self, req: RecordedRequest, reply: Reply, frames: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for n, frame in enumerate(frames):
                if reply.disconnect_after is not None and n == reply.disconnect_after:
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
                self.wfile.flush()
            self._write_chunk_end(req)
        except OSError:
            req.client_disconnected = True

    def _send_error(self, req: RecordedRequest, reply: Reply) -> None:
        if req.api in ("openai", "responses"):
            body = _openai_error_body(reply)
        elif req.api == "gemini":
            body = _google_error_body(reply)
        elif req.api in ("bedrock", "converse"):
            body = {"message": reply.error}
        else:
            body = _anthropic_error_body(reply)
        self._send_json(reply.status, body, reply.headers)


def _gemini_model(path: str) -> str:
    return path.split("?", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def _bedrock_model(path: str) -> str:
    from urllib.parse import unquote

    parts = path.split("?", 1)[0].split("/")
    return unquote(parts[-2]) if len(parts) >= 2 else "fake-model"


class FakeLLM:
    """The server; see the module docstring for the whole API."""

    def __init__(
        self,
        *,
        ollama_models: list[str] | None = None,
        openai_models: list[str] | None = None,
        default_reply: ReplySource | None = None,
        parse_bodies: bool = True,
        keep_alive: bool = False,
        routes: dict[tuple[str, str], Route] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.routes: dict[tuple[str, str], Route] = dict(routes or {})
        """Extra endpoints, answered before the built-in ones: ``(method, path)`` → a function of the request
        giving ``(status, JSON body)`` (a local server's metadata or tokenizer: tests/support/fake_local.py)."""
        self.tls = tls
        """A server-side TLS context: the fake answers ``https://`` (see ``tests/support/tls.py``)."""
        self.keep_alive = keep_alive
        self.connections = 0
        """TCP connections accepted so far."""
        """True: streamed replies keep the connection open for the next request, as real APIs do
        (benchmarks); False (tests): every stream ends its connection."""
        self.parse_bodies = parse_bodies
        """False: request bodies are kept raw and every request is answered as a stream (benchmarks)."""
        self.ollama_models = ollama_models
        self.openai_models = openai_models
        self.default_reply = default_reply
        self.requests: list[RecordedRequest] = []
        self.access_token = "ya29.fake-access-token"
        """What ``POST …/token`` (a Google OAuth refresh) answers; ``token_requests`` counts them."""
        self.token_requests = 0
        self._queue: list[ReplySource] = []
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM is not running; call start() or use it as a context manager"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # -- scripting ---------------------------------------------------------------------------------
    def push(self, *replies: ReplySource) -> None:
        with self._lock:
            self._queue.extend(replies)

    def set_replies(self, replies: list[ReplySource]) -> None:
        with self._lock:
            self._queue = list(replies)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next_reply(self) -> ReplySource | None:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
            return self.default_reply

    def _record(self, req: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self._lock.notify_all()

    # -- inspection ---------------------------------------------------------------------------------
    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            if not self.requests:
                raise AssertionError("FakeLLM received no requests")
            return self.requests[-1]

    @property
    def llm_requests(self) -> list[RecordedRequest]:
        """Only the chat requests (POSTs to either protocol), not model listings."""
        with self._lock:
            return [r for r in self.requests if r.api != "other" and r.method == "POST"]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"FakeLLM got {len(self.requests)} requests, expected {count}")
                self._lock.wait(left)
            return list(self.requests)

    def __iter__(self) -> Iterator[RecordedRequest]:
        return iter(list(self.requests))

    # -- models.json for end-to-end tests ----------------------------------------------------------
    def models_json(
        self,
        *,
        provider: str = "fake",
        api: str = "openai-completions",
        model_id: str = "fake-model",
        api_key: str = "fake-key",
        **model_fields: Any,
    ) -> dict[str, Any]:
        """A Pi-format models.json pointing ``provider/model_id`` at this server (extra fields go on the model)."""
        base = (
            self.openai_base_url
            if api in ("openai-completions", "openai-responses")
            else self.anthropic_base_url
        )
        model: dict[str, Any] = {"id": model_id, **model_fields}
        return {"providers": {provider: {"baseUrl": base, "api": api, "apiKey": api_key, "models": [model]}}}

    def write_models_json(self, agent_dir: str | Path, **kwargs: Any) -> Path:
        """Write ``models_json(**kwargs)`` to ``<agent_dir>/models.json`` (creating the folder)."""
        path = Path(agent_dir) / "models.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.models_json(**kwargs), indent=2), encoding="utf-8")
        return path
