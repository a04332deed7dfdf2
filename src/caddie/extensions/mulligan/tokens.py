"""Token and byte estimates for messages: characters / 4, counted the way the TypeScript original counts.

No tokenizer: the estimate only has to rank messages and compare a context against its window. Characters
are UTF-16 code units (JavaScript ``string.length``); bytes are UTF-8 (``Buffer.byteLength``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

from caddie.extensions.api import (
    AgentMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserMessage,
    utf8_len,
    utf16_len,
)

CHARS_PER_TOKEN = 4
TokenConfidence: TypeAlias = Literal["low", "medium", "high"]


def _arguments_chars(arguments: object) -> int:
    try:
        return utf16_len(json.dumps(arguments, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError):
        return 0


def message_chars(message: object, arguments_chars: Callable[[ToolCall], int] | None = None) -> int:
    """Characters a message carries: string content, or text/thinking/tool-call/image blocks."""
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


def estimate_tokens(messages: Iterable[object]) -> int:
    """``ceil(total characters / 4)`` over the whole list (summed first, divided once)."""
    return math.ceil(sum(message_chars(m) for m in messages) / CHARS_PER_TOKEN)


def estimate_message_tokens(message: object) -> int:
    return math.ceil(message_chars(message) / CHARS_PER_TOKEN)


class TokenCounter:
    """``estimate_tokens`` for the per-inference hot path (same result, several times faster).

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
        """``estimate_tokens(messages)``."""
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
        """Characters of ``messages``, as ``message_chars`` counts them."""
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
                        n += message_chars(_Blocks([block]), self._arguments_chars)
        return n


def _shape(args: object) -> tuple[int, int]:
    """A cheap fingerprint of a call's arguments (key count, total length of its string values), so a reused
    call id with other arguments is counted afresh rather than from the memo."""
    if not isinstance(args, dict):
        return (-1, 0)
    return (len(args), sum(len(v) for v in args.values() if isinstance(v, str)))


class _Blocks:
    """A message-shaped holder of blocks, to reuse ``message_chars`` for the rarer block kinds."""

    __slots__ = ("content",)

    def __init__(self, content: list[Any]) -> None:
        self.content = content


def estimate_agent_tokens(messages: Sequence[AgentMessage]) -> int:
    """The agent-attributable share: per-message estimates of every message that is not a user message."""
    return sum(estimate_message_tokens(m) for m in messages if not isinstance(m, UserMessage))


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
