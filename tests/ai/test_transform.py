"""The repairs applied before every provider call (caddie.ai.transform)."""

from __future__ import annotations

from caddie.ai.messages import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model
from caddie.ai.transform import (
    IMAGE_OMITTED_TEXT,
    NO_RESULT_TEXT,
    TOOL_IMAGE_OMITTED_TEXT,
    normalize_anthropic_tool_call_id,
    normalize_openai_tool_call_id,
    transform_messages,
)

CLAUDE = Model(
    id="claude-x", name="x", api="anthropic-messages", provider="anthropic", input=["text", "image"]
)
TEXT_ONLY = Model(id="local", name="l", api="openai-completions", provider="ollama", input=["text"])


def assistant(*blocks: AssistantContent, model: Model = CLAUDE, stop: str = "stop") -> AssistantMessage:
    return AssistantMessage(
        content=list(blocks),
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=stop,  # type: ignore[arg-type]
    )


def result(call_id: str, text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="read", content=[TextContent(text)])


def roles(messages: list[LlmMessage]) -> list[str]:
    return [m.role for m in messages]


def test_failed_and_aborted_assistant_messages_are_dropped() -> None:
    msgs: list[LlmMessage] = [
        UserMessage("a"),
        assistant(TextContent("half"), stop="error"),
        UserMessage("b"),
        assistant(TextContent("cut"), stop="aborted"),
        UserMessage("c"),
    ]
    assert roles(transform_messages(msgs, CLAUDE)) == ["user", "user", "user"]


def test_orphaned_tool_call_gets_a_synthetic_error_result_before_the_next_user_message() -> None:
    call = ToolCall("call_1", "read", {"path": "a"})
    out = transform_messages([UserMessage("a"), assistant(call), UserMessage("b")], CLAUDE)
    assert roles(out) == ["user", "assistant", "toolResult", "user"]
    synthetic = out[2]
    assert isinstance(synthetic, ToolResultMessage)
    assert (synthetic.tool_call_id, synthetic.is_error, synthetic.content[0]) == (
        "call_1",
        True,
        TextContent(NO_RESULT_TEXT),
    )


def test_only_the_missing_result_of_parallel_calls_is_synthesised_at_the_end() -> None:
    calls = [ToolCall("c1", "read", {}), ToolCall("c2", "read", {})]
    out = transform_messages([UserMessage("a"), assistant(*calls), result("c1")], CLAUDE)
    ids = [m.tool_call_id for m in out if isinstance(m, ToolResultMessage)]
    assert ids == ["c1", "c2"]
    assert isinstance(out[-1], ToolResultMessage) and out[-1].is_error


def test_tool_calls_of_a_dropped_error_message_get_no_results() -> None:
    out = transform_messages([UserMessage("a"), assistant(ToolCall("c1", "read", {}), stop="error")], CLAUDE)
    assert roles(out) == ["user"]


def test_foreign_tool_call_ids_are_normalised_and_their_results_follow() -> None:
    other = Model(id="gpt", name="g", api="openai-completions", provider="openai")
    weird = "call|fc_abc+/=" + "x" * 80
    msgs: list[LlmMessage] = [
        UserMessage("a"),
        assistant(ToolCall(weird, "read", {}), model=other),
        result(weird),
    ]
    out = transform_messages(msgs, CLAUDE, lambda i, _m, _s: normalize_anthropic_tool_call_id(i))
    call = out[1]
    res = out[2]
    assert isinstance(call, AssistantMessage) and isinstance(res, ToolResultMessage)
    new_id = call.tool_calls()[0].id
    assert new_id == res.tool_call_id
    assert len(new_id) <= 64 and all(ch.isalnum() or ch in "_-" for ch in new_id)


def test_same_model_tool_call_ids_are_kept() -> None:
    msgs: list[LlmMessage] = [
        UserMessage("a"),
        assistant(ToolCall("toolu_01", "read", {})),
        result("toolu_01"),
    ]
    out = transform_messages(msgs, CLAUDE, lambda i, _m, _s: "changed")
    call = out[1]
    assert isinstance(call, AssistantMessage) and call.tool_calls()[0].id == "toolu_01"


def test_thinking_from_another_model_becomes_text_and_redacted_thinking_is_dropped() -> None:
    other = Model(id="gpt", name="g", api="openai-completions", provider="openai")
    msg = assistant(
        ThinkingContent("pondering", thinking_signature="sig"),
        ThinkingContent("[redacted]", thinking_signature="opaque", redacted=True),
        TextContent("answer"),
        model=other,
    )
    out = transform_messages([UserMessage("a"), msg], CLAUDE)
    converted = out[1]
    assert isinstance(converted, AssistantMessage)
    assert converted.content == [TextContent("pondering"), TextContent("answer")]


def test_thinking_of_the_same_model_keeps_its_signature() -> None:
    signed = ThinkingContent("pondering", thinking_signature="sig")
    redacted = ThinkingContent("[Reasoning redacted]", thinking_signature="opaque", redacted=True)
    out = transform_messages([UserMessage("a"), assistant(signed, redacted, TextContent("x"))], CLAUDE)
    converted = out[1]
    assert isinstance(converted, AssistantMessage)
    assert converted.content[:2] == [signed, redacted]


def test_images_become_placeholders_for_a_text_only_model() -> None:
    img = ImageContent("aGk=", "image/png")
    msgs: list[LlmMessage] = [
        UserMessage([TextContent("look"), img, img]),
        assistant(ToolCall("c1", "read", {}), model=TEXT_ONLY),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[img]),
    ]
    out = transform_messages(msgs, TEXT_ONLY)
    user, _, tool = out
    assert isinstance(user, UserMessage) and user.content == [
        TextContent("look"),
        TextContent(IMAGE_OMITTED_TEXT),
    ]
    assert isinstance(tool, ToolResultMessage) and tool.content == [TextContent(TOOL_IMAGE_OMITTED_TEXT)]


def test_images_are_kept_for_a_vision_model() -> None:
    img = ImageContent("aGk=", "image/png")
    out = transform_messages([UserMessage([img])], CLAUDE)
    first = out[0]
    assert isinstance(first, UserMessage) and first.content == [img]


def test_the_input_messages_are_not_modified() -> None:
    other = Model(id="gpt", name="g", api="openai-completions", provider="openai")
    original = assistant(
        ThinkingContent("t", thinking_signature="s"), ToolCall("a|b", "read", {}), model=other
    )
    img_msg = UserMessage([ImageContent("aGk=", "image/png")])
    transform_messages([img_msg, original], TEXT_ONLY, lambda i, _m, _s: "new")
    assert isinstance(original.content[0], ThinkingContent)
    assert original.tool_calls()[0].id == "a|b"
    assert isinstance(img_msg.content, list) and isinstance(img_msg.content[0], ImageContent)


def test_openai_ids_from_the_responses_api_are_split_and_limited() -> None:
    openai = Model(id="gpt", name="g", api="openai-completions", provider="openai")
    assert normalize_openai_tool_call_id("call_1|fc_2", openai) == "call_1_fc_2"
    long_id = normalize_openai_tool_call_id("call_1|" + "y" * 100, openai)
    assert len(long_id) <= 40 and long_id.startswith("call_1_")
    assert normalize_openai_tool_call_id("z" * 50, openai) == "z" * 40
