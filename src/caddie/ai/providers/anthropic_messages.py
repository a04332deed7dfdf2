"""The ``anthropic-messages`` API: Claude through the official ``anthropic`` SDK (or any compatible proxy).

Tools, extended thinking (signed thinking blocks are kept so the next request can replay them; redacted
thinking travels as an opaque payload), prompt caching (``cache_control`` on the system prompt, the last
tool and the newest message; none when ``cache_retention == "none"``), usage with cache reads and writes.

The pure halves — ``convert_messages``, ``build_params``, ``map_stop_reason`` — are importable for tests;
``PROVIDER.stream`` does the I/O.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import resolve_strict, tool_parameters
from caddie.ai.conversion_cache import cached_conversion
from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    replace,
)
from caddie.ai.model import Context, Model, ModelCompat, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer, final_arguments, parse_partial_json
from caddie.ai.providers.claude_code import (
    IDENTITY,
    copilot_headers,
    default_supports_tool_references,
    from_claude_code_name,
    is_copilot,
    is_oauth_token,
    oauth_headers,
    split_deferred_tools,
    to_claude_code_name,
)
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.request import (
    NO_KEY_PLACEHOLDER,
    encode_body,
    headers_contain,
    is_local_base_url,
    sanitize_text,
)
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_max_tokens, clamp_thinking_level, thinking_budget
from caddie.ai.providers.transport import ClientCache, redirect_hooks
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
from caddie.ai.transform import normalize_anthropic_tool_call_id, transform_messages

API = "anthropic-messages"
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
REDACTED_THINKING_TEXT = "[Reasoning redacted]"


def resolve_compat(model: Model) -> ModelCompat:
    compat = ModelCompat(
        supports_eager_tool_input_streaming=True,
        supports_long_cache_retention=True,
        supports_cache_control_on_tools=True,
        supports_temperature=True,
        allow_empty_signature=False,
        force_adaptive_thinking=False,
        supports_tool_references=default_supports_tool_references(model),
    )
    return compat.merged(model.compat)


def cache_marker(model: Model, options: StreamOptions, compat: ModelCompat) -> dict[str, Any] | None:
    """The ``cache_control`` value for this request, or None when caching is off."""
    if options.cache_retention == "none":
        return None
    marker: dict[str, Any] = {"type": "ephemeral"}
    if options.cache_retention == "long" and compat.supports_long_cache_retention:
        marker["ttl"] = "1h"
    return marker


# --------------------------------------------------------------------------------------------------
# Request: our messages -> Messages API


def _normalize_id(tool_call_id: str, _model: Model, _source: AssistantMessage) -> str:
    return normalize_anthropic_tool_call_id(tool_call_id)


def _image_block(block: ImageContent) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}


def _user_blocks(content: list[UserContent]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text.strip():
                blocks.append({"type": "text", "text": sanitize_text(b.text)})
        else:
            blocks.append(_image_block(b))
    return blocks


def _tool_result_content(content: list[UserContent]) -> str | list[dict[str, Any]]:
    if not any(isinstance(b, ImageContent) for b in content):
        return sanitize_text("\n".join(b.text for b in content if isinstance(b, TextContent)))
    blocks = [
        {"type": "text", "text": sanitize_text(b.text)} if isinstance(b, TextContent) else _image_block(b)
        for b in content
    ]
    if not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": "(see attached image)"})
    return blocks


def _assistant_blocks(
    content: list[AssistantContent], allow_empty_signature: bool, oauth: bool = False
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextContent):
            if b.text.strip():
                blocks.append({"type": "text", "text": sanitize_text(b.text)})
        elif isinstance(b, ThinkingContent):
            if b.redacted:
                blocks.append({"type": "redacted_thinking", "data": b.thinking_signature or ""})
                continue
            signed = bool(b.thinking_signature and b.thinking_signature.strip())
            if not b.thinking.strip() and not signed:
                continue
            if signed:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": sanitize_text(b.thinking),
                        "signature": b.thinking_signature,
                    }
                )
            elif allow_empty_signature:
                blocks.append({"type": "thinking", "thinking": sanitize_text(b.thinking), "signature": ""})
            else:
                # Unsigned thinking (an interrupted stream) cannot be replayed as thinking.
                blocks.append({"type": "text", "text": sanitize_text(b.thinking)})
        else:
            name = to_claude_code_name(b.name) if oauth else b.name
            blocks.append({"type": "tool_use", "id": b.id, "name": name, "input": b.arguments or {}})
    return blocks


_NOTHING: dict[str, Any] = {}
"""The cached conversion of a message that sends nothing (blank text); never sent, never changed."""


def _convert_message(
    msg: UserMessage | AssistantMessage, allow_empty_signature: bool, oauth: bool = False
) -> dict[str, Any]:
    """One user or assistant turn, or ``_NOTHING`` when it has nothing to send."""
    if isinstance(msg, UserMessage):
        if isinstance(msg.content, str):
            if msg.content.strip():
                return {"role": "user", "content": sanitize_text(msg.content)}
            return _NOTHING
        blocks = _user_blocks(msg.content)
        return {"role": "user", "content": blocks} if blocks else _NOTHING
    blocks = _assistant_blocks(msg.content, allow_empty_signature, oauth)
    return {"role": "assistant", "content": blocks} if blocks else _NOTHING


def _convert_result(result: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": _tool_result_content(result.content),
        "is_error": result.is_error,
    }


def convert_messages(
    model: Model,
    context: Context,
    cache_control: dict[str, Any] | None = None,
    compat: ModelCompat | None = None,
    oauth: bool = False,
    deferred: frozenset[str] = frozenset(),
) -> list[dict[str, Any]]:
    """The ``messages`` array after the standard repairs; consecutive tool results share one user turn.
    ``oauth``: tool calls under Claude Code's names; ``deferred``: the (normalised) names of tools loaded
    by ``tool_reference`` in the result that announced them.

    With ``context.conversion_cache``, each message's conversion is kept and reused while the same message
    object comes back (the dicts are shared with earlier requests, so nothing here changes them)."""
    compat = compat if compat is not None else resolve_compat(model)
    allow_empty = bool(compat.allow_empty_signature)
    messages = transform_messages(context.messages, model, _normalize_id, context.conversion_cache)
    if deferred:
        return _finish(_convert_with_references(messages, allow_empty, oauth, deferred), cache_control)
    cache = context.conversion_cache
    key = ("anthropic-messages", model.api, model.provider, model.id, allow_empty, oauth)
    resumed = cache.resume(key, messages) if cache is not None else None
    scope = cache.scope(key, keep=resumed is not None) if cache is not None else None
    out: list[dict[str, Any]]
    if resumed is not None:
        start, (done, after_result) = resumed
        out = list(done)
    else:
        start, out, after_result = 0, [], False
    group: list[dict[str, Any]] | None = None
    """The content of the open user turn of tool results, once this request owns it."""
    for msg in messages[start:] if start else messages:
        if isinstance(msg, ToolResultMessage):
            block = cached_conversion(scope, msg, _convert_result)
            if not after_result:
                group = [block]
                out.append({"role": "user", "content": group})
            elif group is not None:
                group.append(block)
            else:  # a turn the last request built (shared with it): extended as a copy
                group = [*out[-1]["content"], block]
                out[-1] = {"role": "user", "content": group}
            after_result = True
            continue
        after_result, group = False, None
        entry = cached_conversion(scope, msg, _convert_message, allow_empty, oauth)
        if entry is not _NOTHING:
            out.append(entry)
    if cache is not None:
        cache.checkpoint(key, messages, (list(out), after_result))
    return _finish(out, cache_control)


def _convert_with_references(
    messages: list[Any], allow_empty: bool, oauth: bool, deferred: frozenset[str]
) -> list[dict[str, Any]]:
    """As the cached conversion, for a conversation whose tool results load deferred tools: the first
    result that announces a deferred tool carries ``tool_reference`` blocks instead of its content, which
    follows every ``tool_result`` of that turn as plain blocks (Anthropic rejects them mixed)."""
    normalize = to_claude_code_name if oauth else (lambda name: name)
    loaded: set[str] = set()
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    siblings: list[dict[str, Any]] = []

    def close_turn() -> None:
        if results:
            out.append({"role": "user", "content": [*results, *siblings]})
            results.clear()
            siblings.clear()

    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            references = []
            for name in msg.added_tool_names or ():
                normalized = normalize(name)
                if normalized in deferred and normalized not in loaded:
                    loaded.add(normalized)
                    references.append({"type": "tool_reference", "tool_name": normalized})
            block = _convert_result(msg)
            if references:
                content = block["content"]
                siblings.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
                block = {**block, "content": references}
            results.append(block)
            continue
        close_turn()
        entry = _convert_message(msg, allow_empty, oauth)
        if entry is not _NOTHING:
            out.append(entry)
    close_turn()
    return out


def _finish(out: list[dict[str, Any]], cache_control: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The cache marker on the newest user turn (on a copy: cached turns are shared)."""
    if cache_control and out and out[-1]["role"] == "user":
        last = out[-1] = dict(out[-1])  # a copy: the cached turn and its blocks are shared
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"], "cache_control": cache_control}]
        elif last["content"]:
            content = last["content"] = list(last["content"])
            content[-1] = {**content[-1], "cache_control": cache_control}
    return out


def convert_tools(
    tools: list[Tool],
    compat: ModelCompat,
    cache_control: dict[str, Any] | None,
    oauth: bool = False,
    defer_loading: bool = False,
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, tool in enumerate(tools):
        strict = resolve_strict(tool, compat.supports_strict_tools is True)
        schema = tool_parameters(tool, strict) or {}
        entry: dict[str, Any] = {
            "name": to_claude_code_name(tool.name) if oauth else tool.name,
            "description": tool.description,
        }
        if compat.supports_eager_tool_input_streaming:
            entry["eager_input_streaming"] = True
        legacy = {
            "type": "object",
            "properties": schema.get("properties", {}),
            "required": schema.get("required", []),
        }
        if strict is True:  # the whole strict schema (additionalProperties: false …), as Pi sends it
            entry["strict"] = True
            entry["input_schema"] = {**schema, **legacy}
        else:
            entry["input_schema"] = legacy
        if defer_loading:
            entry["defer_loading"] = True
        if cache_control and compat.supports_cache_control_on_tools and n == len(tools) - 1:
            entry["cache_control"] = cache_control
        out.append(entry)
    return out


_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def build_params(
    model: Model, context: Context, options: StreamOptions, oauth: bool | None = None
) -> dict[str, Any]:
    """The request body for one streamed Messages call (thinking budget, caching, tools included).
    ``oauth`` (default: the key is a Claude Pro/Max token): Claude Code's identity and tool names."""
    compat = resolve_compat(model)
    marker = cache_marker(model, options, compat)
    if oauth is None:
        oauth = is_oauth_token(options.api_key) and not is_copilot(model)
    normalize = to_claude_code_name if oauth else None
    immediate: list[Tool] = list(context.tools or [])
    deferred_tools: list[Tool] = []
    if immediate and compat.supports_tool_references:
        immediate, later = split_deferred_tools(immediate, context.messages, normalize)
        deferred_tools = list(later.values())
        if not immediate:
            immediate, deferred_tools = deferred_tools, []
    deferred = frozenset((normalize or str)(t.name) for t in deferred_tools)
    params: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context, marker, compat, oauth, deferred),
        "stream": True,
    }
    level = clamp_thinking_level(model, options.reasoning) if model.reasoning else "off"
    thinking_on = level != "off"
    max_tokens = options.max_tokens or model.max_tokens
    if thinking_on and not compat.force_adaptive_thinking:
        budget = thinking_budget(level, options.thinking_budgets)
        max_tokens = (
            model.max_tokens
            if options.max_tokens is None
            else min(options.max_tokens + budget, model.max_tokens)
        )
        max_tokens = clamp_max_tokens(model, context, max_tokens)
        params["thinking"] = {
            "type": "enabled",
            "budget_tokens": max(1024, min(budget, max_tokens - 1024)),
            "display": "summarized",
        }
    else:
        max_tokens = clamp_max_tokens(model, context, max_tokens)
        if thinking_on:
            mapped = (model.thinking_level_map or {}).get(level)
            params["thinking"] = {"type": "adaptive", "display": "summarized"}
            params["output_config"] = {
                "effort": mapped if isinstance(mapped, str) else _EFFORT.get(level, "high")
            }
        elif model.reasoning and (model.thinking_level_map or {}).get("off", "disabled") is not None:
            params["thinking"] = {"type": "disabled"}
    params["max_tokens"] = max_tokens
    texts = [IDENTITY] if oauth else []
    if context.system_prompt:
        texts.append(sanitize_text(context.system_prompt))
    if texts:
        params["system"] = [
            {"type": "text", "text": text, **({"cache_control": marker} if marker else {})} for text in texts
        ]
    if options.temperature is not None and not thinking_on and compat.supports_temperature:
        params["temperature"] = options.temperature
    if immediate or deferred_tools:
        params["tools"] = [
            *convert_tools(immediate, compat, marker, oauth),
            *convert_tools(deferred_tools, compat, None, oauth, defer_loading=True),
        ]
    return params


def beta_headers(model: Model, context: Context) -> list[str]:
    compat = resolve_compat(model)
    betas: list[str] = []
    if context.tools and not compat.supports_eager_tool_input_streaming:
        betas.append(FINE_GRAINED_TOOL_STREAMING_BETA)
    if model.reasoning and not compat.force_adaptive_thinking:
        betas.append(INTERLEAVED_THINKING_BETA)
    return betas


# --------------------------------------------------------------------------------------------------
# Response: Messages stream events -> our message


def map_stop_reason(reason: str, details: Any = None) -> tuple[StopReason, str | None]:
    if reason in ("end_turn", "pause_turn", "stop_sequence"):
        return "stop", None
    if reason in ("max_tokens", "model_context_window_exceeded"):
        return "length", None
    if reason == "tool_use":
        return "toolUse", None
    if reason == "refusal":
        explanation = _get(details, "explanation")
        return "error", str(explanation) if explanation else "The model refused to complete the request."
    return "error", f"The provider stopped the response: stop_reason {reason}"


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, dict):
            value = extra.get(name)
    return value


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class _EventAssembler:
    """Folds Messages stream events into ``output``; text, thinking and ``input_json`` accumulate in
    ``StreamBuffer``s (linear work however long the reply) and blocks are exact when they stop."""

    def __init__(self, output: DraftAssistantMessage, model: Model, tools: list[Tool] | None = None) -> None:
        self.output = output
        self.model = model
        self.tools = tools
        """Set for Claude Code's request shape: tool names come back under this session's names."""
        self.by_index: dict[int, AssistantContent] = {}  # stream index -> open block
        self.positions: dict[int, int] = {}  # stream index -> index in output.content
        self.buffers: dict[int, StreamBuffer] = {}  # stream index -> streamed text / argument JSON
        self.saw_start = False
        self.saw_stop = False

    def _open(self, index: int, block: AssistantContent, initial: str = "") -> int:
        self.output.content.append(block)
        position = len(self.output.content) - 1
        self.by_index[index] = block
        self.positions[index] = position
        self.buffers[index] = StreamBuffer(initial)
        return position

    def _settle(self, index: int, block: AssistantContent) -> None:
        """Give ``block`` its exact, complete content from its buffer."""
        buffer = self.buffers.get(index)
        if buffer is None:
            return
        if isinstance(block, DraftTextContent):
            block.text = buffer.text()
        elif isinstance(block, DraftThinkingContent):
            if not block.redacted:
                block.thinking = buffer.text()
        elif isinstance(block, DraftToolCall):
            raw = buffer.text()
            if raw.strip():  # no input_json at all: keep the input content_block_start gave
                block.arguments, block.arguments_error = final_arguments(raw)

    def apply(self, event: Any) -> list[AssistantMessageEvent]:
        out = self.output
        kind = _get(event, "type")
        events: list[AssistantMessageEvent] = []
        if kind == "message_start":
            self.saw_start = True
            message = _get(event, "message")
            if _get(message, "id"):
                out.response_id = str(_get(message, "id"))
            response_model = _get(message, "model")
            if isinstance(response_model, str) and response_model and response_model != self.model.id:
                out.response_model = response_model
            self._usage(_get(message, "usage"), initial=True)
        elif kind == "content_block_start":
            index = _int(_get(event, "index"))
            block_data = _get(event, "content_block")
            btype = _get(block_data, "type")
            if btype == "text":
                initial = str(_get(block_data, "text") or "")
                events.append(TextStartEvent(self._open(index, DraftTextContent(initial), initial), out))
            elif btype == "thinking":
                initial = str(_get(block_data, "thinking") or "")
                thinking = DraftThinkingContent(
                    initial, thinking_signature=str(_get(block_data, "signature") or "")
                )
                events.append(ThinkingStartEvent(self._open(index, thinking, initial), out))
            elif btype == "redacted_thinking":
                redacted = DraftThinkingContent(
                    REDACTED_THINKING_TEXT,
                    thinking_signature=str(_get(block_data, "data") or ""),
                    redacted=True,
                )
                events.append(ThinkingStartEvent(self._open(index, redacted), out))
            elif btype == "tool_use":
                initial_input = _get(block_data, "input")
                name = str(_get(block_data, "name") or "")
                call = DraftToolCall(
                    id=str(_get(block_data, "id") or ""),
                    name=from_claude_code_name(name, self.tools) if self.tools is not None else name,
                    arguments=dict(initial_input) if isinstance(initial_input, Mapping) else {},
                )
                events.append(ToolCallStartEvent(self._open(index, call), out))
        elif kind == "content_block_delta":
            index = _int(_get(event, "index"))
            block = self.by_index.get(index)
            if block is None:
                return events
            buffer = self.buffers[index]
            position = self.positions[index]
            delta = _get(event, "delta")
            dtype = _get(delta, "type")
            if dtype == "text_delta" and isinstance(block, DraftTextContent):
                piece = str(_get(delta, "text") or "")
                if buffer.add(piece):
                    block.text = buffer.text()
                events.append(TextDeltaEvent(position, piece, out))
            elif dtype == "thinking_delta" and isinstance(block, DraftThinkingContent):
                piece = str(_get(delta, "thinking") or "")
                if buffer.add(piece):
                    block.thinking = buffer.text()
                events.append(ThinkingDeltaEvent(position, piece, out))
            elif dtype == "signature_delta" and isinstance(block, DraftThinkingContent):
                block.thinking_signature = (block.thinking_signature or "") + str(
                    _get(delta, "signature") or ""
                )
            elif dtype == "input_json_delta" and isinstance(block, DraftToolCall):
                piece = str(_get(delta, "partial_json") or "")
                if buffer.add(piece):  # a live preview, re-parsed only as the buffer allows
                    block.arguments = parse_partial_json(buffer.text())
                events.append(ToolCallDeltaEvent(position, piece, out))
        elif kind == "content_block_stop":
            index = _int(_get(event, "index"))
            block = self.by_index.pop(index, None)
            if block is not None:
                self._settle(index, block)
                position = self.positions[index]
                if isinstance(block, DraftTextContent):
                    events.append(TextEndEvent(position, block.text, out))
                elif isinstance(block, DraftThinkingContent):
                    events.append(ThinkingEndEvent(position, block.thinking, out))
                elif isinstance(block, ToolCall):
                    events.append(ToolCallEndEvent(position, block, out))
                self.buffers.pop(index, None)
        elif kind == "message_delta":
            delta = _get(event, "delta")
            reason = _get(delta, "stop_reason")
            if reason:
                out.raw_stop_reason = str(reason)
                out.stop_reason, message = map_stop_reason(str(reason), _get(delta, "stop_details"))
                if message:
                    out.error_message = message
            self._usage(_get(event, "usage"), initial=False)
        elif kind == "message_stop":
            self.saw_stop = True
        return events

    def _usage(self, raw: Any, *, initial: bool) -> None:
        if raw is None:
            return
        changes: dict[str, Any] = {}
        fields = (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_write", "cache_creation_input_tokens"),
        )
        for attr, key in fields:
            value = _get(raw, key)
            if value is not None or initial:
                changes[attr] = _int(value)
        creation = _get(raw, "cache_creation")
        one_hour = _get(creation, "ephemeral_1h_input_tokens")
        if one_hour is not None:
            changes["cache_write_1h"] = _int(one_hour) or None
        thinking_tokens = _get(_get(raw, "output_tokens_details"), "thinking_tokens")
        if thinking_tokens is not None:
            changes["reasoning"] = _int(thinking_tokens)
        self.output.usage = finish_usage(self.model, replace(self.output.usage, **changes))

    def complete(self) -> bool:
        return self.saw_stop

    def finish(self) -> list[AssistantMessageEvent]:
        if self.saw_start and not self.saw_stop:
            raise ConnectionResetError("stream ended before message_stop")
        if self.output.stop_reason == "pending":
            raise ConnectionResetError("stream ended without a stop reason")
        return []

    def finalize_quietly(self) -> None:
        """On failure: every open block gets all that arrived (tool calls the best arguments seen)."""
        for index, block in self.by_index.items():
            self._settle(index, block)


# --------------------------------------------------------------------------------------------------
# The provider


async def post_stream(client: Any, path: str, params: dict[str, Any] | bytes) -> Any:
    """POST a body through the ``anthropic`` client's public ``post`` (auth, headers, error classes; Bedrock
    and Vertex clients sign or route it) and return its SSE stream of plain dicts: caddie's own
    serialisation, no SDK re-walk of the messages (see ``encode_body``)."""
    import anthropic

    body = params if isinstance(params, bytes) else encode_body(params)
    return await client.post(
        path, cast_to=object, content=body, stream=True, stream_cls=anthropic.AsyncStream[object]
    )


class AnthropicMessagesProvider:
    """Streams one assistant message from an Anthropic Messages endpoint (see the module docstring).

    Three ways to authenticate, as Pi's: an API key (``x-api-key``); a Claude Pro/Max token (``sk-ant-oat…``,
    sent as ``Authorization: Bearer`` in Claude Code's request shape: ``claude_code``); GitHub Copilot's
    token (Bearer, with Copilot's per-request headers)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        from anthropic import AsyncAnthropic, DefaultAsyncHttpxClient

        output = new_output(model)
        copilot = is_copilot(model)
        oauth = is_oauth_token(options.api_key) and not copilot
        betas = beta_headers(model, context)
        headers: dict[str, str]
        if oauth:
            headers = oauth_headers(betas)
        else:
            headers = {"User-Agent": "caddie", "accept": "application/json"}
            if betas:
                headers["anthropic-beta"] = ",".join(betas)
        headers.update(model.headers or {})
        if copilot:
            headers.update(copilot_headers(context.messages))
        headers.update(options.headers or {})
        api_key = options.api_key
        if not api_key and (
            headers_contain(headers, "authorization", "x-api-key") or is_local_base_url(model.base_url)
        ):
            api_key = NO_KEY_PLACEHOLDER
        bearer = oauth or copilot

        def make_client(key: str, hdrs: dict[str, str], idle: Any) -> Any:
            return AsyncAnthropic(
                api_key=None if bearer else key,
                auth_token=key if bearer else None,
                base_url=model.base_url,
                max_retries=options.max_retries,
                default_headers=hdrs,
                timeout=idle,
                http_client=DefaultAsyncHttpxClient(timeout=idle, event_hooks=redirect_hooks()),
            )

        events = stream_via_sdk(
            model,
            options,
            output,
            _EventAssembler(output, model, list(context.tools or []) if oauth else None),
            headers=headers,
            api_key=api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_params(model, context, options, oauth),
            clients=_CLIENTS,
            make_client=make_client,
            create=lambda client, params: post_stream(client, "/v1/messages", params),
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = AnthropicMessagesProvider()
