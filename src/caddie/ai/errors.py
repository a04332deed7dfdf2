"""What a failed assistant message means: retry it, compact the context, or stop and tell the user.

Pure functions over ``AssistantMessage`` (and small helpers the providers share to build error text):
``is_retryable``, ``is_context_overflow``, ``usage_limit_kind``, ``classify``, ``retry_delay_ms``,
``parse_retry_after``, ``redact_secrets``. They read ``error_status`` when the provider set it, and fall
back to the wording of ``error_message`` (which is all a message reloaded from a session file has).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal, TypeAlias

from caddie.ai import secrets
from caddie.ai.messages import AssistantMessage, Usage

ErrorKind: TypeAlias = Literal["none", "aborted", "context_overflow", "usage_limit", "retryable", "fatal"]
UsageLimitKind: TypeAlias = Literal["rate", "quota", "billing"]

# --------------------------------------------------------------------------------------------------
# Context overflow

_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",  # Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
        r"request_too_large",  # Anthropic byte-size limit (413)
        r"input is too long for requested model",  # Bedrock
        r"exceeds the context window",  # OpenAI
        r"exceeds (?:the )?(?:model'?s )?maximum context length",  # OpenAI-compatible proxies
        r"maximum context length is \d+ tokens",  # OpenAI classic / OpenRouter
        r"context_length_exceeded|context length exceeded",  # OpenAI error code, generic
        r"input token count.*exceeds the maximum",  # Gemini
        r"maximum prompt length is \d+",  # xAI
        r"reduce the length of the messages",  # Groq
        r"exceeds (?:the )?maximum allowed input length",  # OpenRouter backends
        r"is longer than the model'?s context length",  # Together
        r"exceeds the available context size",  # llama.cpp server
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi
        r"too large for model with \d+ maximum context length",  # Mistral
        r"configured context size is [\d,]+ tokens",  # DS4-style servers
        r"model_context_window_exceeded",  # z.ai
        r"prompt too long; exceeded (?:max )?context length",  # Ollama
        r"range of input length should be",  # DashScope / Qwen
        r"too many tokens",
        r"token limit exceeded",
    )
)
_NOT_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE) for p in (r"rate.?limit", r"too many requests", r"throttl")
)


def is_silent_overflow(usage: Usage, context_window: int) -> bool:
    """A provider that accepted more input than the window (it truncated silently): input+cache reads exceed it."""
    return context_window > 0 and usage.input + usage.cache_read > context_window


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether ``message`` failed (or silently degraded) because the context no longer fits the model.

    Recognises the common providers' "context length exceeded" errors; with ``context_window`` also a
    successful reply whose reported input is larger than the window, and a ``length`` stop with no output
    whose input filled the window.
    """
    text = message.error_message or ""
    if message.stop_reason == "error" and text:
        if not any(p.search(text) for p in _NOT_OVERFLOW_PATTERNS) and any(
            p.search(text) for p in _OVERFLOW_PATTERNS
        ):
            return True
        if message.error_status == 413:
            return True
    if context_window:
        if message.stop_reason == "stop" and is_silent_overflow(message.usage, context_window):
            return True
        if message.stop_reason == "length" and message.usage.output == 0:
            return message.usage.input + message.usage.cache_read >= context_window * 0.99
    return False


# --------------------------------------------------------------------------------------------------
# Usage limits: rate (wait and retry), quota and billing (a person must act)

_QUOTA_PATTERN = re.compile(
    r"insufficient_quota|quota exceeded|exceeded your current quota|usage limit|out of budget|"
    r"spend limit|monthly limit|GoUsageLimitError|FreeUsageLimitError",
    re.IGNORECASE,
)
_BILLING_PATTERN = re.compile(
    r"billing|payment required|credit balance|insufficient (?:credits|balance|funds)|add credits|"
    r"available balance",
    re.IGNORECASE,
)
_RATE_PATTERN = re.compile(r"rate.?limit|too many requests|\b429\b|throttl", re.IGNORECASE)


def usage_limit_kind(message: AssistantMessage) -> UsageLimitKind | None:
    """``rate`` (slow down, retry later), ``quota`` or ``billing`` (retrying will not help), or None.

    402 is billing; a 429 that mentions a quota (OpenAI's ``insufficient_quota``) is quota; any other 429
    or rate-limit wording is rate.
    """
    if message.stop_reason != "error":
        return None
    text = message.error_message or ""
    status = message.error_status
    if status == 402 or _BILLING_PATTERN.search(text):
        return "billing"
    if _QUOTA_PATTERN.search(text):
        return "quota"
    if status == 429 or _RATE_PATTERN.search(text):
        return "rate"
    return None


# --------------------------------------------------------------------------------------------------
# Retryable failures

_RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_RETRYABLE_PATTERN = re.compile(
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|524|529)\b|service.?unavailable|"
    r"server.?error|internal.?error|provider.?returned.?error|network.?error|connection.?(?:error|refused|lost|reset|closed)|"
    r"other side closed|fetch failed|getaddrinfo|ENOTFOUND|EAI_AGAIN|upstream.?connect|reset before headers|"
    r"socket hang up|timed? ?out|timeout|stalled|terminated|ended without|ended before|"
    r"try (?:your request )?again|please retry|ResourceExhausted",
    re.IGNORECASE,
)


RETRY_DELAY_EXCEEDED = re.compile(r"^Server requested \d+s retry delay \(max: \d+s\)\. ")
"""The start of an error whose server asked for a longer wait than ``retry.provider.maxRetryDelayMs``."""


def retry_delay_exceeded_text(retry_after_ms: int, max_delay_ms: int, provider_text: str) -> str:
    """Pi's wording for a server-requested wait over the limit (seconds rounded up)."""
    wait, limit = -(-retry_after_ms // 1000), -(-max_delay_ms // 1000)
    return f"Server requested {wait}s retry delay (max: {limit}s). {provider_text}"


def is_retryable(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether retrying the same request later may succeed: overload (529), rate limits (429), 5xx,
    dropped connections and stalled streams. Never for context overflow, quota or billing errors, aborts,
    other 4xx errors (a bad key, a bad request), or a server that asked for a longer wait than the limit."""
    if message.stop_reason != "error":
        return False
    if RETRY_DELAY_EXCEEDED.match(message.error_message or ""):
        return False
    if is_context_overflow(message, context_window):
        return False
    kind = usage_limit_kind(message)
    if kind in ("quota", "billing"):
        return False
    if kind == "rate":
        return True
    status = message.error_status
    if status is not None:
        if status in _RETRYABLE_STATUSES or status >= 500:
            return True
        if 400 <= status < 500:
            return False
    return bool(message.error_message) and bool(_RETRYABLE_PATTERN.search(message.error_message or ""))


@dataclass(frozen=True, slots=True)
class ErrorClass:
    """The verdict on one assistant message."""

    kind: ErrorKind
    usage_limit: UsageLimitKind | None = None
    status: int | None = None
    retry_after_ms: int | None = None


def classify(message: AssistantMessage, context_window: int | None = None) -> ErrorClass:
    """One call for the session's retry logic: what kind of failure (if any) ``message`` is.

    ``context_overflow`` wins over everything (compaction handles it); a quota/billing limit is
    ``usage_limit`` (stop and tell the user); ``retryable`` covers rate limits, overload, 5xx and dropped
    or stalled connections; anything else that failed is ``fatal``. A successful reply that silently
    overflowed the window (with ``context_window``) is ``context_overflow`` too.
    """
    limit = usage_limit_kind(message)

    def verdict(kind: ErrorKind, usage_limit: UsageLimitKind | None = None) -> ErrorClass:
        return ErrorClass(kind, usage_limit, message.error_status, message.retry_after_ms)

    if message.stop_reason == "aborted":
        return verdict("aborted")
    if is_context_overflow(message, context_window):
        return verdict("context_overflow")
    if message.stop_reason != "error":
        return ErrorClass("none")
    if limit in ("quota", "billing"):
        return verdict("usage_limit", limit)
    if is_retryable(message, context_window):
        return verdict("retryable", limit)
    return verdict("fatal", limit)


def retry_delay_ms(
    attempt: int, base_delay_ms: int = 2000, max_delay_ms: int = 60_000, retry_after_ms: int | None = None
) -> int:
    """How long to wait before retry number ``attempt`` (1-based).

    Exponential ``base_delay_ms * 2**(attempt-1)``, unless the server said how long to wait
    (``retry_after_ms``), which wins. Either is capped at ``max_delay_ms`` (``<= 0`` means no cap).
    """
    if retry_after_ms is not None and retry_after_ms >= 0:
        delay = retry_after_ms
    else:
        delay = base_delay_ms * 2 ** max(0, attempt - 1)
    if max_delay_ms > 0:
        delay = min(delay, max_delay_ms)
    return max(0, int(delay))


# --------------------------------------------------------------------------------------------------
# Helpers the providers share


def parse_retry_after(headers: Mapping[str, str], now_s: float | None = None) -> int | None:
    """Milliseconds from ``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date; None if absent."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0, int(float(raw_ms)))
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if not raw:
        return None
    try:
        return max(0, int(float(raw) * 1000))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    now = time.time() if now_s is None else now_s
    return max(0, int((when.timestamp() - now) * 1000))


REDACTED = secrets.REDACTED


def redact_secrets(text: str, extra: Iterable[str | None] = ()) -> str:
    """``text`` with every secret the process knows (``caddie.ai.secrets``), each of ``extra``, and anything
    shaped like a well-known API key replaced by ``[redacted]``."""
    return secrets.redact(text, extra)
