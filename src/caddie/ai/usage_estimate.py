"""Usage for replies whose provider reported none: caddie's estimate, marked as one.

Some servers stream no token usage at all (llama-cpp-python's OpenAI-compatible server; older LM Studio
and Ollama builds; proxies that drop the final usage chunk). A reply that records 0 tokens blinds
everything that counts them — goal budgets, batch totals, compaction, mulligan, the footer, ``/context`` —
so ``caddie.ai.stream.stream`` hands every finished reply to ``fill_missing_usage``: when the provider
reported no usage, the reply is replaced by one with an estimate, ``usage.estimated`` true (stored as
``"estimated": true`` in the message's usage; Pi ignores the field). A reply with reported usage is left
exactly as it was.

The numbers come, best first, from:

1. the server's own tokenizer, when the model is on a local server that has one and the reply finished (an
   aborted or failed one is never kept waiting on a server that may still be busy with it)
   (``caddie.ai.server_tokens``: llama.cpp's ``/tokenize``, vLLM's ``/tokenize``, llama-cpp-python's
   ``/extras/tokenize/count``) — exact counts of the request's and the reply's text, without the chat
   template's few tokens per message;
2. otherwise ``caddie.ai.tokens``: about four characters per token of what the request carried (system
   prompt, messages, tool definitions) and of what the reply holds.

Input and output are both estimated (cost too, at the model's prices); cache reads and writes stay 0.
"""

from __future__ import annotations

import math

from caddie.ai.messages import AssistantMessage, Usage, replace
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers.cost import finish_usage
from caddie.ai.tokens import CHARS_PER_TOKEN, content_chars, estimate_request_tokens

__all__ = [
    "estimated_usage",
    "fill_missing_usage",
    "is_estimated",
    "needs_estimate",
    "usage_reported",
]


def usage_reported(usage: Usage) -> bool:
    """Whether a provider put any token count in ``usage``."""
    return bool(usage.input or usage.output or usage.cache_read or usage.cache_write or usage.total_tokens)


def is_estimated(usage: Usage | None) -> bool:
    """Whether ``usage`` holds caddie's estimate rather than the provider's numbers."""
    return usage is not None and usage.estimated is True


def needs_estimate(message: AssistantMessage) -> bool:
    """A reply the provider reported no usage for, which the server did work on: every finished reply, and a
    failed or aborted one that produced content (one that failed before any output may never have reached
    the model)."""
    if usage_reported(message.usage):
        return False
    if message.stop_reason in ("error", "aborted"):
        return bool(message.content)
    return True


def reply_chars(message: AssistantMessage) -> int:
    """Characters of what the reply holds: text, thinking, tool calls (name and arguments)."""
    return content_chars(message)


def estimated_usage(model: Model, input_tokens: int, output_tokens: int) -> Usage:
    """A usage marked as estimated, with its totals and cost at the model's prices."""
    usage = Usage(input=max(0, input_tokens), output=max(0, output_tokens), estimated=True)
    return finish_usage(model, usage)


async def fill_missing_usage(
    model: Model, context: Context, options: StreamOptions, message: AssistantMessage
) -> AssistantMessage:
    """``message`` with an estimated usage when its provider reported none (see the module docstring);
    otherwise ``message`` itself. Messages are frozen: the estimate is a new message."""
    if not needs_estimate(message):
        return message
    from caddie.ai.server_tokens import count_with_server  # only for servers that report no usage

    # After an abort or a failure the server may still be busy with the request: no waiting on it.
    finished = message.stop_reason not in ("aborted", "error")
    counted = await count_with_server(model, context, message, options) if finished else None
    if counted is not None:
        input_tokens, output_tokens = counted
    else:
        input_tokens = estimate_request_tokens(context)
        output_tokens = math.ceil(reply_chars(message) / CHARS_PER_TOKEN)
    return replace(message, usage=estimated_usage(model, input_tokens, output_tokens))
