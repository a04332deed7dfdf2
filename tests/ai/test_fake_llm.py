"""The fake LLM server itself: both protocols, streamed and not, scripting and recording."""

from __future__ import annotations

from pathlib import Path

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from caddie.ai.messages import TextContent, ToolResultMessage, UserMessage
from caddie.ai.model import Context, StreamOptions
from caddie.ai.stream import complete
from caddie.models import ModelRegistry
from tests.ai.helpers import READ_TOOL
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, RecordedRequest, ToolCallSpec, UsageSpec


async def test_openai_non_streamed_completion(llm: FakeLLM) -> None:
    llm.push(
        fl.tool_calls(ToolCallSpec("read", {"path": "a"}, "c1"), text="Reading.", usage=UsageSpec(20, 4, 6))
    )
    client = AsyncOpenAI(api_key="k", base_url=llm.openai_base_url, max_retries=0)
    try:
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        await client.close()
    message = completion.choices[0].message
    assert message.content == "Reading."
    assert message.tool_calls is not None and message.tool_calls[0].id == "c1"
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage is not None and completion.usage.prompt_tokens == 26
    assert llm.last_request.stream is False


async def test_anthropic_non_streamed_message(llm: FakeLLM) -> None:
    llm.push(fl.thinking("hm", "Answer.", thinking_signature="s"))
    client = AsyncAnthropic(api_key="k", base_url=llm.anthropic_base_url, max_retries=0)
    try:
        message = await client.messages.create(
            model="claude", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
        )
    finally:
        await client.close()
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.stop_reason == "end_turn"


async def test_callable_replies_see_the_request_and_the_queue_drains_in_order(llm: FakeLLM) -> None:
    def echo(req: RecordedRequest) -> fl.Reply:
        return fl.text(f"you said {req.last_user_text}")

    llm.push(echo, fl.text("second"))
    assert llm.pending == 2
    model = ModelRegistry(None, env={}).find("ollama", "x")
    assert model is not None
    model.base_url = llm.openai_base_url
    first = await complete(model, Context(None, [UserMessage("ping")]), StreamOptions(api_key="k"))
    second = await complete(model, Context(None, [UserMessage("ping")]), StreamOptions(api_key="k"))
    assert (first.text(), second.text(), llm.pending) == ("you said ping", "second", 0)


async def test_an_empty_queue_answers_500_unless_a_default_reply_is_set(llm: FakeLLM) -> None:
    model = ModelRegistry(None, env={}).find("ollama", "x")
    assert model is not None
    model.base_url = llm.openai_base_url
    empty = await complete(model, Context(None, [UserMessage("q")]), StreamOptions())
    assert empty.error_status == 500 and "no reply queued" in (empty.error_message or "")
    llm.default_reply = fl.text("always")
    assert (await complete(model, Context(None, [UserMessage("q")]), StreamOptions())).text() == "always"


async def test_models_json_helper_drives_a_multi_turn_tool_conversation(llm: FakeLLM, tmp_path: Path) -> None:
    path = llm.write_models_json(
        tmp_path, api="anthropic-messages", model_id="fake-claude", contextWindow=50_000
    )
    registry = ModelRegistry(path, env={})
    assert registry.warnings == []
    model = registry.resolve("fake/fake-claude")
    assert model.context_window == 50_000
    key = registry.api_key_for(model)
    assert key == "fake-key"

    llm.push(fl.tool_call("read", {"path": "notes.txt"}, id="toolu_1"), fl.text("The notes say hello."))
    ctx = Context("sys", [UserMessage("what do the notes say?")], [READ_TOOL])
    first = await complete(model, ctx, StreamOptions(api_key=key))
    assert first.stop_reason == "toolUse"
    ctx.messages += [
        first,
        ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent("hello")]),
    ]
    second = await complete(model, ctx, StreamOptions(api_key=key))
    assert second.text() == "The notes say hello."
    sent = llm.llm_requests[1]
    assert sent.tool_results == [("toolu_1", "hello")]
    assert sent.last_user_text == "what do the notes say?"
    assert sent.system == "sys"
