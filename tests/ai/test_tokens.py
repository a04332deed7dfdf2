"""The one token estimator: the host's count (Pi's compaction estimate, request sizing) and pi-mulligan's
UTF-16 count, and where they deliberately differ."""

from __future__ import annotations

import math

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from caddie.ai.model import Context, Model, Tool
from caddie.ai.providers.thinking import clamp_max_tokens
from caddie.ai.tokens import (
    IMAGE_CHARS,
    Utf16TokenCounter,
    estimate_context_tokens,
    estimate_message_tokens,
    estimate_message_tokens_utf16,
    estimate_request_tokens,
    estimate_tokens_utf16,
    utf16_message_chars,
)


def _assistant(*content: TextContent | ToolCall, usage: Usage | None = None) -> AssistantMessage:
    return AssistantMessage(list(content), "faux", "faux", "m", usage=usage or Usage())


def test_host_estimate_counts_characters_images_and_host_messages() -> None:
    assert estimate_message_tokens(UserMessage("x" * 9)) == 3  # rounded up per message
    image = ImageContent("A" * 100, "image/png")
    assert estimate_message_tokens(UserMessage([image])) == IMAGE_CHARS // 4
    call = ToolCall("c1", "read", {"path": "a"})
    assert estimate_message_tokens(_assistant(call)) == math.ceil((4 + len('{"path":"a"}')) / 4)
    assert estimate_message_tokens(BashExecutionMessage("ls", "a\nb", 0)) == math.ceil(5 / 4)


def test_context_estimate_anchors_on_the_last_reported_usage() -> None:
    reported = _assistant(TextContent("hi"), usage=Usage(input=1000, output=20, total_tokens=1020))
    later = UserMessage("y" * 40)
    assert estimate_context_tokens([UserMessage("x" * 4000), reported, later]) == 1020 + 10
    assert estimate_context_tokens([UserMessage("x" * 40)]) == 10


def test_request_estimate_adds_the_system_prompt_and_tools() -> None:
    messages: list[LlmMessage] = [
        UserMessage("x" * 40),
        ToolResultMessage("c", "read", [TextContent("y" * 40)]),
    ]
    bare = estimate_request_tokens(Context(None, list(messages)))
    assert bare == 20
    tool = Tool("read", "d" * 100, {"type": "object"})
    full = estimate_request_tokens(Context("s" * 400, list(messages), [tool]))
    assert full == math.ceil((400 + 80 + 4 + 100 + len('{"type": "object"}')) / 4)
    model = Model("m", "m", "faux", "p", context_window=20_000)
    assert clamp_max_tokens(model, Context("s" * 400, list(messages), [tool]), 40_000) == 20_000 - full - 4096
    # A small local window keeps room to answer: the margin is at most a quarter of it (Pi's 4,096 left 1).
    small = Model("m", "m", "faux", "p", context_window=4096)
    prompt = Context("s" * 6000, list(messages), [tool])  # ~1,550 tokens of system prompt and tools
    assert clamp_max_tokens(small, prompt, 8192) == 4096 - estimate_request_tokens(prompt) - 1024 > 1000


def test_the_utf16_count_matches_javascript_lengths_where_the_host_count_does_not() -> None:
    emoji = UserMessage("😀" * 4)  # 4 code points, 8 UTF-16 units
    assert estimate_message_tokens(emoji) == 1
    assert estimate_message_tokens_utf16(emoji) == 2
    image = UserMessage([ImageContent("A" * 100, "image/png")])  # pi-mulligan counts the base64 length
    assert utf16_message_chars(image) == 100 and estimate_message_tokens(image) == IMAGE_CHARS // 4
    assert utf16_message_chars(BashExecutionMessage("ls", "out", 0)) == 0  # no content: not counted
    # summed, then divided once
    assert estimate_tokens_utf16([UserMessage("a"), UserMessage("b")]) == 1
    assert Utf16TokenCounter().estimate([emoji, image]) == estimate_tokens_utf16([emoji, image]) == 27
