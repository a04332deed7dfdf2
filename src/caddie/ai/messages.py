"""The one message model: Pi's content blocks, message roles and usage, with their JSON codec.

Python attributes are snake_case; the JSON written to disk and read from Pi session files uses Pi's
camelCase field names exactly. Fields this model does not know are kept in ``extra`` so that a
message read from a newer Pi writes back unchanged.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]
JSON: TypeAlias = Any


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every message ``timestamp``."""
    return int(time.time() * 1000)


# --------------------------------------------------------------------------------------------------
# Content blocks


@dataclass(slots=True)
class TextContent:
    text: str
    text_signature: str | None = None
    extra: dict[str, Any] | None = None
    type: ClassVar[Literal["text"]] = "text"


@dataclass(slots=True)
class ThinkingContent:
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None
    extra: dict[str, Any] | None = None
    type: ClassVar[Literal["thinking"]] = "thinking"


@dataclass(slots=True)
class ImageContent:
    data: str
    """Base64 without a data-URL prefix."""
    mime_type: str
    extra: dict[str, Any] | None = None
    type: ClassVar[Literal["image"]] = "image"


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | None = None
    extra: dict[str, Any] | None = None
    type: ClassVar[Literal["toolCall"]] = "toolCall"


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
ContentBlock: TypeAlias = TextContent | ThinkingContent | ImageContent | ToolCall


# --------------------------------------------------------------------------------------------------
# Usage


@dataclass(slots=True)
class Cost:
    """Dollars spent on one response, split like ``Usage``."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


@dataclass(slots=True)
class Usage:
    """Tokens of one response. ``input`` excludes cache reads and writes."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)
    cache_write_1h: int | None = None
    reasoning: int | None = None
    extra: dict[str, Any] | None = None


# --------------------------------------------------------------------------------------------------
# Messages: the three LLM roles


@dataclass(slots=True)
class UserMessage:
    content: str | list[UserContent]
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["user"]] = "user"


@dataclass(slots=True)
class AssistantMessage:
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    timestamp: int | float = field(default_factory=now_ms)
    error_message: str | None = None
    response_model: str | None = None
    response_id: str | None = None
    diagnostics: list[Any] | None = None
    raw_stop_reason: str | None = None
    deferred: Any = None
    extra: dict[str, Any] | None = None
    # Transient, never written to disk: what the provider learnt about a failure, for retry decisions.
    error_status: int | None = None
    """HTTP status of a failed request (None for network errors, aborts and successes)."""
    retry_after_ms: int | None = None
    """The server's Retry-After, when it sent one."""
    role: ClassVar[Literal["assistant"]] = "assistant"

    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.content if isinstance(b, ToolCall)]

    def text(self) -> str:
        """The concatenated text blocks: what print mode shows as the answer."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


@dataclass(slots=True)
class ToolResultMessage:
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    is_error: bool = False
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["toolResult"]] = "toolResult"


# --------------------------------------------------------------------------------------------------
# Messages: the host roles (projected to user messages before a provider call)


@dataclass(slots=True)
class BashExecutionMessage:
    """A shell command the user ran with ``!cmd`` (``!!cmd`` sets ``exclude_from_context``)."""

    command: str
    output: str
    exit_code: int | None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["bashExecution"]] = "bashExecution"


@dataclass(slots=True)
class CustomMessage:
    """A message an extension injected; sent to the model as a user message."""

    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["custom"]] = "custom"


@dataclass(slots=True)
class BranchSummaryMessage:
    summary: str
    from_id: str
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["branchSummary"]] = "branchSummary"


@dataclass(slots=True)
class CompactionSummaryMessage:
    summary: str
    tokens_before: int
    timestamp: int | float = field(default_factory=now_ms)
    extra: dict[str, Any] | None = None
    role: ClassVar[Literal["compactionSummary"]] = "compactionSummary"


LlmMessage: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage
AgentMessage: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
)


# --------------------------------------------------------------------------------------------------
# JSON codec (Pi field names)


class MessageFormatError(ValueError):
    """A JSON object that is not a valid Pi message or content block."""


def _rest(d: dict[str, Any], known: frozenset[str]) -> dict[str, Any] | None:
    if len(d) <= len(known) and all(k in known for k in d):
        return None
    rest = {k: v for k, v in d.items() if k not in known}
    return rest or None


_TEXT_KEYS = frozenset({"type", "text", "textSignature"})
_THINKING_KEYS = frozenset({"type", "thinking", "thinkingSignature", "redacted"})
_IMAGE_KEYS = frozenset({"type", "data", "mimeType"})
_TOOLCALL_KEYS = frozenset({"type", "id", "name", "arguments", "thoughtSignature"})


def block_from_json(d: Any) -> ContentBlock:
    if not isinstance(d, dict):
        raise MessageFormatError(f"content block must be an object, got {type(d).__name__}")
    kind = d.get("type")
    if kind == "text":
        return TextContent(str(d.get("text", "")), d.get("textSignature"), _rest(d, _TEXT_KEYS))
    if kind == "toolCall":
        args = d.get("arguments")
        return ToolCall(
            str(d.get("id", "")),
            str(d.get("name", "")),
            args if isinstance(args, dict) else {},
            d.get("thoughtSignature"),
            _rest(d, _TOOLCALL_KEYS),
        )
    if kind == "thinking":
        return ThinkingContent(
            str(d.get("thinking", "")),
            d.get("thinkingSignature"),
            d.get("redacted"),
            _rest(d, _THINKING_KEYS),
        )
    if kind == "image":
        return ImageContent(str(d.get("data", "")), str(d.get("mimeType", "")), _rest(d, _IMAGE_KEYS))
    raise MessageFormatError(f"unknown content block type {kind!r}")


def block_to_json(b: ContentBlock) -> dict[str, Any]:
    out: dict[str, Any]
    if isinstance(b, TextContent):
        out = {"type": "text", "text": b.text}
        if b.text_signature is not None:
            out["textSignature"] = b.text_signature
    elif isinstance(b, ToolCall):
        out = {"type": "toolCall", "id": b.id, "name": b.name, "arguments": b.arguments}
        if b.thought_signature is not None:
            out["thoughtSignature"] = b.thought_signature
    elif isinstance(b, ThinkingContent):
        out = {"type": "thinking", "thinking": b.thinking}
        if b.thinking_signature is not None:
            out["thinkingSignature"] = b.thinking_signature
        if b.redacted is not None:
            out["redacted"] = b.redacted
    else:
        out = {"type": "image", "data": b.data, "mimeType": b.mime_type}
    if b.extra:
        out.update(b.extra)
    return out


def content_from_json(c: Any) -> str | list[Any]:
    if c is None:
        return []
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return [block_from_json(b) for b in c]
    raise MessageFormatError(f"message content must be a string or a list, got {type(c).__name__}")


def content_to_json(c: str | list[Any]) -> str | list[dict[str, Any]]:
    if isinstance(c, str):
        return c
    return [block_to_json(b) for b in c]


_COST_KEYS = ("input", "output", "cacheRead", "cacheWrite", "total")
_USAGE_KEYS = frozenset(
    {"input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "reasoning", "totalTokens", "cost"}
)


def usage_from_json(d: Any) -> Usage:
    if not isinstance(d, dict):
        return Usage()
    c = d.get("cost")
    cost = (
        Cost(
            c.get("input", 0) or 0,
            c.get("output", 0) or 0,
            c.get("cacheRead", 0) or 0,
            c.get("cacheWrite", 0) or 0,
            c.get("total", 0) or 0,
        )
        if isinstance(c, dict)
        else Cost()
    )
    return Usage(
        d.get("input", 0) or 0,
        d.get("output", 0) or 0,
        d.get("cacheRead", 0) or 0,
        d.get("cacheWrite", 0) or 0,
        d.get("totalTokens", 0) or 0,
        cost,
        d.get("cacheWrite1h"),
        d.get("reasoning"),
        _rest(d, _USAGE_KEYS),
    )


def usage_to_json(u: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input": u.input,
        "output": u.output,
        "cacheRead": u.cache_read,
        "cacheWrite": u.cache_write,
    }
    if u.cache_write_1h is not None:
        out["cacheWrite1h"] = u.cache_write_1h
    if u.reasoning is not None:
        out["reasoning"] = u.reasoning
    out["totalTokens"] = u.total_tokens
    out["cost"] = dict(
        zip(
            _COST_KEYS,
            (u.cost.input, u.cost.output, u.cost.cache_read, u.cost.cache_write, u.cost.total),
            strict=True,
        )
    )
    if u.extra:
        out.update(u.extra)
    return out


_USER_KEYS = frozenset({"role", "content", "timestamp"})
_ASSISTANT_KEYS = frozenset(
    {
        "role",
        "content",
        "api",
        "provider",
        "model",
        "responseModel",
        "responseId",
        "diagnostics",
        "usage",
        "stopReason",
        "deferred",
        "errorMessage",
        "rawStopReason",
        "timestamp",
    }
)
_TOOLRESULT_KEYS = frozenset(
    {
        "role",
        "toolCallId",
        "toolName",
        "content",
        "details",
        "usage",
        "addedToolNames",
        "isError",
        "timestamp",
    }
)
_BASH_KEYS = frozenset(
    {
        "role",
        "command",
        "output",
        "exitCode",
        "cancelled",
        "truncated",
        "fullOutputPath",
        "excludeFromContext",
        "timestamp",
    }
)
_CUSTOM_KEYS = frozenset({"role", "customType", "content", "display", "details", "timestamp"})
_BRANCH_KEYS = frozenset({"role", "summary", "fromId", "timestamp"})
_COMPACTION_KEYS = frozenset({"role", "summary", "tokensBefore", "timestamp"})


def message_from_json(d: Any) -> AgentMessage:
    """Decode one message object as Pi writes it. Raises ``MessageFormatError`` on a bad shape."""
    if not isinstance(d, dict):
        raise MessageFormatError(f"message must be an object, got {type(d).__name__}")
    role = d.get("role")
    ts = d.get("timestamp", 0)
    if role == "assistant":
        content = content_from_json(d.get("content"))
        return AssistantMessage(
            content=content if isinstance(content, list) else [TextContent(content)],
            api=str(d.get("api", "")),
            provider=str(d.get("provider", "")),
            model=str(d.get("model", "")),
            usage=usage_from_json(d.get("usage")),
            stop_reason=d.get("stopReason", "stop"),
            timestamp=ts,
            error_message=d.get("errorMessage"),
            response_model=d.get("responseModel"),
            response_id=d.get("responseId"),
            diagnostics=d.get("diagnostics"),
            raw_stop_reason=d.get("rawStopReason"),
            deferred=d.get("deferred"),
            extra=_rest(d, _ASSISTANT_KEYS),
        )
    if role == "user":
        return UserMessage(content_from_json(d.get("content")), ts, _rest(d, _USER_KEYS))
    if role == "toolResult":
        content = content_from_json(d.get("content"))
        u = d.get("usage")
        return ToolResultMessage(
            tool_call_id=str(d.get("toolCallId", "")),
            tool_name=str(d.get("toolName", "")),
            content=content if isinstance(content, list) else [TextContent(content)],
            is_error=bool(d.get("isError", False)),
            details=d.get("details"),
            usage=usage_from_json(u) if isinstance(u, dict) else None,
            added_tool_names=d.get("addedToolNames"),
            timestamp=ts,
            extra=_rest(d, _TOOLRESULT_KEYS),
        )
    if role == "custom":
        return CustomMessage(
            custom_type=str(d.get("customType", "")),
            content=content_from_json(d.get("content")),
            display=bool(d.get("display", True)),
            details=d.get("details"),
            timestamp=ts,
            extra=_rest(d, _CUSTOM_KEYS),
        )
    if role == "bashExecution":
        return BashExecutionMessage(
            command=str(d.get("command", "")),
            output=str(d.get("output", "")),
            exit_code=d.get("exitCode"),
            cancelled=bool(d.get("cancelled", False)),
            truncated=bool(d.get("truncated", False)),
            full_output_path=d.get("fullOutputPath"),
            exclude_from_context=d.get("excludeFromContext"),
            timestamp=ts,
            extra=_rest(d, _BASH_KEYS),
        )
    if role == "branchSummary":
        return BranchSummaryMessage(
            str(d.get("summary", "")), str(d.get("fromId", "")), ts, _rest(d, _BRANCH_KEYS)
        )
    if role == "compactionSummary":
        return CompactionSummaryMessage(
            str(d.get("summary", "")), int(d.get("tokensBefore", 0) or 0), ts, _rest(d, _COMPACTION_KEYS)
        )
    if role == "hookMessage":  # session format v2 name of "custom"
        return message_from_json({**d, "role": "custom"})
    raise MessageFormatError(f"unknown message role {role!r}")


def message_to_json(m: AgentMessage) -> dict[str, Any]:
    """Encode one message with Pi's field names, omitting unset optional fields as Pi does."""
    out: dict[str, Any]
    if isinstance(m, AssistantMessage):
        out = {
            "role": "assistant",
            "content": content_to_json(m.content),
            "api": m.api,
            "provider": m.provider,
        }
        out["model"] = m.model
        if m.response_model is not None:
            out["responseModel"] = m.response_model
        if m.response_id is not None:
            out["responseId"] = m.response_id
        if m.diagnostics is not None:
            out["diagnostics"] = m.diagnostics
        out["usage"] = usage_to_json(m.usage)
        out["stopReason"] = m.stop_reason
        if m.deferred is not None:
            out["deferred"] = m.deferred
        if m.error_message is not None:
            out["errorMessage"] = m.error_message
        if m.raw_stop_reason is not None:
            out["rawStopReason"] = m.raw_stop_reason
        out["timestamp"] = m.timestamp
    elif isinstance(m, UserMessage):
        out = {"role": "user", "content": content_to_json(m.content), "timestamp": m.timestamp}
    elif isinstance(m, ToolResultMessage):
        out = {
            "role": "toolResult",
            "toolCallId": m.tool_call_id,
            "toolName": m.tool_name,
            "content": content_to_json(m.content),
        }
        if m.details is not None:
            out["details"] = m.details
        if m.usage is not None:
            out["usage"] = usage_to_json(m.usage)
        if m.added_tool_names is not None:
            out["addedToolNames"] = m.added_tool_names
        out["isError"] = m.is_error
        out["timestamp"] = m.timestamp
    elif isinstance(m, CustomMessage):
        out = {"role": "custom", "customType": m.custom_type, "content": content_to_json(m.content)}
        out["display"] = m.display
        if m.details is not None:
            out["details"] = m.details
        out["timestamp"] = m.timestamp
    elif isinstance(m, BashExecutionMessage):
        out = {
            "role": "bashExecution",
            "command": m.command,
            "output": m.output,
            "exitCode": m.exit_code,
            "cancelled": m.cancelled,
            "truncated": m.truncated,
        }
        if m.full_output_path is not None:
            out["fullOutputPath"] = m.full_output_path
        if m.exclude_from_context is not None:
            out["excludeFromContext"] = m.exclude_from_context
        out["timestamp"] = m.timestamp
    elif isinstance(m, BranchSummaryMessage):
        out = {"role": "branchSummary", "summary": m.summary, "fromId": m.from_id, "timestamp": m.timestamp}
    else:
        out = {
            "role": "compactionSummary",
            "summary": m.summary,
            "tokensBefore": m.tokens_before,
            "timestamp": m.timestamp,
        }
    if m.extra:
        out.update(m.extra)
    return out


def copy_message(m: AgentMessage) -> AgentMessage:
    """A deep copy (the ``context`` event hands extensions copies, never the agent's own list)."""
    return message_from_json(json.loads(json.dumps(message_to_json(m))))


# --------------------------------------------------------------------------------------------------
# Projection of host roles to LLM messages (Pi's convertToLlm)

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUMMARY_SUFFIX = "</summary>"


def bash_execution_to_text(m: BashExecutionMessage) -> str:
    text = f"Ran `{m.command}`\n"
    text += f"```\n{m.output}\n```" if m.output else "(no output)"
    if m.cancelled:
        text += "\n\n(command cancelled)"
    elif m.exit_code is not None and m.exit_code != 0:
        text += f"\n\nCommand exited with code {m.exit_code}"
    if m.truncated and m.full_output_path:
        text += f"\n\n[Output truncated. Full output: {m.full_output_path}]"
    return text


def convert_to_llm(messages: list[AgentMessage]) -> list[LlmMessage]:
    """Project host roles to user messages; drop ``!!`` bash runs. LLM roles pass through unchanged."""
    out: list[LlmMessage] = []
    for m in messages:
        if isinstance(m, UserMessage | AssistantMessage | ToolResultMessage):
            out.append(m)
        elif isinstance(m, CustomMessage):
            content: list[UserContent] = [TextContent(m.content)] if isinstance(m.content, str) else m.content
            out.append(UserMessage(content, m.timestamp))
        elif isinstance(m, BashExecutionMessage):
            if not m.exclude_from_context:
                out.append(UserMessage([TextContent(bash_execution_to_text(m))], m.timestamp))
        elif isinstance(m, BranchSummaryMessage):
            text = BRANCH_SUMMARY_PREFIX + m.summary + BRANCH_SUMMARY_SUFFIX
            out.append(UserMessage([TextContent(text)], m.timestamp))
        elif isinstance(m, CompactionSummaryMessage):
            text = COMPACTION_SUMMARY_PREFIX + m.summary + COMPACTION_SUMMARY_SUFFIX
            out.append(UserMessage([TextContent(text)], m.timestamp))
    return out


def text_of(content: str | list[Any]) -> str:
    """The text blocks of a content value joined with newlines (images and tool calls skipped)."""
    if isinstance(content, str):
        return content
    return "\n".join(b.text for b in content if isinstance(b, TextContent))
