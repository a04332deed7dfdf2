"""The ``google-generative-ai`` API: Gemini through the official ``google-genai`` SDK (``GEMINI_API_KEY``).

Text, thinking (thought summaries with ``includeThoughts``; Gemini 3 by ``thinkingLevel``, Gemini 2.5 by
``thinkingBudget``, as Pi maps the levels), function calls, images, usage with cached and thought tokens.

Thought signatures — Gemini's encrypted reasoning — are kept where Pi keeps them: on the thinking block
(``thinkingSignature``), on a text block (``textSignature``) and on a tool call (``thoughtSignature``),
and sent back on the same parts when the same model continues, so its reasoning carries across tool calls.

The request is the REST ``GenerateContentRequest`` caddie builds itself, serialised once and POSTed to
Gemini's documented ``streamGenerateContent?alt=sse`` endpoint (``http_stream``) — not through
``google-genai``'s ``models.generate_content_stream``, whose pydantic conversion re-walks the whole
conversation on every turn (65 ms at 200 messages, 0.6 s at 2,000), and which has no public way to send a
body caddie serialised. ``google-vertex`` speaks the same protocol with Google Cloud credentials.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import resolve_strict, tool_parameters
from caddie.ai.conversion_cache import cached_conversion
from caddie.ai.messages import (
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from caddie.ai.model import Context, Model, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.http_stream import HttpStatusError, SseStream, make_http_client, post_sse
from caddie.ai.providers.request import encode_body, sanitize_text
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

API = "google-generative-ai"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_GEMINI_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")
_tool_counter = itertools.count(1)

# --------------------------------------------------------------------------------------------------
# Model families


def gemini_major(model_id: str) -> int | None:
    match = _GEMINI_MAJOR.match(model_id.lower())
    return int(match.group(1)) if match else None


def requires_tool_call_id(model_id: str) -> bool:
    major = gemini_major(model_id)
    return model_id.startswith(("claude-", "gpt-oss-")) or (major is not None and major >= 3)


def _multimodal_function_response(model_id: str) -> bool:
    major = gemini_major(model_id)
    return major is None or major >= 3


def _is_gemini3_pro(model_id: str) -> bool:
    return re.search(r"gemini-3(?:\.\d+)?-pro", model_id.lower()) is not None


def _is_gemini3_flash(model_id: str) -> bool:
    mid = model_id.lower()
    return re.search(r"gemini-3(?:\.\d+)?-flash", mid) is not None or mid in (
        "gemini-flash-latest",
        "gemini-flash-lite-latest",
    )


def _is_gemma4(model_id: str) -> bool:
    return re.search(r"gemma-?4", model_id.lower()) is not None


_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


def thinking_config(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    """Pi's mapping of a thinking level to Gemini's ``thinkingConfig`` (None: send none)."""
    if not model.reasoning:
        return None
    mid = model.id
    if options.reasoning in (None, "off"):
        if _is_gemini3_pro(mid):
            return {"thinkingLevel": "LOW"}
        if _is_gemini3_flash(mid) or _is_gemma4(mid):
            return {"thinkingLevel": "MINIMAL"}
        return {"thinkingBudget": 0}
    level = clamp_thinking_level(model, options.reasoning)
    mapped = (model.thinking_level_map or {}).get(level)
    effort = mapped.lower() if isinstance(mapped, str) else level
    if effort not in ("minimal", "low", "medium", "high"):
        effort = "high"
    if _is_gemini3_pro(mid) or _is_gemini3_flash(mid) or _is_gemma4(mid):
        if _is_gemini3_pro(mid):
            name = "LOW" if effort in ("minimal", "low") else "HIGH"
        elif _is_gemma4(mid):
            name = "MINIMAL" if effort in ("minimal", "low") else "HIGH"
        else:
            name = effort.upper()
        return {"includeThoughts": True, "thinkingLevel": name}
    budget = -1
    for family in ("2.5-pro", "2.5-flash-lite", "2.5-flash"):
        if family in mid:
            budget = _BUDGETS[family][effort]
            break
    if options.thinking_budgets and effort in options.thinking_budgets:
        budget = options.thinking_budgets[effort]  # settings thinkingBudgets, as Pi
    return {"includeThoughts": True, "thinkingBudget": budget}


# --------------------------------------------------------------------------------------------------
# Request: our messages -> Gemini contents


def _valid_signature(signature: str | None) -> str | None:
    if signature and len(signature) % 4 == 0 and _BASE64.match(signature):
        return signature
    return None


def _inline(image: ImageContent, model: Model) -> dict[str, Any]:
    """An image part: ``@google/genai`` rewrites it data-first for the Gemini API, keeps Pi's order on Vertex."""
    if model.api == "google-vertex":
        return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}
    return {"inlineData": {"data": image.data, "mimeType": image.mime_type}}


def _user_parts(content: list[UserContent], model: Model) -> list[dict[str, Any]]:
    return [
        {"text": sanitize_text(b.text)} if isinstance(b, TextContent) else _inline(b, model) for b in content
    ]


def _model_parts(msg: AssistantMessage, model: Model) -> list[dict[str, Any]]:
    same = msg.provider == model.provider and msg.model == model.id
    parts: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextContent):
            signature = _valid_signature(block.text_signature) if same else None
            if not block.text.strip() and not signature:
                continue
            part: dict[str, Any] = {"text": sanitize_text(block.text)}
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        elif isinstance(block, ThinkingContent):
            if same:
                signature = _valid_signature(block.thinking_signature)
                if not block.thinking.strip() and not signature:
                    continue
                part = {"text": sanitize_text(block.thinking), "thought": True}
                if signature:
                    part["thoughtSignature"] = signature
                parts.append(part)
            elif block.thinking.strip():
                parts.append({"text": sanitize_text(block.thinking)})
        else:
            with_id = requires_tool_call_id(model.id)
            call: dict[str, Any]
            if model.api == "google-vertex":  # @google/genai keeps Pi's order on Vertex
                call = {"name": block.name, "args": block.arguments, **({"id": block.id} if with_id else {})}
            else:  # and writes its own on the Gemini API
                call = {**({"id": block.id} if with_id else {}), "args": block.arguments, "name": block.name}
            part = {"functionCall": call}
            signature = _valid_signature(block.thought_signature) if same else None
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
    return parts


def _clean_id(tool_call_id: str, model: Model, _source: AssistantMessage) -> str:
    if not requires_tool_call_id(model.id):
        return tool_call_id
    return re.sub(r"[^a-zA-Z0-9_-]", "_", tool_call_id)[:64]


_NOTHING: dict[str, Any] = {}
"""The cached conversion of a message that sends nothing; never sent, never changed."""


def _convert_message(msg: UserMessage | AssistantMessage, model: Model) -> dict[str, Any]:
    if isinstance(msg, UserMessage):
        if isinstance(msg.content, str):
            return {"parts": [{"text": sanitize_text(msg.content)}], "role": "user"}
        return {"parts": _user_parts(msg.content, model), "role": "user"} if msg.content else _NOTHING
    parts = _model_parts(msg, model)
    return {"parts": parts, "role": "model"} if parts else _NOTHING


def convert_messages(model: Model, context: Context) -> list[dict[str, Any]]:
    """Gemini ``contents`` for ``context`` after the standard repairs (see ``caddie.ai.transform``), with
    keys in the order ``@google/genai`` writes them for Pi, so the bytes sent are Pi's.

    With ``context.conversion_cache``, each message's conversion is kept and reused while the same message
    object comes back (the cached dicts are shared between requests, so nothing here changes them)."""
    cache = context.conversion_cache
    key = ("google-generative-ai", model.api, model.provider, model.id, model.supports_images)
    messages = transform_messages(context.messages, model, _clean_id, cache)
    resumed = cache.resume(key, messages) if cache is not None else None
    scope = cache.scope(key, keep=resumed is not None) if cache is not None else None
    contents: list[dict[str, Any]]
    if resumed is not None:  # the last request's contents for the same first messages (a checkpoint)
        start, (done, open_group) = resumed
        contents = list(done)
    else:
        start, contents, open_group = 0, [], False
    group: list[dict[str, Any]] | None = None
    """The parts of the open user turn of function responses (all of one turn's responses travel
    together), once this request owns it; ``open_group``: ``contents[-1]`` is such a turn."""
    for msg in messages[start:] if start else messages:
        if isinstance(msg, ToolResultMessage):
            part, image_turn = cached_conversion(scope, msg, _function_response, model)
            if not open_group:
                group = [part]
                contents.append({"parts": group, "role": "user"})
            elif group is not None:
                group.append(part)
            else:  # a turn the last request built (shared with it): extended as a copy
                group = [*contents[-1]["parts"], part]
                contents[-1] = {"parts": group, "role": "user"}
            open_group = True
            if image_turn is not None:
                contents.append(image_turn)
                group, open_group = None, False
            continue
        entry = cached_conversion(scope, msg, _convert_message, model)
        if entry is not _NOTHING:
            contents.append(entry)
            group, open_group = None, False
    if cache is not None:
        cache.checkpoint(key, messages, (list(contents), open_group))
    return contents


def _function_response(msg: ToolResultMessage, model: Model) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The ``functionResponse`` part for one result, and the user turn carrying its images if they do not
    travel inside it."""
    text = "\n".join(b.text for b in msg.content if isinstance(b, TextContent))
    images = [b for b in msg.content if isinstance(b, ImageContent)] if model.supports_images else []
    value = sanitize_text(text) if text else "(see attached image)" if images else ""
    image_parts = [{"inlineData": {"mimeType": b.mime_type, "data": b.data}} for b in images]
    turn_parts = [_inline(b, model) for b in images]
    nested = bool(images) and _multimodal_function_response(model.id)
    response: dict[str, Any] = {
        "name": msg.tool_name,
        "response": {"error" if msg.is_error else "output": value},
    }
    if nested:
        response["parts"] = image_parts
    if requires_tool_call_id(model.id):
        response["id"] = msg.tool_call_id
    image_turn = {"parts": [{"text": "Tool result image:"}, *turn_parts], "role": "user"}
    return {"functionResponse": response}, image_turn if images and not nested else None


def supports_strict_tools(model_id: str) -> bool:
    """Gemini 3 and later hold function arguments to their schema (``VALIDATED`` calling mode), as Pi says."""
    match = re.match(r"^gemini(?:-live)?-(\d+)", model_id.lower())
    return match is not None and int(match.group(1)) >= 3


def convert_tools(
    tools: list[Tool], vertex: bool = False, supports_strict: bool = False
) -> list[dict[str, Any]]:
    """Function declarations, keyed as ``@google/genai`` sends them for Pi (its own order on Vertex AI,
    Pi's on the Gemini API); a strict tool's schema in the strict subset."""
    declarations = []
    for t in tools:
        schema = tool_parameters(t, resolve_strict(t, supports_strict))
        if vertex:
            declarations.append(
                {"description": t.description, "name": t.name, "parametersJsonSchema": schema}
            )
        else:
            declarations.append(
                {"name": t.name, "description": t.description, "parametersJsonSchema": schema}
            )
    return [{"functionDeclarations": declarations}]


def build_params(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The REST ``GenerateContentRequest`` body for one streamed call."""
    params: dict[str, Any] = {"contents": convert_messages(model, context)}
    if context.system_prompt:
        # As @google/genai sends a system prompt given as text (Pi): a user-role Content.
        params["systemInstruction"] = {
            "parts": [{"text": sanitize_text(context.system_prompt)}],
            "role": "user",
        }
    if context.tools:
        strict = supports_strict_tools(model.id)
        params["tools"] = convert_tools(
            context.tools, vertex=model.api == "google-vertex", supports_strict=strict
        )
        if any(resolve_strict(t, strict) is True for t in context.tools):
            params["toolConfig"] = {"functionCallingConfig": {"mode": "VALIDATED"}}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    generation["maxOutputTokens"] = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    thinking = thinking_config(model, options)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    params["generationConfig"] = generation
    return params


# --------------------------------------------------------------------------------------------------
# Response: GenerateContentResponse chunks -> our message


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def map_finish_reason(reason: str) -> StopReason:
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    return "error"


def parse_usage(raw: Mapping[str, Any], model: Model) -> Usage:
    cached = _int(raw.get("cachedContentTokenCount"))
    thoughts = _int(raw.get("thoughtsTokenCount"))
    usage = Usage(
        input=max(0, _int(raw.get("promptTokenCount")) - cached),
        output=_int(raw.get("candidatesTokenCount")) + thoughts,
        cache_read=cached,
        reasoning=thoughts,
    )
    return finish_usage(model, usage)


class GeminiAssembler:
    """Folds streamed ``GenerateContentResponse`` chunks (plain dicts) into ``output``.

    Consecutive thought parts make one thinking block, consecutive text parts one text block (each
    accumulating in a ``StreamBuffer``); a function call arrives whole and is a complete tool call."""

    def __init__(self, output: DraftAssistantMessage, model: Model) -> None:
        self.output = output
        self.model = model
        self.current: DraftTextContent | DraftThinkingContent | None = None
        self.buffer = StreamBuffer()
        self.finished = False

    def _close(self) -> list[AssistantMessageEvent]:
        block = self.current
        if block is None:
            return []
        self.current = None
        position = len(self.output.content) - 1
        if isinstance(block, DraftTextContent):
            block.text = self.buffer.text()
            return [TextEndEvent(position, block.text, self.output)]
        if isinstance(block, DraftThinkingContent):
            block.thinking = self.buffer.text()
            return [ThinkingEndEvent(position, block.thinking, self.output)]
        return []

    def _text_part(self, part: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        thought = part.get("thought") is True
        wanted = ThinkingContent if thought else TextContent
        if not isinstance(self.current, wanted):
            events += self._close()
            self.buffer = StreamBuffer()
            if thought:
                self.current = DraftThinkingContent("")
                out.content.append(self.current)
                events.append(ThinkingStartEvent(len(out.content) - 1, out))
            else:
                self.current = DraftTextContent("")
                out.content.append(self.current)
                events.append(TextStartEvent(len(out.content) - 1, out))
        block = self.current
        piece = str(part.get("text") or "")
        signature = part.get("thoughtSignature")
        position = len(out.content) - 1
        if isinstance(block, DraftThinkingContent):
            if isinstance(signature, str) and signature:
                block.thinking_signature = signature
            if self.buffer.add(piece):
                block.thinking = self.buffer.text()
            events.append(ThinkingDeltaEvent(position, piece, out))
        elif isinstance(block, DraftTextContent):
            if isinstance(signature, str) and signature:
                block.text_signature = signature
            if self.buffer.add(piece):
                block.text = self.buffer.text()
            events.append(TextDeltaEvent(position, piece, out))
        return events

    def _function_call(self, part: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        out = self.output
        events = self._close()
        call = part.get("functionCall") or {}
        name = str(call.get("name") or "")
        given = call.get("id")
        taken = {b.id for b in out.tool_calls()}
        call_id = (
            str(given)
            if isinstance(given, str) and given and given not in taken
            else f"{name}_{int(time.time() * 1000)}_{next(_tool_counter)}"
        )
        args = call.get("args")
        block = DraftToolCall(call_id, name, dict(args) if isinstance(args, Mapping) else {})
        signature = part.get("thoughtSignature")
        if isinstance(signature, str) and signature:
            block.thought_signature = signature
        out.content.append(block)
        position = len(out.content) - 1
        events.append(ToolCallStartEvent(position, out))
        events.append(ToolCallDeltaEvent(position, json.dumps(block.arguments), out))
        events.append(ToolCallEndEvent(position, block, out))
        return events

    def apply(self, chunk: Any) -> list[AssistantMessageEvent]:
        out = self.output
        events: list[AssistantMessageEvent] = []
        if not isinstance(chunk, Mapping):
            return events
        if chunk.get("responseId") and not out.response_id:
            out.response_id = str(chunk["responseId"])
        version = chunk.get("modelVersion")
        if isinstance(version, str) and version and version != self.model.id and not out.response_model:
            out.response_model = version
        candidates = chunk.get("candidates") or []
        candidate = candidates[0] if candidates and isinstance(candidates[0], Mapping) else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            if not isinstance(part, Mapping):
                continue
            if "text" in part:
                events += self._text_part(part)
            if part.get("functionCall"):
                events += self._function_call(part)
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            self.finished = True
            out.raw_stop_reason = reason
            out.stop_reason = map_finish_reason(reason)
            if out.stop_reason == "error":
                out.error_message = f"Provider stopped with: {reason}"
            elif out.stop_reason == "stop" and out.tool_calls():
                out.stop_reason = "toolUse"
        usage = chunk.get("usageMetadata")
        if isinstance(usage, Mapping):
            out.usage = parse_usage(usage, self.model)
        return events

    def complete(self) -> bool:
        return False  # the HTTP stream ends the reply

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.finished:
            raise ConnectionResetError("stream ended without a finish reason")
        return self._close()

    def finalize_quietly(self) -> None:
        block = self.current
        if isinstance(block, DraftTextContent):
            block.text = self.buffer.text()
        elif isinstance(block, DraftThinkingContent):
            block.thinking = self.buffer.text()


# --------------------------------------------------------------------------------------------------
# The provider


class GeminiChunks:
    """The decoded ``GenerateContentResponse`` chunks of one streamed reply; an error object in the stream
    raises ``HttpStatusError`` with its code, as an error reply would."""

    def __init__(self, events: SseStream) -> None:
        self._events = events
        self.response = events.response

    async def __anext__(self) -> Any:
        event = await self._events.__anext__()
        chunk = json.loads(event.data)
        if isinstance(chunk, dict) and "error" in chunk:
            error = chunk["error"]
            code = error.get("code") if isinstance(error, dict) else None
            raise HttpStatusError(code if isinstance(code, int) else 500, chunk, self.response)
        return chunk

    async def close(self) -> None:
        await self._events.close()


def stream_url(base_url: str, model_id: str) -> str:
    return f"{(base_url or DEFAULT_BASE_URL).rstrip('/')}/models/{model_id}:streamGenerateContent?alt=sse"


async def post_stream(
    client: Any, url: str, headers: Mapping[str, str], params: dict[str, Any] | bytes
) -> GeminiChunks:
    """POST the body (caddie's own serialisation) and return the reply's chunks."""
    body = params if isinstance(params, bytes) else encode_body(params)
    return GeminiChunks(await post_sse(client, url, headers, body))


class GoogleGenerativeAIProvider:
    """Streams one assistant message from the Gemini API (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        output.api = API
        headers = {
            "User-Agent": "caddie",
            "content-type": "application/json",
            **(model.headers or {}),
            **(options.headers or {}),
        }
        url = stream_url(model.base_url, model.id)
        events = stream_via_sdk(
            model,
            options,
            output,
            GeminiAssembler(output, model),
            headers=headers,
            api_key=options.api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_params(model, context, options),
            clients=_CLIENTS,
            make_client=lambda _key, _hdrs, idle: make_http_client(idle),
            create=lambda client, params: post_stream(
                client, url, {**headers, "x-goog-api-key": options.api_key or ""}, params
            ),
            stream_flag=False,
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = GoogleGenerativeAIProvider()
