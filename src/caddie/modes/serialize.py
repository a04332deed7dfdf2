"""Session events as Pi-shaped JSON objects (camelCase keys, messages in Pi's format), for json and rpc modes."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    block_to_json,
    message_to_json,
    usage_to_json,
)
from caddie.ai.messages import Usage as _Usage
from caddie.ai.model import Model
from caddie.ai.stream_events import AssistantMessageEvent
from caddie.session.entries import entry_to_json
from caddie.tools.base import ToolResult

_MESSAGE_TYPES = (
    UserMessage,
    AssistantMessage,
    ToolResultMessage,
    CustomMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def to_json(value: Any) -> Any:
    """Any event payload value as plain JSON data."""
    if isinstance(value, _MESSAGE_TYPES):
        return message_to_json(value)
    if isinstance(value, TextContent | ThinkingContent | ToolCall):
        return block_to_json(value)
    if isinstance(value, _Usage):
        return usage_to_json(value)
    if isinstance(value, Model):  # never the generic path: it would print resolved header secrets
        return value.to_json()
    if isinstance(value, ToolResult):
        out: dict[str, Any] = {
            "content": [to_json(b) for b in value.content],
            "details": to_json(value.details),
        }
        if value.usage is not None:
            out["usage"] = usage_to_json(value.usage)
        if value.terminate:
            out["terminate"] = True
        return out
    if isinstance(value, msgspec.Struct):
        try:
            return entry_to_json(value)  # type: ignore[arg-type]
        except (AttributeError, TypeError):
            return msgspec.to_builtins(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(f.name): to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _assistant_event_delta(event: AssistantMessageEvent) -> dict[str, Any]:
    """A streaming event without its ``partial`` snapshot (Pi 0.84 json mode sends deltas only)."""
    out: dict[str, Any] = {"type": event.type}
    for f in dataclasses.fields(event):
        if f.name in ("partial", "type"):
            continue
        out[camel(f.name)] = to_json(getattr(event, f.name))
    if event.type == "toolcall_start":  # Pi names the call here; its arguments follow as deltas
        block = event.partial.content[event.content_index]
        if isinstance(block, ToolCall):
            out["id"], out["toolName"] = block.id, block.name
    return out


def event_to_json(event: Any) -> dict[str, Any]:
    """One session event as a JSON object with ``type`` first."""
    kind = getattr(event, "type", type(event).__name__)
    if kind == "message_update":
        return {
            "type": "message_update",
            "usage": usage_to_json(event.message.usage),
            "assistantMessageEvent": _assistant_event_delta(event.assistant_message_event),
        }
    out: dict[str, Any] = {"type": kind}
    for f in dataclasses.fields(event):
        if f.name == "type":
            continue
        out[camel(f.name)] = to_json(getattr(event, f.name))
    return out
