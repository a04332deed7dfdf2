"""Thinking levels a model offers, their token budgets, and the output cap the context window leaves."""

from __future__ import annotations

from collections.abc import Mapping

from caddie.ai.conversion_cache import cached_conversion
from caddie.ai.messages import AssistantMessage
from caddie.ai.model import THINKING_LEVELS, Context, Model, ThinkingLevel
from caddie.ai.tokens import (
    content_chars,
    context_tokens_of_usage,
    estimate_message_tokens,
    estimate_request_tokens,
)

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
MIN_ANSWER_TOKENS = 1024


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """The levels a model offers: only ``off`` for non-reasoning models; ``xhigh``/``max`` only when mapped."""
    if not model.reasoning:
        return ["off"]
    mapping = model.thinking_level_map or {}
    levels: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        levels.append(level)
    return levels


def clamp_thinking_level(model: Model, level: ThinkingLevel | str | None) -> ThinkingLevel:
    """The nearest level the model supports (upwards first, then downwards); ``off`` for None."""
    available = supported_thinking_levels(model)
    if level is None:
        level = "off"
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def thinking_budget(level: ThinkingLevel, custom: Mapping[str, int] | None = None) -> int:
    """Token budget for budget-based thinking (``xhigh``/``max`` use the ``high`` budget); ``custom``:
    settings ``thinkingBudgets``, over the defaults."""
    key = "high" if level in ("xhigh", "max") else level
    if custom and key in custom:
        return custom[key]
    return THINKING_BUDGETS.get(key, THINKING_BUDGETS["medium"])


def context_tokens(context: Context) -> int:
    """What the request will hold, as Pi estimates it: the last reported usage plus estimates of the
    messages after it (only the tail is walked, so the cost does not grow with the conversation); the
    whole request by characters when no usage was reported yet (each message's count then kept in
    ``context.conversion_cache``, when there is one)."""
    messages = context.messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if (
            isinstance(message, AssistantMessage)
            and message.stop_reason not in ("error", "aborted")
            and context_tokens_of_usage(message.usage) > 0
        ):
            return context_tokens_of_usage(message.usage) + sum(
                estimate_message_tokens(m) for m in messages[index + 1 :]
            )
    cache = context.conversion_cache
    if cache is None:
        return estimate_request_tokens(context)
    scope = cache.scope("content-chars")
    return estimate_request_tokens(
        context, lambda message: int(cached_conversion(scope, message, content_chars))
    )


def clamp_max_tokens(model: Model, context: Context, max_tokens: int) -> int:
    """Keep the output cap inside what the context window leaves free, less a safety margin for the estimate:
    4,096 tokens as in Pi, but at most a quarter of the window. Pi's fixed margin is the same from 16,384
    tokens up; on the small windows local servers run with (Ollama's default 4,096, a llama.cpp ``-c 8192``)
    it left a cap of 1 token once the system prompt and tools were in, and every answer stopped after a word."""
    window = model.context_window
    if window <= 0:
        return max(1, max_tokens)
    available = window - context_tokens(context) - min(4096, window // 4)
    return min(max_tokens, max(1, available))
