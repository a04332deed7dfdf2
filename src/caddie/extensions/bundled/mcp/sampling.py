"""A server's sampling request (``sampling/createMessage``) as a model request caddie can make, and the
model's reply as the server expects it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import AssistantMessage, ImageContent, TextContent, UserMessage

PREVIEW_CHARS = 600
DEFAULT_MAX_TOKENS = 1024


@dataclass(slots=True)
class SamplingRequest:
    messages: list[UserMessage | AssistantMessage]
    system_prompt: str
    max_tokens: int
    preview: str
    """What the user is asked to approve: the request's text, shortened."""


def _blocks(content: Any) -> list[TextContent | ImageContent]:
    items = content if isinstance(content, list) else [content]
    out: list[TextContent | ImageContent] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "text":
            out.append(TextContent(str(item.get("text", ""))))
        elif item.get("type") == "image" and isinstance(item.get("data"), str):
            out.append(ImageContent(item["data"], str(item.get("mimeType") or "image/png")))
        else:
            out.append(TextContent(f"[{item.get('type', 'unknown')} content]"))
    return out


def sampling_request(params: Mapping[str, Any]) -> SamplingRequest:
    messages: list[UserMessage | AssistantMessage] = []
    lines: list[str] = []
    for message in params.get("messages") or []:
        if not isinstance(message, Mapping):
            continue
        blocks = _blocks(message.get("content"))
        text = "\n".join(b.text for b in blocks if isinstance(b, TextContent))
        if message.get("role") == "assistant":
            messages.append(
                AssistantMessage([TextContent(text)], api="mcp-sampling", provider="mcp", model="server")
            )
            lines.append(f"assistant: {text}")
        else:
            messages.append(UserMessage(list(blocks)))
            lines.append(text)
    system = str(params.get("systemPrompt") or "")
    max_tokens = params.get("maxTokens")
    preview = "\n".join(lines)
    if system:
        preview = f"(system: {system})\n{preview}"
    if len(preview) > PREVIEW_CHARS:
        preview = preview[: PREVIEW_CHARS - 1] + "…"
    return SamplingRequest(
        messages,
        system,
        max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else DEFAULT_MAX_TOKENS,
        preview,
    )


def sampling_reply(reply: AssistantMessage) -> dict[str, Any]:
    text = "\n".join(b.text for b in reply.content if isinstance(b, TextContent))
    stop = {"length": "maxTokens", "stop": "endTurn", "toolUse": "endTurn"}.get(reply.stop_reason, "endTurn")
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": f"{reply.provider}/{reply.model}",
        "stopReason": stop,
    }
