"""The ``openai-responses`` API: OpenAI's Responses endpoint through the official ``openai`` SDK.

The default API for ``openai/*`` models, as in Pi. Requests are stateless (``store: false``): reasoning
models return their reasoning as encrypted items (``include: ["reasoning.encrypted_content"]``) that go
back to the server on the next request, so a model keeps its chain of thought across tool calls.

Stored the way Pi stores them, so a session moves between Pi and caddie without losing reasoning:

- a reasoning item becomes a ``thinking`` block whose text is the reasoning summary and whose
  ``thinkingSignature`` is the whole item as compact JSON (replayed verbatim);
- an output message becomes a ``text`` block with ``textSignature`` ``{"v":1,"id":"msg_…"}`` (plus
  ``phase`` when the server gave one), so its item id is replayed;
- a function call becomes a ``toolCall`` whose id is ``<call_id>|<item id>``.

``prompt_cache_key`` (and the ``session_id`` affinity headers) come from the session id; ``service_tier``
from ``StreamOptions.service_tier`` (its price multiplier applies to the cost); usage counts cached input
and reasoning tokens. The body is serialised once by caddie and posted through the SDK's ``post`` (see
``request.encode_body``). ``azure_openai_responses`` reuses everything here with Azure's client.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any

import msgspec

from caddie.ai.catalogue import missing_key_text
from caddie.ai.constrained_sampling import (
    GrammarInput,
    grammar_input_properties,
    grammar_tool_input,
    resolve_grammar,
    resolve_strict,
    tool_parameters,
)
from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    Cost,
    DraftAssistantMessage,
    DraftTextContent,
    DraftThinkingContent,
    DraftToolCall,
    ImageContent,
    LlmMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    UserContent,
    UserMessage,
    replace,
)
from caddie.ai.model import Context, Model, ModelCompat, StreamOptions, Tool
from caddie.ai.providers.blocks import StreamBuffer, final_arguments, parse_partial_json
from caddie.ai.providers.claude_code import copilot_headers, is_copilot
from caddie.ai.providers.cost import finish_usage
from caddie.ai.providers.openai_completions import post_stream
from caddie.ai.providers.request import (
    NO_KEY_PLACEHOLDER,
    compact_json,
    headers_contain,
    is_local_base_url,
    sanitize_text,
)
from caddie.ai.providers.streaming import new_output, stream_via_sdk
from caddie.ai.providers.thinking import clamp_max_tokens, clamp_thinking_level
from caddie.ai.providers.transport import ClientCache, openai_client_factory
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

API = "openai-responses"
MIN_OUTPUT_TOKENS = 16
"""The Responses API rejects ``max_output_tokens`` below 16."""
TOOL_CALL_PROVIDERS = frozenset({"openai", "openai-codex", "opencode"})
"""Providers whose ``call|item`` tool-call ids are kept (item ids re-derived for foreign calls)."""
PROMPT_CACHE_KEY_MAX = 64

# --------------------------------------------------------------------------------------------------
# Compatibility flags


def resolve_compat(model: Model, *, strict_default: bool = False) -> ModelCompat:
    """``model.compat`` with Pi's defaults filled in for the flags the Responses API reads."""
    raw = model.compat or ModelCompat()
    is_openrouter = model.provider == "openrouter" or "openrouter.ai" in model.base_url
    return msgspec.structs.replace(
        raw,
        supports_developer_role=_given(raw.supports_developer_role, True),
        session_affinity_format=raw.session_affinity_format or ("openrouter" if is_openrouter else "openai"),
        supports_long_cache_retention=_given(raw.supports_long_cache_retention, True),
        supports_strict_mode=_given(raw.supports_strict_mode, strict_default),
    )


def _given(value: bool | None, default: bool) -> bool:
    return default if value is None else value


# --------------------------------------------------------------------------------------------------
# Ids and signatures

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def short_hash(text: str) -> str:
    """A short, stable digest for ids the API would reject as too long or foreign."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _id_part(part: str) -> str:
    return _UNSAFE.sub("_", part)[:64].rstrip("_")


def tool_call_id_normalizer(model: Model, providers: frozenset[str]) -> Any:
    """Pi's mapping of another model's tool-call ids to ones the Responses API accepts (one function per
    provider, API and provider set, so a conversion cache can key on it)."""
    return _normalizer(model.provider, model.api, providers)


@functools.lru_cache(maxsize=64)
def _normalizer(provider: str, api: str, providers: frozenset[str]) -> Any:
    def normalize(tool_call_id: str, _target: Model, source: AssistantMessage) -> str:
        if provider not in providers or "|" not in tool_call_id:
            return _id_part(tool_call_id)
        call_id, _, item_id = tool_call_id.partition("|")
        foreign = source.provider != provider or source.api != api
        item = f"fc_{short_hash(item_id)}"[:64] if foreign else _id_part(item_id)
        if not item.startswith("fc_"):
            item = _id_part(f"fc_{item}")
        return f"{_id_part(call_id)}|{item}"

    return normalize


def encode_text_signature(item_id: str, phase: str | None) -> str:
    """Pi's ``textSignature`` v1: the output message's id (and phase)."""
    payload: dict[str, Any] = {"v": 1, "id": item_id}
    if phase:
        payload["phase"] = phase
    return compact_json(payload)


_TEXT_SIGNATURES: dict[str, tuple[str | None, str | None]] = {}
"""Parsed ``textSignature``s: every turn replays the whole history, so each is parsed once."""


def parse_text_signature(signature: str | None) -> tuple[str | None, str | None]:
    """``(message id, phase)`` from a ``textSignature`` (v1 JSON, or a bare id from older sessions)."""
    if not signature:
        return None, None
    known = _TEXT_SIGNATURES.get(signature)
    if known is not None:
        return known
    result: tuple[str | None, str | None] = (signature, None)
    if signature.startswith("{"):
        try:
            parsed = msgspec.json.decode(signature)
        except msgspec.DecodeError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("v") == 1 and isinstance(parsed.get("id"), str):
            phase = parsed.get("phase")
            result = (parsed["id"], phase if phase in ("commentary", "final_answer") else None)
    if len(_TEXT_SIGNATURES) >= 100_000:
        _TEXT_SIGNATURES.clear()
    _TEXT_SIGNATURES[signature] = result
    return result


# --------------------------------------------------------------------------------------------------
# Request: our messages -> Responses input items


def _input_content(content: list[UserContent]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            out.append({"type": "input_text", "text": sanitize_text(block.text)})
        else:
            out.append(
                {
                    "type": "input_image",
                    "detail": "auto",
                    "image_url": f"data:{block.mime_type};base64,{block.data}",
                }
            )
    return out


def _tool_output(model: Model, content: list[UserContent]) -> str | list[dict[str, Any]]:
    text = "\n".join(b.text for b in content if isinstance(b, TextContent))
    images = [b for b in content if isinstance(b, ImageContent)]
    if not images or not model.supports_images:
        return sanitize_text(text if text else "(see attached image)" if images else "(no tool output)")
    out: list[dict[str, Any]] = []
    if text:
        out.append({"type": "input_text", "text": sanitize_text(text)})
    out += _input_content(list(images))
    return out


def _assistant_items(
    msg: AssistantMessage, model: Model, msg_index: int, grammar: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    same_api = msg.provider == model.provider and msg.api == model.api
    different_model = same_api and msg.model != model.id
    items: list[dict[str, Any]] = []
    text_index = 0
    for block in msg.content:
        if isinstance(block, ThinkingContent):
            if block.thinking_signature:
                try:
                    item = msgspec.json.decode(block.thinking_signature)
                except msgspec.DecodeError:
                    continue  # not a Responses reasoning item: nothing the server could use
                if isinstance(item, dict):
                    items.append(item)
        elif isinstance(block, TextContent):
            msg_id, phase = parse_text_signature(block.text_signature)
            if not msg_id:
                msg_id = f"msg_pi_{msg_index}" if text_index == 0 else f"msg_pi_{msg_index}_{text_index}"
            elif len(msg_id) > 64:
                msg_id = f"msg_{short_hash(msg_id)}"
            text_index += 1
            message: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": sanitize_text(block.text), "annotations": []}],
                "status": "completed",
                "id": msg_id,
            }
            if phase:
                message["phase"] = phase
            items.append(message)
        elif grammar and block.name in grammar:  # a grammar tool's call goes back as a custom tool call
            call_id, _, item_id = block.id.partition("|")
            custom: dict[str, Any] = {"type": "custom_tool_call"}
            if item_id and not (different_model and item_id.startswith("fc_")):
                custom["id"] = item_id
            custom["call_id"] = call_id
            custom["name"] = block.name
            custom["input"] = sanitize_text(
                grammar_tool_input(block.name, block.arguments, grammar[block.name])
            )
            items.append(custom)
        else:
            call_id, _, item_id = block.id.partition("|")
            call: dict[str, Any] = {"type": "function_call"}
            # An item id from another model of this provider would fail OpenAI's check that every
            # fc_ item was paired with its reasoning item; ids that are not fc_ ids are never valid.
            if item_id and item_id.startswith("fc_") and not different_model:
                call["id"] = item_id
            call["call_id"] = call_id
            call["name"] = block.name
            call["arguments"] = compact_json(block.arguments)
            items.append(call)
    return items


def convert_messages(
    model: Model,
    context: Context,
    compat: ModelCompat | None = None,
    providers: frozenset[str] = TOOL_CALL_PROVIDERS,
) -> list[dict[str, Any]]:
    """The ``input`` array for ``context`` after the standard repairs (see ``caddie.ai.transform``)."""
    compat = compat if compat is not None else resolve_compat(model)
    grammar = grammar_input_properties(context.tools, compat.supports_open_ai_grammar_tools is True)
    messages = transform_messages(
        context.messages, model, tool_call_id_normalizer(model, providers), context.conversion_cache
    )
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role is not False else "system"
        out.append({"role": role, "content": sanitize_text(context.system_prompt)})
    cache = context.conversion_cache
    key = (
        "openai-responses",
        model.api,
        model.provider,
        model.id,
        model.supports_images,
        providers,
        tuple(sorted(grammar.items())),
    )
    resumed = cache.resume(key, messages) if cache is not None else None
    scope = cache.scope(key, keep=resumed is not None) if cache is not None else None
    items_out: list[dict[str, Any]]
    if resumed is not None:  # the last request's items for the same first messages (a checkpoint)
        start, (done, msg_index) = resumed
        items_out = list(done)
    else:
        start, items_out, msg_index = 0, [], 0
    for msg in messages[start:] if start else messages:
        hit = scope.get(msg) if scope is not None else None
        if hit is not None and hit[0] == msg_index:
            items: list[dict[str, Any]] = hit[1]
        else:
            items = _message_items(msg, model, msg_index, grammar)
            if scope is not None:
                scope.put(msg, (msg_index, items))
        if not items:
            continue
        items_out += items
        msg_index += 1
    if cache is not None:
        cache.checkpoint(key, messages, (list(items_out), msg_index))
    out += items_out
    return out


def _message_items(
    msg: LlmMessage, model: Model, msg_index: int, grammar: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """The input items of one message (none for one with nothing to send); ``msg_index`` counts the
    messages before it that sent something."""
    if isinstance(msg, UserMessage):
        if isinstance(msg.content, str):
            return [{"role": "user", "content": [{"type": "input_text", "text": sanitize_text(msg.content)}]}]
        parts = _input_content(msg.content)
        return [{"role": "user", "content": parts}] if parts else []
    if isinstance(msg, AssistantMessage):
        return _assistant_items(msg, model, msg_index, grammar)
    return [
        {
            "type": "custom_tool_call_output"
            if grammar and msg.tool_name in grammar
            else "function_call_output",
            "call_id": msg.tool_call_id.partition("|")[0],
            "output": _tool_output(model, msg.content),
        }
    ]


def convert_tools(
    tools: list[Tool], compat: ModelCompat, default_strict: bool | None = False
) -> list[dict[str, Any]]:
    """Function tools with ``strict`` where the server takes the field (``default_strict`` unless the tool's
    constrained sampling makes it strict); a tool with a grammar, where the server takes them, as a custom
    tool."""
    supports_strict = compat.supports_strict_mode is True
    out: list[dict[str, Any]] = []
    for tool in tools:
        grammar = resolve_grammar(tool, compat.supports_open_ai_grammar_tools is True)
        if grammar is not None:
            out.append(
                {
                    "type": "custom",
                    "name": tool.name,
                    "description": tool.description,
                    "format": {"type": "grammar", "syntax": grammar.syntax, "definition": grammar.definition},
                }
            )
            continue
        constrained = resolve_strict(tool, supports_strict)
        strict = constrained if constrained is not None else default_strict
        spec: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool_parameters(tool, strict is True),
        }
        if supports_strict:
            spec["strict"] = strict
        out.append(spec)
    return out


def _reasoning(params: dict[str, Any], model: Model, options: StreamOptions) -> None:
    if not model.reasoning:
        return
    level = clamp_thinking_level(model, options.reasoning) if options.reasoning else "off"
    mapping = model.thinking_level_map or {}
    if level != "off":
        mapped = mapping.get(level)
        params["reasoning"] = {"effort": mapped if isinstance(mapped, str) else level, "summary": "auto"}
        params["include"] = ["reasoning.encrypted_content"]
    elif model.provider != "github-copilot" and not ("off" in mapping and mapping["off"] is None):
        params["reasoning"] = {"effort": mapping.get("off") or "none"}
    if model.provider == "xai":
        params["include"] = ["reasoning.encrypted_content"]


def build_params(
    model: Model,
    context: Context,
    options: StreamOptions,
    compat: ModelCompat | None = None,
    *,
    model_name: str | None = None,
    providers: frozenset[str] = TOOL_CALL_PROVIDERS,
    always_cache_key: bool = False,
) -> dict[str, Any]:
    """The request body for one streamed Responses call (in Pi's field order)."""
    compat = compat if compat is not None else resolve_compat(model)
    params: dict[str, Any] = {
        "model": model_name or model.id,
        "input": convert_messages(model, context, compat, providers),
        "stream": True,
    }
    if options.session_id and (always_cache_key or options.cache_retention != "none"):
        params["prompt_cache_key"] = options.session_id[:PROMPT_CACHE_KEY_MAX]
    if options.cache_retention == "long" and compat.supports_long_cache_retention:
        params["prompt_cache_retention"] = "24h"
    params["store"] = False
    max_tokens = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    params["max_output_tokens"] = max(max_tokens, MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        params["temperature"] = options.temperature
    if options.service_tier is not None:
        params["service_tier"] = options.service_tier
    if context.tools:
        params["tools"] = convert_tools(context.tools, compat)
    _reasoning(params, model, options)
    if model.sampling_params:  # last, so its keys win (Pi's samplingParams)
        params.update(model.sampling_params)
    return params


# --------------------------------------------------------------------------------------------------
# Response: Responses stream events -> our message


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None) if obj is not None else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def service_tier_multiplier(model: Model, tier: str | None) -> float:
    """What a service tier does to the price (flex half, priority double; 2.5× for gpt-5.5)."""
    if tier == "flex":
        return 0.5
    if tier == "priority":
        return 2.5 if model.id == "gpt-5.5" else 2.0
    return 1.0


def parse_usage(raw: Any, model: Model, tier: str | None = None) -> Usage:
    """Usage from a Responses ``usage`` object; ``input`` excludes cached and cache-written tokens."""
    details = _get(raw, "input_tokens_details")
    cached = _int(_get(details, "cached_tokens"))
    written = _int(_get(details, "cache_write_tokens"))
    usage = Usage(
        input=max(0, _int(_get(raw, "input_tokens")) - cached - written),
        output=_int(_get(raw, "output_tokens")),
        cache_read=cached,
        cache_write=written,
        reasoning=_int(_get(_get(raw, "output_tokens_details"), "reasoning_tokens")),
    )
    usage = finish_usage(model, usage)
    factor = service_tier_multiplier(model, tier)
    if factor != 1.0:
        cost = usage.cost
        scaled = Cost(
            cost.input * factor, cost.output * factor, cost.cache_read * factor, cost.cache_write * factor
        )
        total = scaled.input + scaled.output + scaled.cache_read + scaled.cache_write
        usage = replace(usage, cost=replace(scaled, total=total))
    return usage


def map_status(status: str | None, reason: str | None) -> tuple[StopReason, str | None]:
    if status == "incomplete":
        if reason == "max_output_tokens":
            return "length", None
        return (
            "error",
            f"Response incomplete: {reason}" if reason else "Response incomplete without a provider reason",
        )
    if status in ("failed", "cancelled"):
        return "error", None
    return "stop", None


class _Slot:
    __slots__ = ("block", "buffer", "custom", "position")

    def __init__(self, block: AssistantContent, position: int, initial: str = "") -> None:
        self.block = block
        self.position = position
        self.buffer = StreamBuffer(initial)
        self.custom: GrammarInput | None = None
        """A custom tool call's input (a grammar tool's), kept as the one string argument it fills."""


class ResponsesAssembler:
    """Folds Responses stream events (plain dicts) into ``output``.

    Each output item (by ``output_index``) is one block; its text, summary or argument JSON accumulates
    in a ``StreamBuffer`` (linear work however long the reply) and the block is exact when the item is
    done. ``response.completed``/``incomplete`` finish the message; ``error``/``response.failed`` end it
    with the server's text.
    """

    def __init__(
        self,
        output: DraftAssistantMessage,
        model: Model,
        service_tier: str | None = None,
        grammar: dict[str, str] | None = None,
    ) -> None:
        self.output = output
        self.model = model
        self.service_tier = service_tier
        self.grammar = grammar or {}
        """Grammar tools by name → the property their custom tool input fills (Pi: ``input`` for others)."""
        self.slots: dict[int, _Slot] = {}
        self.reasoning_by_id: dict[str, DraftThinkingContent] = {}
        self.terminal = False

    def _open(self, index: int, item: Any) -> tuple[_Slot | None, list[AssistantMessageEvent]]:
        out = self.output
        kind = _get(item, "type")
        block: AssistantContent
        initial = ""
        if kind == "reasoning":
            block = DraftThinkingContent("")
        elif kind == "message":
            if _get(item, "phase") == "final_answer":
                out.stop_reason = "stop"
            block = DraftTextContent("")
        elif kind == "function_call":
            initial = str(_get(item, "arguments") or "")
            block = DraftToolCall(
                id=f"{_get(item, 'call_id')}|{_get(item, 'id')}",
                name=str(_get(item, "name") or ""),
                arguments={},
            )
        elif kind == "custom_tool_call":
            name = str(_get(item, "name") or "")
            custom = GrammarInput(self.grammar.get(name, "input"))
            block = DraftToolCall(
                id=f"{_get(item, 'call_id')}|{_get(item, 'id')}",
                name=name,
                arguments={custom.prop: str(_get(item, "input") or "")},
            )
        else:
            return None, []
        out.content.append(block)
        slot = _Slot(block, len(out.content) - 1, initial)
        if kind == "custom_tool_call":
            slot.custom = custom
        self.slots[index] = slot
        if isinstance(block, DraftThinkingContent):
            return slot, [ThinkingStartEvent(slot.position, out)]
        if isinstance(block, DraftTextContent):
            return slot, [TextStartEvent(slot.position, out)]
        return slot, [ToolCallStartEvent(slot.position, out)]

    def _slot(self, event: Any, kind: type) -> _Slot | None:
        slot = self.slots.get(_int(_get(event, "output_index")))
        return slot if slot is not None and isinstance(slot.block, kind) else None

    def _thinking_delta(self, event: Any, piece: str) -> list[AssistantMessageEvent]:
        slot = self._slot(event, ThinkingContent)
        if slot is None or not piece:
            return []
        assert isinstance(slot.block, DraftThinkingContent)
        if slot.buffer.add(piece):
            slot.block.thinking = slot.buffer.text()
        return [ThinkingDeltaEvent(slot.position, piece, self.output)]

    def _tool_delta(self, slot: _Slot, piece: str) -> list[AssistantMessageEvent]:
        assert isinstance(slot.block, DraftToolCall)
        if slot.buffer.add(piece):
            slot.block.arguments = parse_partial_json(slot.buffer.text())
        return [ToolCallDeltaEvent(slot.position, piece, self.output)]

    def apply(self, event: Any) -> list[AssistantMessageEvent]:
        out = self.output
        kind = _get(event, "type")
        if kind == "response.created":
            response_id = _get(_get(event, "response"), "id")
            if response_id:
                out.response_id = str(response_id)
        elif kind == "response.output_item.added":
            return self._open(_int(_get(event, "output_index")), _get(event, "item"))[1]
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._thinking_delta(event, str(_get(event, "delta") or ""))
        elif kind == "response.reasoning_summary_part.done":
            return self._thinking_delta(event, "\n\n")
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            slot = self._slot(event, TextContent)
            piece = str(_get(event, "delta") or "")
            if slot is not None and piece:
                assert isinstance(slot.block, DraftTextContent)
                if slot.buffer.add(piece):
                    slot.block.text = slot.buffer.text()
                return [TextDeltaEvent(slot.position, piece, out)]
        elif kind == "response.function_call_arguments.delta":
            slot = self._slot(event, ToolCall)
            if slot is not None:
                return self._tool_delta(slot, str(_get(event, "delta") or ""))
        elif kind == "response.function_call_arguments.done":
            slot = self._slot(event, ToolCall)
            full = _get(event, "arguments")
            if slot is not None and isinstance(full, str):
                sent = slot.buffer.text()
                if full.startswith(sent) and len(full) > len(sent):
                    return self._tool_delta(slot, full[len(sent) :])
                if not full.startswith(sent):
                    slot.buffer = StreamBuffer(full)
        elif kind in ("response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"):
            slot = self._slot(event, ToolCall)
            if slot is not None and slot.custom is not None:
                done = kind.endswith(".done")
                current = slot.custom.input
                text = str(_get(event, "input") or "") if done else current + str(_get(event, "delta") or "")
                return self._custom_delta(slot, text, done)
        elif kind == "response.output_item.done":
            return self._item_done(_int(_get(event, "output_index")), _get(event, "item"))
        elif kind in ("response.completed", "response.incomplete"):
            self._finalize(_get(event, "response"))
        elif kind == "response.failed":
            self.terminal = True
            response = _get(event, "response")
            out.raw_stop_reason = _get(response, "status")
            error = _get(response, "error")
            details = _get(response, "incomplete_details")
            if error:
                text = f"{_get(error, 'code') or 'unknown'}: {_get(error, 'message') or 'no message'}"
            elif _get(details, "reason"):
                text = f"incomplete: {_get(details, 'reason')}"
            else:
                text = "Unknown error (no error details in response)"
            self._fail(text)
        elif kind == "error":
            self.terminal = True
            self._fail(f"Error Code {_get(event, 'code')}: {_get(event, 'message')}")
        return []

    def _custom_delta(self, slot: _Slot, text: str, close: bool) -> list[AssistantMessageEvent]:
        """A custom tool call's input grew to ``text``: the call's one argument, and its delta as the JSON of
        ``{property: input}`` written so far (as Pi streams it)."""
        assert isinstance(slot.block, DraftToolCall) and slot.custom is not None
        piece = slot.custom.advance(text, close)
        slot.block.arguments = {slot.custom.prop: text}
        return [] if piece is None else [ToolCallDeltaEvent(slot.position, piece, self.output)]

    def _fail(self, text: str) -> None:
        self.output.stop_reason = "error"
        self.output.error_message = f"The provider reported an error mid-response: {text}"

    def _item_done(self, index: int, item: Any) -> list[AssistantMessageEvent]:
        out = self.output
        kind = _get(item, "type")
        if kind == "message" and _get(item, "phase") == "final_answer":
            out.stop_reason = "stop"
        slot = self.slots.get(index)
        events: list[AssistantMessageEvent] = []
        if slot is None:
            slot, events = self._open(index, item)
            if slot is None:
                return events
        block = slot.block
        if kind == "reasoning" and isinstance(block, DraftThinkingContent):
            summary = "\n\n".join(str(_get(s, "text") or "") for s in _get(item, "summary") or [])
            content = "\n\n".join(str(_get(c, "text") or "") for c in _get(item, "content") or [])
            block.thinking = summary or content or slot.buffer.text()
            block.thinking_signature = compact_json(item)
            item_id = _get(item, "id")
            if isinstance(item_id, str):
                self.reasoning_by_id[item_id] = block
            events.append(ThinkingEndEvent(slot.position, block.thinking, out))
        elif kind == "message" and isinstance(block, DraftTextContent):
            parts = _get(item, "content") or []
            block.text = "".join(
                str(_get(c, "text") if _get(c, "type") == "output_text" else _get(c, "refusal") or "")
                for c in parts
            )
            block.text_signature = encode_text_signature(str(_get(item, "id") or ""), _get(item, "phase"))
            events.append(TextEndEvent(slot.position, block.text, out))
        elif kind == "function_call" and isinstance(block, DraftToolCall):
            raw = _get(item, "arguments") or slot.buffer.text() or "{}"
            block.arguments, block.arguments_error = final_arguments(str(raw))
            events.append(ToolCallEndEvent(slot.position, block, out))
        elif kind == "custom_tool_call" and isinstance(block, DraftToolCall) and slot.custom is not None:
            final = _get(item, "input")
            events += self._custom_delta(slot, str(final) if final is not None else slot.custom.input, True)
            events.append(ToolCallEndEvent(slot.position, block, out))
        else:
            return events
        self.slots.pop(index, None)
        return events

    def _finalize(self, response: Any) -> None:
        out = self.output
        self.terminal = True
        # Azure may leave encrypted_content out of output_item.done and give it only here.
        for item in _get(response, "output") or []:
            if _get(item, "type") != "reasoning" or not _get(item, "encrypted_content"):
                continue
            block = self.reasoning_by_id.get(str(_get(item, "id")))
            if block is None or not block.thinking_signature:
                continue
            stored = json.loads(block.thinking_signature)
            if not stored.get("encrypted_content"):
                stored["encrypted_content"] = _get(item, "encrypted_content")
                block.thinking_signature = compact_json(stored)
        if _get(response, "id"):
            out.response_id = str(_get(response, "id"))
        tier = _get(response, "service_tier") or self.service_tier
        usage = _get(response, "usage")
        if usage:
            out.usage = parse_usage(usage, self.model, tier if isinstance(tier, str) else None)
        status = _get(response, "status")
        reason = _get(_get(response, "incomplete_details"), "reason")
        reason = reason if isinstance(reason, str) else None
        out.raw_stop_reason = f"{status}.{reason}" if reason else status
        out.stop_reason, message = map_status(status, reason)
        if message:
            out.error_message = message
        if out.stop_reason == "stop" and out.tool_calls():
            out.stop_reason = "toolUse"

    def complete(self) -> bool:
        return self.terminal

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.terminal:
            raise ConnectionResetError("stream ended before a terminal response event")
        self.finalize_quietly()
        return []

    def finalize_quietly(self) -> None:
        """Blocks still open get what arrived (tool calls the best arguments seen; no events)."""
        for slot in self.slots.values():
            block = slot.block
            if isinstance(block, DraftTextContent):
                block.text = slot.buffer.text()
            elif isinstance(block, DraftThinkingContent):
                block.thinking = slot.buffer.text()
            elif isinstance(block, DraftToolCall) and slot.custom is None:
                block.arguments, block.arguments_error = final_arguments(slot.buffer.text())
        self.slots.clear()


# --------------------------------------------------------------------------------------------------
# The provider


def affinity_headers(compat: ModelCompat, options: StreamOptions) -> dict[str, str]:
    session = options.session_id
    if not session or options.cache_retention == "none":
        return {}
    if compat.session_affinity_format == "openrouter":
        return {"x-session-id": session}
    return {"session_id": session, "x-client-request-id": session}


class OpenAIResponsesProvider:
    """Streams one assistant message from a Responses endpoint (see the module docstring)."""

    async def stream(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        output = new_output(model)
        compat = resolve_compat(model)
        headers = {"User-Agent": "caddie", **(model.headers or {})}
        if is_copilot(model):
            headers.update(copilot_headers(context.messages))
        headers.update(affinity_headers(compat, options))
        headers.update(options.headers or {})
        api_key = options.api_key
        if not api_key and (
            headers_contain(headers, "authorization", "cf-aig-authorization")
            or is_local_base_url(model.base_url)
        ):
            api_key = NO_KEY_PLACEHOLDER
        events = stream_via_sdk(
            model,
            options,
            output,
            lambda: ResponsesAssembler(
                output,
                model,
                options.service_tier,
                grammar_input_properties(context.tools, compat.supports_open_ai_grammar_tools is True),
            ),
            headers=headers,
            api_key=api_key,
            missing_key_text=missing_key_text(model.provider),
            build_params=lambda: build_params(model, context, options, compat),
            clients=_CLIENTS,
            make_client=openai_client_factory(model.base_url, options.max_retries),
            create=lambda client, params: post_stream(client, "/responses", params),
        )
        async for event in events:
            yield event


_CLIENTS = ClientCache()
PROVIDER = OpenAIResponsesProvider()
