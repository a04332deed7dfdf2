"""Classification of failed assistant messages and retry delays (caddie.ai.errors)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from caddie.ai.errors import (
    classify,
    is_context_overflow,
    is_retryable,
    is_silent_overflow,
    parse_retry_after,
    redact_secrets,
    retry_delay_ms,
    usage_limit_kind,
)
from caddie.ai.messages import AssistantMessage, StopReason, Usage


def failed(
    text: str | None, status: int | None = None, stop: StopReason = "error", **kw: object
) -> AssistantMessage:
    return AssistantMessage(
        content=[],
        api="x",
        provider="p",
        model="m",
        stop_reason=stop,
        error_message=text,
        error_status=status,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    "text",
    [
        "400 Bad Request: prompt is too long: 213462 tokens > 200000 maximum",
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130001 tokens.",
        "Your input exceeds the context window of this model",
        "the request exceeds the available context size, try increasing it",
        "tokens to keep from the initial prompt is greater than the context length",
        "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
        "Please reduce the length of the messages or completion",
        "prompt too long; exceeded max context length by 100 tokens",
        "Error: context_length_exceeded",
    ],
)
def test_context_overflow_messages_of_common_providers_are_recognised(text: str) -> None:
    assert is_context_overflow(failed(text, 400))
    assert classify(failed(text, 400)).kind == "context_overflow"


def test_rate_limit_text_is_not_mistaken_for_overflow() -> None:
    assert not is_context_overflow(failed("Rate limit: too many tokens per minute", 429))


def test_silent_overflow_is_input_plus_cache_reads_above_the_window() -> None:
    ok = failed(None, stop="stop", usage=Usage(input=90_000, cache_read=20_000))
    assert is_silent_overflow(ok.usage, 100_000)
    assert is_context_overflow(ok, context_window=100_000)
    assert not is_context_overflow(ok, context_window=200_000)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("429 Too Many Requests: Rate limit reached", 429),
        ("500 Internal Server Error: boom", 500),
        ("502 Bad Gateway", 502),
        ("529 Overloaded: Overloaded (overloaded_error)", 529),
        ("Connection lost: the server closed the stream before the reply finished", None),
        ("Request timed out: the server at http://x stalled (no data for 5s).", None),
        ("The provider reported an error mid-response: Overloaded", None),
    ],
)
def test_transient_failures_are_retryable(text: str, status: int | None) -> None:
    assert is_retryable(failed(text, status))
    assert classify(failed(text, status)).kind == "retryable"


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("401 Unauthorized: invalid x-api-key", 401),
        ("400 Bad Request: messages: field required", 400),
        ("404 Not Found: model not found", 404),
        ("prompt is too long: 300000 tokens > 200000 maximum", 400),
    ],
)
def test_permanent_failures_are_not_retryable(text: str, status: int) -> None:
    assert not is_retryable(failed(text, status))


def test_aborted_and_successful_messages_are_never_retryable() -> None:
    assert not is_retryable(failed("Request was aborted", stop="aborted"))
    assert not is_retryable(failed(None, stop="stop"))
    assert classify(failed("Request was aborted", stop="aborted")).kind == "aborted"
    assert classify(failed(None, stop="stop")).kind == "none"


def test_retryable_is_judged_from_text_alone_after_a_reload() -> None:
    """error_status is transient; a message read back from a session file has only its text."""
    assert is_retryable(failed("529 Overloaded: Overloaded"))
    assert not is_retryable(failed("401 Unauthorized: bad key"))


@pytest.mark.parametrize(
    ("text", "status", "kind"),
    [
        ("429 Too Many Requests: Rate limit reached for gpt-5", 429, "rate"),
        ("429 Too Many Requests: You exceeded your current quota (insufficient_quota)", 429, "quota"),
        ("402 Payment Required: insufficient credits", 402, "billing"),
        ("400 Bad Request: Your credit balance is too low to access the Anthropic API.", 400, "billing"),
        ("500 Internal Server Error", 500, None),
    ],
)
def test_usage_limit_kinds(text: str, status: int, kind: str | None) -> None:
    assert usage_limit_kind(failed(text, status)) == kind


def test_quota_and_billing_limits_stop_instead_of_retrying() -> None:
    quota = failed("429 Too Many Requests: You exceeded your current quota (insufficient_quota)", 429)
    verdict = classify(quota)
    assert (verdict.kind, verdict.usage_limit, is_retryable(quota)) == ("usage_limit", "quota", False)
    rate = classify(failed("429 Too Many Requests: slow down", 429, retry_after_ms=1500))
    assert (rate.kind, rate.usage_limit, rate.retry_after_ms) == ("retryable", "rate", 1500)


def test_retry_delay_is_exponential_from_the_base() -> None:
    assert [retry_delay_ms(n, base_delay_ms=2000) for n in (1, 2, 3, 4)] == [2000, 4000, 8000, 16000]


def test_retry_delay_honours_retry_after_and_caps_at_the_maximum() -> None:
    assert retry_delay_ms(1, 2000, 60_000, retry_after_ms=500) == 500
    assert retry_delay_ms(1, 2000, 60_000, retry_after_ms=120_000) == 60_000
    assert retry_delay_ms(10, 2000, 60_000) == 60_000
    assert retry_delay_ms(10, 2000, 0) == 2000 * 2**9


def test_retry_after_header_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3000
    assert parse_retry_after({"retry-after-ms": "250"}) == 250
    assert parse_retry_after({"x-other": "1"}) is None
    when = datetime(2030, 1, 1, 0, 0, 10, tzinfo=UTC)
    assert (
        parse_retry_after({"retry-after": format_datetime(when, usegmt=True)}, now_s=when.timestamp() - 10)
        == 10_000
    )


def test_secrets_and_key_shaped_strings_are_redacted() -> None:
    text = "Incorrect API key provided: my-secret-value; also sk-ant-api03-abcdefghijklmnopqrstuv"
    cleaned = redact_secrets(text, ["my-secret-value"])
    assert "my-secret-value" not in cleaned and "abcdefghijklmnop" not in cleaned
    assert cleaned.count("[redacted]") == 2
