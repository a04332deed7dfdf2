"""The repairs applied to a conversation before every provider call (Pi's ``transformMessages``).

A session can hold things a provider would reject: assistant turns that failed half-way, tool calls
whose results never arrived, tool-call ids minted by another provider, thinking signed by another
model, images sent to a text-only model. ``transform_messages`` returns a repaired copy; the input
list and its messages are never modified.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    replace,
)
from caddie.ai.model import Model

NO_RESULT_TEXT = "No result provided"
"""The text of the synthetic error result given to a tool call that never got one."""
IMAGE_OMITTED_TEXT = "(image omitted: model does not support images)"
TOOL_IMAGE_OMITTED_TEXT = "(tool image omitted: model does not support images)"

S = TypeVar("S", bound=msgspec.Struct)

ToolCallIdNormalizer = Callable[[str, Model, AssistantMessage], str]
"""Maps a foreign tool-call id to one the target provider accepts: ``(id, target_model, source_message)``."""

_UNSAFE_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def normalize_anthropic_tool_call_id(tool_call_id: str) -> str:
    """Anthropic accepts ids matching ``^[a-zA-Z0-9_-]+$`` of at most 64 characters."""
    cleaned = _UNSAFE_ID_CHARS.sub("_", tool_call_id)[:64]
    return cleaned or "tool_call"


def normalize_openai_tool_call_id(tool_call_id: str, model: Model) -> str:
    """Chat Completions ids: split Responses-API ``call|item`` ids, and keep OpenAI's 40-character limit."""
    if "|" in tool_call_id:
        call_id, _, item_id = tool_call_id.partition("|")
        call_part = _UNSAFE_ID_CHARS.sub("_", call_id)
        item_part = _UNSAFE_ID_CHARS.sub("_", item_id)
        combined = f"{call_part}_{item_part}" if item_part else call_part
        if len(combined) <= 40:
            return combined
        digest = hashlib.sha256(tool_call_id.encode()).hexdigest()[:8]
        return f"{call_part[: max(1, 40 - len(digest) - 1)]}_{digest}"
    if model.provider == "openai" and len(tool_call_id) > 40:
        return tool_call_id[:40]
    return tool_call_id


def _updated(obj: S, **changes: Any) -> S:
    """A shallow copy of a message or block with some fields changed (the original stays untouched)."""
    return replace(obj, **changes)


def is_same_model(message: AssistantMessage, model: Model) -> bool:
    """Whether ``message`` was produced by ``model`` (same provider, API and id): its signatures replay."""
    return message.provider == model.provider and message.api == model.api and message.model == model.id


def _replace_images(content: list[UserContent], placeholder: str) -> list[UserContent]:
    out: list[UserContent] = []
    previous_was_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_was_placeholder:
                out.append(TextContent(placeholder))
            previous_was_placeholder = True
            continue
        out.append(block)
        previous_was_placeholder = isinstance(block, TextContent) and block.text == placeholder
    return out


def _downgrade_images(message: LlmMessage, model: Model) -> LlmMessage:
    if model.supports_images:
        return message
    if isinstance(message, UserMessage) and isinstance(message.content, list):
        if any(isinstance(b, ImageContent) for b in message.content):
            return _updated(message, content=_replace_images(message.content, IMAGE_OMITTED_TEXT))
    elif isinstance(message, ToolResultMessage) and any(isinstance(b, ImageContent) for b in message.content):
        return _updated(message, content=_replace_images(message.content, TOOL_IMAGE_OMITTED_TEXT))
    return message


def _transform_assistant(
    message: AssistantMessage,
    model: Model,
    normalize_id: ToolCallIdNormalizer | None,
    id_map: dict[str, str],
) -> AssistantMessage:
    same = message.model == model.id and message.provider == model.provider and message.api == model.api
    if same:
        for b in message.content:
            if (
                isinstance(b, ThinkingContent)
                and not b.redacted
                and not b.thinking_signature
                and not b.thinking.strip()
            ):
                break
        else:
            return message  # the model's own turn goes back as it is (no copy: providers only read it)
    content: list[AssistantContent] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if block.redacted:
                # Opaque, encrypted reasoning only the producing model can read.
                if same:
                    content.append(block)
                continue
            if same and block.thinking_signature:
                content.append(block)
                continue
            if not block.thinking.strip():
                continue
            content.append(block if same else TextContent(block.thinking))
        elif isinstance(block, TextContent):
            content.append(block if same else TextContent(block.text))
        else:
            call = block
            if not same and call.thought_signature:
                call = _updated(call, thought_signature=None)
            if not same and normalize_id is not None:
                new_id = normalize_id(call.id, model, message)
                if new_id != call.id:
                    id_map[call.id] = new_id
                    call = _updated(call, id=new_id)
            content.append(call)
    return _updated(message, content=content)


def transform_messages(
    messages: list[LlmMessage],
    model: Model,
    normalize_tool_call_id: ToolCallIdNormalizer | None = None,
    cache: ConversionCache | None = None,
) -> list[LlmMessage]:
    """A repaired copy of ``messages`` for a call to ``model``.

    - assistant messages that ended in ``error`` or ``aborted`` are dropped;
    - every tool call without a result (before the next assistant or user message, or at the end) gets a
      synthetic error result ``No result provided``;
    - tool-call ids from other models pass through ``normalize_tool_call_id`` and their results follow;
    - thinking from another model becomes plain text (redacted thinking is dropped; empty thinking too);
    - images become a placeholder text for a model without image input.

    With ``cache`` (``Context.conversion_cache``: messages nobody changes in place), each message's repair
    is kept by identity and reused, so a repaired message is the same object from one request to the next.
    """
    key = ("transform", model.api, model.provider, model.id, model.supports_images, normalize_tool_call_id)
    resumed = cache.resume(key, messages) if cache is not None else None
    scope = cache.scope(key, keep=resumed is not None) if cache is not None else None
    result: list[LlmMessage]
    pending: list[ToolCall]
    answered: set[str]
    if resumed is not None:
        start, (done, id_map_done, pending_done, answered_done) = resumed
        result, id_map = list(done), dict(id_map_done)
        pending, answered = list(pending_done), set(answered_done)
    else:
        start, result, id_map, pending, answered = 0, [], {}, [], set()
    transformed: list[LlmMessage] = []
    calls_of: list[list[ToolCall] | None] = []
    images_ok = model.supports_images
    for original in messages[start:] if start else messages:
        if isinstance(original, ToolResultMessage):
            new_id = id_map.get(original.tool_call_id)
            if new_id == original.tool_call_id:
                new_id = None
            cached = scope.get(original) if scope is not None else None
            if cached is not None and cached[0] == new_id:
                msg: LlmMessage = cached[1]
            else:
                msg = original if images_ok else _downgrade_images(original, model)
                if new_id is not None:
                    msg = _updated(msg, tool_call_id=new_id)
                if scope is not None:
                    scope.put(original, (new_id, msg))
            transformed.append(msg)
            calls_of.append(None)
            continue
        hit = scope.get(original) if scope is not None else None
        if hit is None:
            msg = original if images_ok else _downgrade_images(original, model)
            calls: list[ToolCall] | None = None
            added: tuple[tuple[str, str], ...] = ()
            if isinstance(msg, AssistantMessage):
                own: dict[str, str] = {}
                msg = _transform_assistant(msg, model, normalize_tool_call_id, own)
                added = tuple(own.items())
                calls = msg.tool_calls()
            hit = (msg, calls, added)
            if scope is not None:
                scope.put(original, hit)
        msg, calls, added = hit
        id_map.update(added)
        transformed.append(msg)
        calls_of.append(calls)

    def close_pending() -> None:
        nonlocal pending, answered
        for call in pending:
            if call.id not in answered:
                result.append(
                    ToolResultMessage(
                        tool_call_id=call.id,
                        tool_name=call.name,
                        content=[TextContent(NO_RESULT_TEXT)],
                        is_error=True,
                    )
                )
        pending = []
        answered = set()

    for msg, calls in zip(transformed, calls_of, strict=True):
        if isinstance(msg, AssistantMessage):
            close_pending()
            if msg.stop_reason in ("error", "aborted"):
                continue
            if calls:
                pending = calls
                answered = set()
            result.append(msg)
        elif isinstance(msg, ToolResultMessage):
            answered.add(msg.tool_call_id)
            result.append(msg)
        else:
            close_pending()
            result.append(msg)
    if cache is not None:  # the state before the closing repairs: the next request resumes from here
        cache.checkpoint(key, messages, (list(result), dict(id_map), list(pending), set(answered)))
    close_pending()
    return result
