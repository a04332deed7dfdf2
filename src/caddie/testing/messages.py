"""Message builders for extension tests: short constructors for the messages a conversation holds."""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import (
    AssistantMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def user(text: str) -> UserMessage:
    return UserMessage(text, timestamp=1)


def assistant_text(text: str) -> AssistantMessage:
    return AssistantMessage([TextContent(text)], api="faux", provider="faux", model="faux", timestamp=1)


def call(call_id: str, name: str = "tool", **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, dict(arguments))


def assistant(*calls: ToolCall | str) -> AssistantMessage:
    """An assistant message making the given calls (a bare string is the id of a call to tool ``tool``)."""
    blocks: list[Any] = [call(c) if isinstance(c, str) else c for c in calls]
    return AssistantMessage(blocks, api="faux", provider="faux", model="faux", timestamp=1)


def result(call_id: str, text: str = "...", tool_name: str = "tool") -> ToolResultMessage:
    return ToolResultMessage(call_id, tool_name, [TextContent(text)], timestamp=1)


def custom(custom_type: str, content: str = "x") -> CustomMessage:
    return CustomMessage(custom_type, content, True, None, 1)


def text_of(message: object) -> str:
    """The first text of a message (string content or first text block); ``""`` when it has none."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, TextContent):
                return block.text
    return ""
