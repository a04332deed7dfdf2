"""The one message model: Pi's content blocks, message roles and usage, with their JSON codec.

Python attributes are snake_case; the JSON written to disk and read from Pi session files uses Pi's
camelCase field names exactly. The classes are ``msgspec`` structs: a session of 100,000 entries decodes
straight into them in a fraction of a second (see docs/benchmarks.md), where building them from ``json``
dicts took seconds. Fields a newer Pi adds are ignored when read.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal, TypeAlias

import msgspec
from msgspec import field
from msgspec.structs import replace as replace  # re-exported: structs are copied with replace()

from caddie.errors import SessionStoreError

StopReason: TypeAlias = Literal["stop", "length", "toolUse", "error", "aborted", "pending", "deferred"]
JSON: TypeAlias = Any


def now_ms() -> int:
    """Milliseconds since the epoch, the unit of every message ``timestamp``."""
    return int(time.time() * 1000)


class _Struct(msgspec.Struct, rename="camel", omit_defaults=True, gc=False, frozen=True):
    """Base of every message-model struct (camelCase on the wire, no GC tracking: they hold no cycles).

    Frozen: a message is a value. Once made (a stored message above all) its fields are never reassigned —
    code that needs a different message makes one (``replace(message, content=[...])``) — so whoever holds
    a message (an extension's ``context`` handler, a provider's per-message conversion cache) can rely on
    it. The lists and dicts inside (``content``, ``details``, tool-call ``arguments``) are not copied to
    make them immutable too: they are never changed in place either, by caddie or by an extension
    (docs/extensions.md). Only a provider assembling a streamed reply changes one, through the ``Draft*``
    types below, until ``freeze`` turns the finished reply into a plain ``AssistantMessage``."""


# --------------------------------------------------------------------------------------------------
# Content blocks


class TextContent(_Struct, tag_field="type", tag="text", frozen=True):
    text: str
    text_signature: str | None = None
    type: ClassVar[Literal["text"]] = "text"


class ThinkingContent(_Struct, tag_field="type", tag="thinking", frozen=True):
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None
    type: ClassVar[Literal["thinking"]] = "thinking"


class ImageContent(_Struct, tag_field="type", tag="image", frozen=True):
    data: str
    """Base64 without a data-URL prefix."""
    mime_type: str
    type: ClassVar[Literal["image"]] = "image"


class ToolCall(_Struct, tag_field="type", tag="toolCall", frozen=True):
    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | None = None
    arguments_error: str | None = None
    """Set when the streamed arguments were not one complete JSON object (``arguments`` then holds the best
    repair, for display only): such a call is never run. caddie's own field; Pi ignores it."""
    type: ClassVar[Literal["toolCall"]] = "toolCall"


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall
ContentBlock: TypeAlias = TextContent | ThinkingContent | ImageContent | ToolCall


# --------------------------------------------------------------------------------------------------
# Usage


class Cost(_Struct, frozen=True):
    """Dollars spent on one response, split like ``Usage``."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Struct, frozen=True):
    """Tokens of one response. ``input`` excludes cache reads and writes."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)
    cache_write_1h: int | None = None
    reasoning: int | None = None
    estimated: bool | None = None
    """True when the provider reported no usage for the reply and these numbers are caddie's estimate
    (``caddie.ai.usage_estimate``); absent when the provider reported them. caddie's own field: Pi ignores
    it (and reads the estimated numbers as usage)."""


# --------------------------------------------------------------------------------------------------
# Messages: the three LLM roles


class UserMessage(_Struct, tag_field="role", tag="user", frozen=True):
    content: str | list[UserContent]
    timestamp: int | float = field(default_factory=now_ms)
    role: ClassVar[Literal["user"]] = "user"


class AssistantMessage(_Struct, tag_field="role", tag="assistant", frozen=True):
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


class DraftTextContent(TextContent, frozen=False):  # type: ignore[misc]  # the fields are redeclared writable
    """A text block still being streamed (see ``DraftAssistantMessage``)."""

    text: str
    text_signature: str | None = None


class DraftThinkingContent(ThinkingContent, frozen=False):  # type: ignore[misc]
    """A thinking block still being streamed."""

    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None


class DraftToolCall(ToolCall, frozen=False):  # type: ignore[misc]
    """A tool call whose arguments are still being streamed."""

    id: str
    name: str
    arguments: dict[str, Any]
    thought_signature: str | None = None
    arguments_error: str | None = None


class DraftAssistantMessage(AssistantMessage, frozen=False):  # type: ignore[misc]
    """A reply a provider is still assembling from its stream: the one kind of message that changes. The
    streaming events carry it as their ``partial``; the final event carries ``freeze(draft)``."""

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
    error_status: int | None = None
    retry_after_ms: int | None = None


_FROZEN_BLOCK: dict[type, type[TextContent | ThinkingContent | ToolCall]] = {
    DraftTextContent: TextContent,
    DraftThinkingContent: ThinkingContent,
    DraftToolCall: ToolCall,
}


def _frozen_block(block: AssistantContent) -> AssistantContent:
    kind = _FROZEN_BLOCK.get(type(block))
    if kind is None:
        return block
    frozen: AssistantContent = kind(**{name: getattr(block, name) for name in block.__struct_fields__})
    return frozen


def freeze(message: AssistantMessage) -> AssistantMessage:
    """The finished reply as a plain, frozen ``AssistantMessage`` (its draft blocks frozen too); a message
    that is frozen already comes back as it is."""
    if type(message) is AssistantMessage and not any(type(b) in _FROZEN_BLOCK for b in message.content):
        return message
    fields = {name: getattr(message, name) for name in message.__struct_fields__}
    fields["content"] = [_frozen_block(b) for b in message.content]
    return AssistantMessage(**fields)


class ToolResultMessage(_Struct, tag_field="role", tag="toolResult", frozen=True):
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    is_error: bool = False
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    timestamp: int | float = field(default_factory=now_ms)
    role: ClassVar[Literal["toolResult"]] = "toolResult"


# --------------------------------------------------------------------------------------------------
# Messages: the host roles (projected to user messages before a provider call)


class BashExecutionMessage(_Struct, tag_field="role", tag="bashExecution", frozen=True):
    """A shell command the user ran with ``!cmd`` (``!!cmd`` sets ``exclude_from_context``)."""

    command: str
    output: str
    exit_code: int | None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int | float = field(default_factory=now_ms)
    role: ClassVar[Literal["bashExecution"]] = "bashExecution"


class CustomMessage(_Struct, tag_field="role", tag="custom", frozen=True):
    """A message an extension injected; sent to the model as a user message."""

    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int | float = field(default_factory=now_ms)
    role: ClassVar[Literal["custom"]] = "custom"


class BranchSummaryMessage(_Struct, tag_field="role", tag="branchSummary", frozen=True):
    summary: str
    from_id: str
    timestamp: int | float = field(default_factory=now_ms)
    role: ClassVar[Literal["branchSummary"]] = "branchSummary"


class CompactionSummaryMessage(_Struct, tag_field="role", tag="compactionSummary", frozen=True):
    summary: str
    tokens_before: int
    timestamp: int | float = field(default_factory=now_ms)
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
#
# Decoding tries msgspec's strict typed conversion first (fast) and falls back to a lenient reader that
# accepts what older or hand-edited Pi files contain (null content, numbers as strings, missing fields).
# Encoding is explicit so that the fields Pi always writes (``isError: false``, ``parentId: null``, ...)
# are always written, and optional ones only when set.


class MessageFormatError(SessionStoreError, ValueError):
    """A JSON object that is not a valid Pi message or content block."""


def block_from_json(d: Any) -> ContentBlock:
    if not isinstance(d, dict):
        raise MessageFormatError(f"content block must be an object, got {type(d).__name__}")
    kind = d.get("type")
    if kind == "text":
        return TextContent(str(d.get("text", "")), d.get("textSignature"))
    if kind == "toolCall":
        args = d.get("arguments")
        return ToolCall(
            str(d.get("id", "")),
            str(d.get("name", "")),
            args if isinstance(args, dict) else {},
            d.get("thoughtSignature"),
        )
    if kind == "thinking":
        return ThinkingContent(str(d.get("thinking", "")), d.get("thinkingSignature"), d.get("redacted"))
    if kind == "image":
        return ImageContent(str(d.get("data", "")), str(d.get("mimeType", "")))
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


def _num(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def usage_from_json(d: Any) -> Usage:
    if not isinstance(d, dict):
        return Usage()
    c = d.get("cost")
    cost = (
        Cost(
            _num(c.get("input")),
            _num(c.get("output")),
            _num(c.get("cacheRead")),
            _num(c.get("cacheWrite")),
            _num(c.get("total")),
        )
        if isinstance(c, dict)
        else Cost()
    )
    return Usage(
        _num(d.get("input")),
        _num(d.get("output")),
        _num(d.get("cacheRead")),
        _num(d.get("cacheWrite")),
        _num(d.get("totalTokens")),
        cost,
        d.get("cacheWrite1h"),
        d.get("reasoning"),
        True if d.get("estimated") is True else None,
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
    c = u.cost
    out["cost"] = {
        "input": c.input,
        "output": c.output,
        "cacheRead": c.cache_read,
        "cacheWrite": c.cache_write,
        "total": c.total,
    }
    if u.estimated:
        out["estimated"] = True
    return out


def _lenient_message(d: dict[str, Any]) -> AgentMessage:
    role = d.get("role")
    ts = _num(d.get("timestamp"))
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
        )
    if role == "user":
        return UserMessage(content_from_json(d.get("content")), ts)
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
        )
    if role in ("custom", "hookMessage"):  # "hookMessage" is session format v2's name
        return CustomMessage(
            custom_type=str(d.get("customType", "")),
            content=content_from_json(d.get("content")),
            display=bool(d.get("display", True)),
            details=d.get("details"),
            timestamp=ts,
        )
    if role == "bashExecution":
        code = d.get("exitCode")
        return BashExecutionMessage(
            command=str(d.get("command", "")),
            output=str(d.get("output", "")),
            exit_code=code if isinstance(code, int) else None,
            cancelled=bool(d.get("cancelled", False)),
            truncated=bool(d.get("truncated", False)),
            full_output_path=d.get("fullOutputPath"),
            exclude_from_context=d.get("excludeFromContext"),
            timestamp=ts,
        )
    if role == "branchSummary":
        return BranchSummaryMessage(str(d.get("summary", "")), str(d.get("fromId", "")), ts)
    if role == "compactionSummary":
        return CompactionSummaryMessage(str(d.get("summary", "")), int(_num(d.get("tokensBefore"))), ts)
    raise MessageFormatError(f"unknown message role {role!r}")


def message_from_json(d: Any) -> AgentMessage:
    """Decode one message object as Pi writes it. Raises ``MessageFormatError`` on a bad shape."""
    if not isinstance(d, dict):
        raise MessageFormatError(f"message must be an object, got {type(d).__name__}")
    try:
        message: AgentMessage = msgspec.convert(d, AgentMessage)
        return message
    except msgspec.ValidationError:
        return _lenient_message(d)


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
        out = {"role": "toolResult", "toolCallId": m.tool_call_id, "toolName": m.tool_name}
        out["content"] = content_to_json(m.content)
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
        out = {"role": "bashExecution", "command": m.command, "output": m.output, "exitCode": m.exit_code}
        out["cancelled"] = m.cancelled
        out["truncated"] = m.truncated
        if m.full_output_path is not None:
            out["fullOutputPath"] = m.full_output_path
        if m.exclude_from_context is not None:
            out["excludeFromContext"] = m.exclude_from_context
        out["timestamp"] = m.timestamp
    elif isinstance(m, BranchSummaryMessage):
        out = {"role": "branchSummary", "summary": m.summary, "fromId": m.from_id, "timestamp": m.timestamp}
    else:
        out = {"role": "compactionSummary", "summary": m.summary, "tokensBefore": m.tokens_before}
        out["timestamp"] = m.timestamp
    return out


_copy_encoder = msgspec.msgpack.Encoder()
_copy_decoder = msgspec.msgpack.Decoder(list[AgentMessage])


def copy_messages(messages: list[AgentMessage]) -> list[AgentMessage]:
    """Deep copies (the ``context`` event hands extensions copies, never the agent's own objects)."""
    return _copy_decoder.decode(_copy_encoder.encode(messages))


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
