"""MCP content to caddie content and back. Pure: the SDK's results arrive here as JSON-shaped dicts
(``model_dump(mode="json", by_alias=True)``), so these functions are tested without a server.

A tool result's ``text`` blocks stay text, ``image`` blocks become images; audio, resource links and
embedded resources become a line of text saying what they are (embedded text resources inline their
text); ``structuredContent`` is sent as JSON when the server gave no other content. The text then goes
through ``bash``'s truncation and spill rules (``limit_output``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import ImageContent, TextContent, UserContent

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(slots=True)
class Converted:
    content: list[TextContent | ImageContent]
    is_error: bool
    structured: Any = None


def _size(data: str) -> int:
    return len(data) * 3 // 4


def resource_text(resource: Mapping[str, Any]) -> TextContent | ImageContent:
    """One resource's contents (``text`` or ``blob``) as a block."""
    uri = str(resource.get("uri", ""))
    mime = resource.get("mimeType") or ""
    if isinstance(resource.get("text"), str):
        return TextContent(str(resource["text"]))
    blob = resource.get("blob")
    if isinstance(blob, str) and mime in IMAGE_TYPES:
        return ImageContent(blob, mime)
    if isinstance(blob, str):
        return TextContent(
            f"[binary resource {uri} ({mime or 'unknown type'}, {_size(blob)} bytes) not shown]"
        )
    return TextContent(f"[resource {uri}]")


def block(item: Mapping[str, Any]) -> TextContent | ImageContent:
    """One MCP content block."""
    kind = item.get("type")
    if kind == "text":
        return TextContent(str(item.get("text", "")))
    if kind == "image":
        mime = str(item.get("mimeType") or "image/png")
        data = str(item.get("data", ""))
        if mime in IMAGE_TYPES and _decodes(data):
            return ImageContent(data, mime)
        return TextContent(f"[image ({mime}, {_size(data)} bytes) the model cannot be shown]")
    if kind == "audio":
        return TextContent(f"[audio ({item.get('mimeType', 'unknown type')}, {_size(str(item.get('data', '')))} bytes) not shown]")  # fmt: skip
    if kind == "resource_link":
        title = item.get("title") or item.get("name") or ""
        about = f" — {item['description']}" if item.get("description") else ""
        return TextContent(
            f"[resource link: {item.get('uri', '')}{' ' + repr(title) if title else ''}{about}]"
        )
    if kind == "resource":
        resource = item.get("resource")
        if isinstance(resource, Mapping):
            return resource_text(resource)
    return TextContent(f"[{kind or 'unknown'} content]")


def _decodes(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except ValueError:
        return False
    return bool(data)


def tool_result(result: Mapping[str, Any]) -> Converted:
    """A ``CallToolResult``: adjacent text blocks are joined (one block for truncation), images kept."""
    items = result.get("content")
    blocks = [block(i) for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []
    structured = result.get("structuredContent")
    if not blocks and structured is not None:
        blocks = [TextContent(json.dumps(structured, indent=2, ensure_ascii=False))]
    return Converted(merge_text(blocks), bool(result.get("isError")), structured)


def merge_text(blocks: Sequence[TextContent | ImageContent]) -> list[TextContent | ImageContent]:
    out: list[TextContent | ImageContent] = []
    for b in blocks:
        if isinstance(b, TextContent) and out and isinstance(out[-1], TextContent):
            out[-1] = TextContent(out[-1].text + "\n" + b.text)
        else:
            out.append(b)
    return out


def text_of(blocks: Sequence[TextContent | ImageContent]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, TextContent))


def prompt_messages(result: Mapping[str, Any]) -> list[UserContent]:
    """A ``GetPromptResult`` as the content of one user message (caddie sends a prompt as the user's turn;
    an assistant message in the prompt is quoted as text)."""
    out: list[UserContent] = []
    messages = result.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        items = content if isinstance(content, list) else [content]
        for item in items:
            if not isinstance(item, Mapping):
                continue
            converted = block(item)
            if message.get("role") == "assistant" and isinstance(converted, TextContent):
                converted = TextContent(f"(assistant) {converted.text}")
            out.append(converted)
    return list(merge_text(out))


def resource_attachment(server: str, uri: str, result: Mapping[str, Any]) -> list[UserContent]:
    """A ``ReadResourceResult`` as the blocks attached for ``@server:uri``: text wrapped like ``@file``."""
    out: list[UserContent] = []
    contents = result.get("contents")
    for item in contents if isinstance(contents, list) else []:
        if not isinstance(item, Mapping):
            continue
        converted = resource_text(item)
        if isinstance(converted, TextContent):
            name = item.get("uri", uri)
            out.append(
                TextContent(f'<resource server="{server}" uri="{name}">\n{converted.text}\n</resource>')
            )
        else:
            out.append(converted)
    return out or [TextContent(f'<resource server="{server}" uri="{uri}">(empty)</resource>')]
