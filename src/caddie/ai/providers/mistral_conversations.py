"""The ``mistral-conversations`` API: Mistral's native chat completions endpoint (``POST /v1/chat/completions``,
SSE), as Pi 0.84.4 speaks it — through Mistral's documented HTTP API rather than its SDK, whose import
costs ~1–1.8 s (460 modules) and which re-validates the conversation through pydantic on every request.

Mistral's own shapes: thinking travels as ``{"type": "thinking", "thinking": [{"type": "text", …}]}``
content chunks, tool-call ids are nine alphanumeric characters (longer ids are hashed, as Pi does), tool
results carry the tool's name, images are ``image_url`` chunks for models that take images.
``promptMode: "reasoning"`` (or ``reasoning_effort`` on the models that use it) turns thinking on; the
session id is the ``prompt_cache_key`` and the ``x-affinity`` header.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import resolve_strict, tool_parameters
from caddie.ai.messages import (
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    LlmMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
    replace,
)
from caddie.ai.model import Context, Model, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer, final_arguments, parse_partial_json
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.http_stream import SseStream, make_http_client, post_sse
from caddie.ai.providers.openai_responses import short_hash
from caddie.ai.providers.request import compact_json, encode_body, sanitize_text
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_max_tokens, clamp_thinking_level
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
from caddie.ai.transform import transform_messages

API = "mistral-conversations"
ID_LENGTH = 9
_STOPS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",
    "tool_calls": "toolUse",
}
_EFFORT_MODELS = ("mistral-small-2603", "mistral-small-latest", "mistral-medium-3.5")


def mistral_tool_call_id(tool_call_id: str, attempt: int = 0) -> str:
    """A nine-character alphanumeric id (Mistral's rule): the id itself when it is one, else a hash."""
    cleaned = "".join(c for c in tool_call_id if c.isascii() and c.isalnum())
    if attempt == 0 and len(cleaned) == ID_LENGTH:
        return cleaned
    seed = cleaned or tool_call_id
    digest = "".join(c for c in short_hash(seed if attempt == 0 else f"{seed}:{attempt}") if c.isalnum())
    return digest[:ID_LENGTH]


def _normalizer() -> Any:
    seen: dict[str, str] = {}
    owners: dict[str, str] = {}

    def normalize(tool_call_id: str, _model: Model, _source: AssistantMessage) -> str:
        if tool_call_id in seen:
            return seen[tool_call_id]
        attempt = 0
        while True:
            candidate = mistral_tool_call_id(tool_call_id, attempt)
            if owners.get(candidate, tool_call_id) == tool_call_id:
                seen[tool_call_id], owners[candidate] = candidate, tool_call_id
                return candidate
            attempt += 1

    return normalize


def _tool_text(result: ToolResultMessage, images_ok: bool) -> str:
    text = "\n".join(sanitize_text(b.text) for b in result.content if isinstance(b, TextContent)).strip()
    has_images = any(isinstance(b, ImageContent) for b in result.content)
    prefix = "[tool error] " if result.is_error else ""
    if text:
        suffix = (
            "\n[tool image omitted: model does not support images]" if has_images and not images_ok else ""
        )
        return f"{prefix}{text}{suffix}"
    if has_images:
        return (
            f"{prefix}(see attached image)"
            if images_ok
            else f"{prefix}(image omitted: model does not support images)"
        )
    return f"{prefix}(no tool output)"


def convert_messages(messages: list[LlmMessage], images_ok: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, UserMessage):
            if isinstance(msg.content, str):
                out.append({"role": "user", "content": sanitize_text(msg.content)})
                continue
            parts = [
                {"type": "text", "text": sanitize_text(b.text)}
                if isinstance(b, TextContent)
                else {"type": "image_url", "image_url": f"data:{b.mime_type};base64,{b.data}"}
                for b in msg.content
                if isinstance(b, TextContent) or images_ok
            ]
            if parts:
                out.append({"role": "user", "content": parts})
            elif any(isinstance(b, ImageContent) for b in msg.content):
                out.append({"role": "user", "content": "(image omitted: model does not support images)"})
        elif isinstance(msg, AssistantMessage):
            content: list[dict[str, Any]] = []
            calls: list[dict[str, Any]] = []
            for block in msg.content:
                if isinstance(block, TextContent):
                    if block.text.strip():
                        content.append({"type": "text", "text": sanitize_text(block.text)})
                elif isinstance(block, ThinkingContent):
                    if block.thinking.strip():
                        text = {"type": "text", "text": sanitize_text(block.thinking)}
                        content.append({"type": "thinking", "thinking": [text]})
                else:
                    function = {"name": block.name, "arguments": compact_json(block.arguments or {})}
                    calls.append({"id": block.id, "type": "function", "function": function, "index": 0})
            if content or calls:
                message: dict[str, Any] = {"role": "assistant", "prefix": False}
                if content:
                    message["content"] = content
                if calls:
                    message["tool_calls"] = calls
                out.append(message)
        else:
            parts = [{"type": "text", "text": _tool_text(msg, images_ok)}]
            if images_ok:
                parts += [
                    {"type": "image_url", "image_url": f"data:{b.mime_type};base64,{b.data}"}
                    for b in msg.content
                    if isinstance(b, ImageContent)
                ]
            out.append(
                {"role": "tool", "name": msg.tool_name, "content": parts, "tool_call_id": msg.tool_call_id}
            )
    return out


def mistral_tool(tool: Tool) -> dict[str, Any]:
    """A function tool; strict when its constrained sampling asks (Mistral takes strict tools)."""
    strict = resolve_strict(tool, True)
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool_parameters(tool, strict),
            "strict": strict is True,
        },
    }


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    messages = transform_messages(context.messages, model, _normalizer())
    payload: dict[str, Any] = {
        "model": model.id,
        "stream": True,
        "messages": convert_messages(messages, model.supports_images),
    }
    if context.tools:
        payload["tools"] = [mistral_tool(t) for t in context.tools]
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    payload["max_tokens"] = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    level = clamp_thinking_level(model, options.reasoning) if model.reasoning and options.reasoning else "off"
    if level != "off":
        if model.id in _EFFORT_MODELS:
            mapped = (model.thinking_level_map or {}).get(level)
            payload["reasoning_effort"] = mapped if isinstance(mapped, str) else "high"
        else:
            payload["prompt_mode"] = "reasoning"
    if options.cache_retention != "none" and options.session_id:
        payload["prompt_cache_key"] = options.session_id
    if context.system_prompt:
        payload["messages"].insert(0, {"role": "system", "content": sanitize_text(context.system_prompt)})
    return payload


def chat_url(base_url: str) -> str:
    return f"{base_url.rstrip('/')}/v1/chat/completions"


class _Chunks:
    def __init__(self, events: SseStream) -> None:
        self._events = events
        self.response = events.response

    async def __anext__(self) -> dict[str, Any]:
        while True:
            event = await self._events.__anext__()
            data = event.data.strip()
            if data == "[DONE]":
                raise StopAsyncIteration
            if data:
                chunk = json.loads(data)
                if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
                    raise ValueError("Invalid Mistral streaming event")
                return chunk

    async def close(self) -> None:
        await self._events.close()


class MistralAssembler:
    """Folds Mistral's streamed chunks into ``output``: text and thinking in order, tool calls by index."""

    def __init__(self, output: DraftAssistantMessage, model: Model) -> None:
        self.output = output
        self.model = model
        self.current: DraftTextContent | DraftThinkingContent | None = None
        self.buffer = StreamBuffer()
        self.calls: dict[Any, tuple[int, StreamBuffer]] = {}
        self.finished = False

    def _close_current(self) -> list[AssistantMessageEvent]:
        block, self.current = self.current, None
        position = len(self.output.content) - 1
        if isinstance(block, DraftTextContent):
            block.text = self.buffer.text()
            return [TextEndEvent(position, block.text, self.output)]
        if isinstance(block, DraftThinkingContent):
            block.thinking = self.buffer.text()
            return [ThinkingEndEvent(position, block.thinking, self.output)]
        return []

    def _piece(self, kind: type, piece: str) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        if not isinstance(self.current, kind):
            events += self._close_current()
            self.buffer = StreamBuffer()
            self.current = DraftThinkingContent("") if kind is DraftThinkingContent else DraftTextContent("")
            out.content.append(self.current)
            start = ThinkingStartEvent if kind is DraftThinkingContent else TextStartEvent
            events.append(start(len(out.content) - 1, out))
        position = len(out.content) - 1
        if self.buffer.add(piece):
            if isinstance(self.current, DraftThinkingContent):
                self.current.thinking = self.buffer.text()
            elif isinstance(self.current, DraftTextContent):
                self.current.text = self.buffer.text()
        delta = ThinkingDeltaEvent if kind is DraftThinkingContent else TextDeltaEvent
        events.append(delta(position, piece, out))
        return events

    def apply(self, chunk: dict[str, Any]) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        if chunk.get("id") and not out.response_id:
            out.response_id = str(chunk["id"])
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            prompt = int(usage.get("prompt_tokens") or 0)
            details = usage.get("prompt_tokens_details") or {}
            cached = min(
                prompt,
                int(
                    (details.get("cached_tokens") if isinstance(details, dict) else 0)
                    or usage.get("num_cached_tokens")
                    or 0
                ),
            )
            out.usage = finish_usage(
                self.model,
                replace(
                    out.usage,
                    input=max(0, prompt - cached),
                    output=int(usage.get("completion_tokens") or 0),
                    cache_read=cached,
                ),
            )
        choice = chunk["choices"][0] if chunk["choices"] else None
        if not isinstance(choice, dict):
            return events
        reason = choice.get("finish_reason")
        if reason:
            self.finished = True
            out.raw_stop_reason = str(reason)
            out.stop_reason = _STOPS.get(str(reason), "error")
            if out.stop_reason == "error":
                out.error_message = f"Provider stopped with: {reason}"
        delta = choice.get("delta") or {}
        content = delta.get("content")
        for item in [content] if isinstance(content, str) else content or []:
            if isinstance(item, str):
                events += self._piece(DraftTextContent, sanitize_text(item))
            elif isinstance(item, dict) and item.get("type") == "thinking":
                text = "".join(
                    str(p.get("text") or "") for p in item.get("thinking") or [] if isinstance(p, dict)
                )
                if text:
                    events += self._piece(DraftThinkingContent, sanitize_text(text))
            elif isinstance(item, dict) and item.get("type") == "text":
                events += self._piece(DraftTextContent, sanitize_text(str(item.get("text") or "")))
        for call in delta.get("tool_calls") or []:
            events += self._close_current()
            call_id = call.get("id") if call.get("id") not in (None, "null") else None
            call_id = call_id or mistral_tool_call_id(f"toolcall:{call.get('index') or 0}")
            key = call.get("index") if call.get("index") is not None else call_id
            function = call.get("function") or {}
            if key not in self.calls:
                out.content.append(DraftToolCall(str(call_id), str(function.get("name") or ""), {}))
                self.calls[key] = (len(out.content) - 1, StreamBuffer())
                events.append(ToolCallStartEvent(len(out.content) - 1, out))
            position, buffer = self.calls[key]
            raw = function.get("arguments")
            piece = raw if isinstance(raw, str) else json.dumps(raw or {})
            block = out.content[position]
            if buffer.add(piece) and isinstance(block, DraftToolCall):
                block.arguments = parse_partial_json(buffer.text())
            events.append(ToolCallDeltaEvent(position, piece, out))
        return events

    def complete(self) -> bool:
        return False

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.finished:
            raise ConnectionResetError("Mistral stream ended without a finish reason")
        events = self._close_current()
        for position, buffer in self.calls.values():
            block = self.output.content[position]
            if isinstance(block, DraftToolCall):
                block.arguments, block.arguments_error = final_arguments(buffer.text())
                events.append(ToolCallEndEvent(position, block, self.output))
        return events

    def finalize_quietly(self) -> None:
        self._close_current()
        for position, buffer in self.calls.values():
            block = self.output.content[position]
            if isinstance(block, DraftToolCall):
                block.arguments, block.arguments_error = final_arguments(buffer.text())


class MistralConversationsProvider:
    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        headers = {"User-Agent": "caddie", "accept": "text/event-stream", "content-type": "application/json"}
        headers.update(model.headers or {})
        headers.update(options.headers or {})
        explicit = any(k.lower() == "x-affinity" for k in headers)
        if options.cache_retention != "none" and options.session_id and not explicit:
            headers["x-affinity"] = options.session_id
        url = chat_url(model.base_url)

        async def create(client: Any, payload: dict[str, Any]) -> _Chunks:
            sent = {**headers, "authorization": f"Bearer {options.api_key}"}
            return _Chunks(await post_sse(client, url, sent, encode_body(payload)))

        events = stream_via_sdk(
            model,
            options,
            output,
            MistralAssembler(output, model),
            headers=headers,
            api_key=options.api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_payload(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_http_client(idle),
            create=create,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = MistralConversationsProvider()
