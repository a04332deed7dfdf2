"""The ``pi-messages`` API: Pi's own message protocol, spoken by the Radius gateway (and any backend that
implements it, via a models.json provider with ``"api": "pi-messages"``).

One POST of ``{model, context, options}`` to ``<baseUrl>/messages`` — the context in Pi's JSON (the same
message shapes as a session file) — answered by an SSE stream of Pi's assistant-message events
(``text_delta``, ``toolcall_end``…) ending in ``done`` or ``error``, which carry the stop reason, the usage
and the response id. Auth is ``Authorization: Bearer`` with the key or the login's token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import constrained_sampling_json
from caddie.ai.messages import (
    AssistantContent,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    message_to_json,
    usage_from_json,
)
from caddie.ai.model import Context, Model, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer, parse_partial_json
from caddie.ai.providers.http_stream import SseStream, make_http_client, post_sse
from caddie.ai.providers.request import encode_body
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.transport import ClientCache
from caddie.ai.stream_events import (
    AssistantMessageEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

API = "pi-messages"
_STOP_REASONS = ("stop", "length", "toolUse", "error", "aborted")


def _tool_json(tool: Tool) -> dict[str, Any]:
    """A tool as Pi's context holds it (name, label, description, parameters, constrained sampling, execution
    mode)."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.label is not None:
        out["label"] = tool.label
    out["description"] = tool.description
    out["parameters"] = tool.parameters
    if tool.constrained_sampling is not None:
        out["constrainedSampling"] = constrained_sampling_json(tool.constrained_sampling)
    if tool.execution_mode is not None:
        out["executionMode"] = tool.execution_mode
    return out


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """``{model, context, options}`` in Pi's JSON (fields that are not set are left out, as Pi's
    ``JSON.stringify`` leaves out ``undefined``)."""
    ctx: dict[str, Any] = {}
    if context.system_prompt is not None:
        ctx["systemPrompt"] = context.system_prompt
    ctx["messages"] = [message_to_json(m) for m in context.messages]
    if context.tools:
        ctx["tools"] = [_tool_json(t) for t in context.tools]
    settings: dict[str, Any] = {
        "temperature": options.temperature,
        "maxTokens": options.max_tokens,
        "reasoning": options.reasoning if options.reasoning != "off" else None,
        "cacheRetention": options.cache_retention if options.cache_retention != "short" else None,
        "sessionId": options.session_id,
    }
    return {
        "model": model.id,
        "context": ctx,
        "options": {k: v for k, v in settings.items() if v is not None},
    }


def messages_url(base_url: str) -> str:
    return f"{base_url.rstrip('/')}/messages"


class _Events:
    def __init__(self, events: SseStream) -> None:
        self._events = events
        self.response = events.response

    async def __anext__(self) -> dict[str, Any]:
        while True:
            event = await self._events.__anext__()
            data = event.data.strip()
            if data and data != "[DONE]":
                parsed = json.loads(data)
                if isinstance(parsed, dict):
                    return parsed

    async def close(self) -> None:
        await self._events.close()


class PiEventAssembler:
    """Pi's serialised events, folded into ``output`` (indices are the server's ``contentIndex``)."""

    def __init__(self, output: DraftAssistantMessage) -> None:
        self.output = output
        self.buffers: dict[int, StreamBuffer] = {}
        self.done = False

    def _block(self, index: int) -> AssistantContent | None:
        content = self.output.content
        return content[index] if 0 <= index < len(content) else None

    def _put(self, index: int, block: AssistantContent) -> None:
        content = self.output.content
        while len(content) < index:
            content.append(DraftTextContent(""))
        if index < len(content):
            content[index] = block
        else:
            content.append(block)
        self.buffers[index] = StreamBuffer()

    def apply(self, event: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        out = self.output
        kind = event.get("type")
        index = event.get("contentIndex")
        i = index if isinstance(index, int) else -1
        block = self._block(i)
        if kind == "text_start":
            self._put(i, DraftTextContent(""))
            return [TextStartEvent(i, out)]
        if kind == "thinking_start":
            self._put(i, DraftThinkingContent(""))
            return [ThinkingStartEvent(i, out)]
        if kind == "toolcall_start":
            self._put(i, DraftToolCall(str(event.get("id") or ""), str(event.get("toolName") or ""), {}))
            return [ToolCallStartEvent(i, out)]
        delta = str(event.get("delta") or "")
        buffer = self.buffers.get(i)
        if kind == "text_delta" and isinstance(block, DraftTextContent) and buffer is not None:
            if buffer.add(delta):
                block.text = buffer.text()
            return [TextDeltaEvent(i, delta, out)]
        if kind == "thinking_delta" and isinstance(block, DraftThinkingContent) and buffer is not None:
            if buffer.add(delta):
                block.thinking = buffer.text()
            return [ThinkingDeltaEvent(i, delta, out)]
        if kind == "toolcall_delta" and isinstance(block, DraftToolCall) and buffer is not None:
            if buffer.add(delta):
                block.arguments = parse_partial_json(buffer.text())
            return [ToolCallDeltaEvent(i, delta, out)]
        if kind == "text_end" and isinstance(block, DraftTextContent):
            block.text = str(event.get("content") or "")
            if isinstance(event.get("contentSignature"), str):
                block.text_signature = event["contentSignature"]
            return [TextEndEvent(i, block.text, out)]
        if kind == "thinking_end" and isinstance(block, DraftThinkingContent):
            block.thinking = str(event.get("content") or "")
            if isinstance(event.get("contentSignature"), str):
                block.thinking_signature = event["contentSignature"]
            block.redacted = event.get("redacted") is True or None
            return [ThinkingEndEvent(i, block.thinking, out)]
        if kind == "toolcall_end" and isinstance(block, DraftToolCall):
            raw_call = event.get("toolCall")
            call: Mapping[str, Any] = raw_call if isinstance(raw_call, Mapping) else {}
            arguments = call.get("arguments")
            block.arguments = dict(arguments) if isinstance(arguments, Mapping) else block.arguments
            block.id = str(call.get("id") or block.id)
            block.name = str(call.get("name") or block.name)
            return [ToolCallEndEvent(i, block, out)]
        if kind in ("done", "error"):
            self.done = True
            reason = event.get("reason")
            out.stop_reason = reason if reason in _STOP_REASONS else ("error" if kind == "error" else "stop")
            if isinstance(event.get("usage"), Mapping):
                out.usage = usage_from_json(event["usage"])
            if isinstance(event.get("responseId"), str):
                out.response_id = event["responseId"]
            if kind == "error":
                out.stop_reason = "error"
                out.error_message = str(event.get("errorMessage") or "The gateway reported an error")
        return []

    def complete(self) -> bool:
        return self.done

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.done:
            raise ConnectionResetError("stream ended without a terminal event")
        return []

    def finalize_quietly(self) -> None:
        for index, buffer in self.buffers.items():
            block = self._block(index)
            if isinstance(block, DraftTextContent):
                block.text = buffer.text()
            elif isinstance(block, DraftThinkingContent):
                block.thinking = buffer.text()


class PiMessagesProvider:
    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        headers = {
            "accept": "text/event-stream",
            "content-type": "application/json",
            **(model.headers or {}),
            **(options.headers or {}),
        }
        url = messages_url(model.base_url)

        async def create(client: Any, payload: dict[str, Any]) -> _Events:
            sent = {"authorization": f"Bearer {options.api_key}", **headers}
            return _Events(await post_sse(client, url, sent, encode_body(payload)))

        events = stream_via_sdk(
            model,
            options,
            output,
            PiEventAssembler(output),
            headers=headers,
            api_key=options.api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_payload(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_http_client(idle),
            create=create,
            stream_flag=False,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = PiMessagesProvider()
