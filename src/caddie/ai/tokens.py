"""Token estimates: provider-reported usage where there is some, ~4 characters per token for the rest."""

from __future__ import annotations

import json
from collections.abc import Sequence

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

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
    """ceil(chars / 4) of what the message puts in the context."""
    if isinstance(message, BashExecutionMessage):
        chars = len(message.command) + len(message.output)
    elif isinstance(message, BranchSummaryMessage | CompactionSummaryMessage):
        chars = len(message.summary)
    elif isinstance(message, CustomMessage):
        chars = _content_chars(message.content)
    else:
        chars = _content_chars(message.content)
    return -(-chars // 4)


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
