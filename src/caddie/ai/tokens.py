"""Token estimates: the one place caddie guesses how many tokens something takes. No tokenizer: ~4
characters per token, anchored on provider-reported usage where there is some.

Two counts live here, because two references must be matched:

- **the host's** (Pi's ``estimateTokens``/``estimateContextTokens``, for compaction and the context
  meter): characters of what a message puts in the context, an image as 4,800 characters, rounded up per
  message; ``estimate_request_tokens`` sizes a whole provider request (system prompt and tools included)
  the same way, to keep the output cap inside the context window;
- **pi-mulligan's** (``*_utf16``, for the mulligan extension's budgets, nudges and audit): characters are
  JavaScript string lengths (UTF-16 code units), an image counts its base64 length, messages without
  ``content`` count nothing, and a list is summed before dividing, so its numbers equal the TypeScript
  original's. ``Utf16TokenCounter`` is the same count, memoised for mulligan's per-inference hot path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from caddie.ai.model import Context
from caddie.jscompat import utf8_len, utf16_len

CHARS_PER_TOKEN = 4

# --------------------------------------------------------------------------------------------------
# The host's estimate (Pi's compaction estimator)

IMAGE_CHARS = 4800
"""An image counts as 4,800 characters (about 1,200 tokens), as in Pi."""


def _content_chars(content: str | Sequence[object]) -> int:
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content:
        if isinstance(block, TextContent):
            total += len(block.text)
        elif isinstance(block, ThinkingContent):
            total += len(block.thinking)
        elif isinstance(block, ToolCall):
            total += len(block.name) + len(
                json.dumps(block.arguments, ensure_ascii=False, separators=(",", ":"))
            )
        elif isinstance(block, ImageContent):
            total += IMAGE_CHARS
    return total


def estimate_message_tokens(message: AgentMessage) -> int:
    """ceil(chars / 4) of what the message puts in the context (Pi's ``estimateTokens``)."""
    if isinstance(message, BashExecutionMessage):
        chars = len(message.command) + len(message.output)
    elif isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        chars = len(message.summary)
    elif isinstance(message, CustomMessage):
        chars = _content_chars(message.content)
    else:
        chars = _content_chars(message.content)
    return -(-chars // CHARS_PER_TOKEN)


def context_tokens_of_usage(usage: Usage) -> int:
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def _usable(message: AgentMessage) -> bool:
    return (
        isinstance(message, AssistantMessage)
        and message.stop_reason not in ("error", "aborted")
        and context_tokens_of_usage(message.usage) > 0
    )


def estimate_context_tokens(messages: Sequence[AgentMessage]) -> int:
    """The last usable reported usage plus estimates of every message after it (Pi's estimateContextTokens)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if _usable(message):
            assert isinstance(message, AssistantMessage)
            return context_tokens_of_usage(message.usage) + sum(
                estimate_message_tokens(m) for m in messages[index + 1 :]
            )
    return sum(estimate_message_tokens(m) for m in messages)


def context_estimate_rests_on_estimate(messages: Sequence[AgentMessage]) -> bool:
    """Whether ``estimate_context_tokens(messages)`` is anchored on a usage caddie estimated (the model's
    server reported none: ``Usage.estimated``), so a figure built on it is shown with "≈"."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if _usable(message):
            assert isinstance(message, AssistantMessage)
            return message.usage.estimated is True
    return False


def content_chars(message: LlmMessage) -> int:
    """The characters a user, assistant or tool-result message's content counts for."""
    return _content_chars(message.content)


def estimate_request_tokens(
    context: Context, message_chars: Callable[[LlmMessage], int] = content_chars
) -> int:
    """Rough size of a provider request: system prompt, messages and tool definitions, counted as above
    (``message_chars`` counts one message: a memo of ``content_chars`` may stand in for it)."""
    chars = len(context.system_prompt or "")
    chars += sum(map(message_chars, context.messages))
    for tool in context.tools or []:
        chars += len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
    return math.ceil(chars / CHARS_PER_TOKEN)


# --------------------------------------------------------------------------------------------------
# pi-mulligan's estimate (JavaScript string lengths), for the mulligan extension


def _arguments_chars(arguments: object) -> int:
    try:
        return utf16_len(json.dumps(arguments, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError):
        return 0


def utf16_message_chars(message: object, arguments_chars: Callable[[ToolCall], int] | None = None) -> int:
    """UTF-16 code units a message carries: string content, or text/thinking/tool-call blocks (an image
    counts its base64 length); messages without ``content`` (bash executions, summaries) count 0."""
    # Hot path (every inference, every message): exact-type dispatch and an inlined ASCII fast path.
    content = getattr(message, "content", None)
    if content.__class__ is str:
        return len(content) if content.isascii() else utf16_len(content)
    if content.__class__ is not list:
        return 0
    n = 0
    for block in content:
        kind = block.__class__
        if kind is TextContent:
            text = block.text
            n += len(text) if text.isascii() else utf16_len(text)
        elif kind is ToolCall:
            args = _arguments_chars(block.arguments) if arguments_chars is None else arguments_chars(block)
            n += utf16_len(block.name) + args
        elif kind is ThinkingContent:
            n += utf16_len(block.thinking)
        elif kind is ImageContent:
            n += len(block.data)
        elif isinstance(block, TextContent):
            n += utf16_len(block.text)
        elif isinstance(block, ToolCall):
            args = _arguments_chars(block.arguments) if arguments_chars is None else arguments_chars(block)
            n += utf16_len(block.name) + args
        elif isinstance(block, ThinkingContent):
            n += utf16_len(block.thinking)
        elif isinstance(block, ImageContent):
            n += len(block.data)
    return n


def estimate_tokens_utf16(messages: Iterable[object]) -> int:
    """``ceil(total characters / 4)`` over the whole list (summed first, divided once)."""
    return math.ceil(sum(utf16_message_chars(m) for m in messages) / CHARS_PER_TOKEN)


def estimate_message_tokens_utf16(message: object) -> int:
    return math.ceil(utf16_message_chars(message) / CHARS_PER_TOKEN)


class Utf16TokenCounter:
    """``estimate_tokens_utf16`` for the per-inference hot path (same result, several times faster).

    Serialising tool-call arguments is most of the cost of an estimate, and a call's arguments never change
    once it is made, so their length is memoised by call id (checked against the tool name and a cheap
    fingerprint of the arguments, so a reused id with other arguments is counted afresh). Call ids identify calls within a session (providers make them unique and results pair by them);
    one counter per session. The loop is flat: no function call per message.
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._limit = limit
        self._arguments: dict[str, tuple[str, tuple[int, int], int]] = {}
        self._previous: list[object] = []
        self._previous_chars = 0

    def _arguments_chars(self, block: ToolCall) -> int:
        args = block.arguments
        shape = _shape(args)
        hit = self._arguments.get(block.id)
        if hit is not None and hit[0] == block.name and hit[1] == shape:
            return hit[2]
        n = _arguments_chars(args)
        if block.id:
            if len(self._arguments) >= self._limit:
                self._arguments.clear()
            self._arguments[block.id] = (block.name, shape, n)
        return n

    def estimate(self, messages: Iterable[object]) -> int:
        """``estimate_tokens_utf16(messages)``."""
        return math.ceil(self.chars(messages) / CHARS_PER_TOKEN)

    def chars_extending(self, messages: list[Any]) -> int:
        """``chars(messages)``, reusing the previous call's count when ``messages`` starts with the previous list.

        A conversation mostly grows at its end between inferences, so each fire only counts what is new. The
        prefix is compared by value (message equality), so any change earlier in the list means a full count.
        """
        previous = self._previous
        k = len(previous)
        if 0 < k <= len(messages) and messages[:k] == previous:
            n = self._previous_chars + self.chars(messages[k:])
        else:
            n = self.chars(messages)
        self._previous, self._previous_chars = list(messages), n
        return n

    def chars(self, messages: Iterable[object]) -> int:
        """Characters of ``messages``, as ``utf16_message_chars`` counts them."""
        n = 0
        arguments = self._arguments
        for message in messages:
            content: Any = getattr(message, "content", None)
            kind = content.__class__
            if kind is str:
                n += len(content) if content.isascii() else utf16_len(content)
            elif kind is list:
                for block in content:
                    btype = block.__class__
                    if btype is TextContent:
                        text = block.text
                        n += len(text) if text.isascii() else utf16_len(text)
                    elif btype is ToolCall:
                        name = block.name
                        hit = arguments.get(block.id)
                        if hit is not None and hit[0] == name and hit[1] == _shape(block.arguments):
                            n += (len(name) if name.isascii() else utf16_len(name)) + hit[2]
                        else:
                            n += utf16_len(name) + self._arguments_chars(block)
                    else:
                        n += utf16_message_chars(_Blocks([block]), self._arguments_chars)
        return n


def _shape(args: object) -> tuple[int, int]:
    """A cheap fingerprint of a call's arguments (key count, total length of its string values), so a reused
    call id with other arguments is counted afresh rather than from the memo."""
    if not isinstance(args, dict):
        return (-1, 0)
    return (len(args), sum(len(v) for v in args.values() if isinstance(v, str)))


class _Blocks:
    """A message-shaped holder of blocks, to reuse ``utf16_message_chars`` for the rarer block kinds."""

    __slots__ = ("content",)

    def __init__(self, content: list[Any]) -> None:
        self.content = content


def result_bytes(content: object) -> int:
    """In-context bytes of a tool result: UTF-8 bytes of text blocks plus the base64 length of images."""
    if not isinstance(content, list):
        return 0
    n = 0
    for block in content:
        if isinstance(block, TextContent):
            n += utf8_len(block.text)
        elif isinstance(block, ImageContent):
            n += len(block.data)
    return n


def message_bytes(message: object) -> int:
    """Bytes of a message's content: UTF-8 of a string, else ``result_bytes`` of its blocks."""
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return utf8_len(content)
    return result_bytes(content)


def approx_tokens(num_bytes: float) -> int:
    """``ceil(bytes / 4)``; negative or non-finite byte counts give 0."""
    if not math.isfinite(num_bytes) or num_bytes < 0:
        return 0
    return math.ceil(num_bytes / CHARS_PER_TOKEN)
