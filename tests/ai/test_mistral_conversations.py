"""``mistral-conversations``: Mistral's chat completions (documented HTTP API) against the fake server —
Mistral's message shapes, nine-character tool-call ids, thinking chunks, and streamed tool calls."""

from __future__ import annotations

from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model, StreamOptions
from caddie.ai.providers.mistral_conversations import PROVIDER, build_payload, mistral_tool_call_id
from tests.ai.helpers import READ_TOOL, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM


def mistral(llm: FakeLLM | None = None, **kw: object) -> Model:
    base = llm.url if llm is not None else "https://api.mistral.ai"
    return Model("devstral-medium-latest", "Devstral", "mistral-conversations", "mistral", base, **kw)  # type: ignore[arg-type]


async def test_text_and_a_streamed_tool_call(llm: FakeLLM) -> None:
    llm.push(fl.tool_call("read", {"path": "notes.txt"}, id="abcDEF123", chunk_size=3))
    result = await run(
        PROVIDER,
        mistral(llm),
        context(UserMessage("read it"), tools=[READ_TOOL]),
        api_key="mk-1",
        session_id="sess-9",
    )
    call = result.message.content[-1]
    assert isinstance(call, ToolCall) and call.arguments == {"path": "notes.txt"} and call.id == "abcDEF123"
    assert result.message.stop_reason == "toolUse"
    request = llm.last_request
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer mk-1" and request.headers["x-affinity"] == "sess-9"
    body = request.body
    assert body["prompt_cache_key"] == "sess-9" and body["messages"][0]["role"] == "system"
    assert body["tools"][0]["function"]["strict"] is False


def test_history_in_mistrals_shapes() -> None:
    model = mistral(reasoning=True)
    turn = AssistantMessage(
        [ThinkingContent("think"), TextContent("ok"), ToolCall("call_a_very_long_id|fc_1", "read", {"path": "x"})],
        "openai-responses", "openai", "gpt-5.5", stop_reason="toolUse",
    )  # fmt: skip
    result = ToolResultMessage("call_a_very_long_id|fc_1", "read", [TextContent("data")], is_error=True)
    payload = build_payload(model, context(UserMessage("go"), turn, result), StreamOptions(reasoning="high"))
    assistant, tool = payload["messages"][2], payload["messages"][3]
    assert assistant["content"][0] == {"type": "text", "text": "think"}  # another model's thinking: text
    own = AssistantMessage([ThinkingContent("mine")], "mistral-conversations", "mistral", model.id)
    again = build_payload(model, context(UserMessage("go"), own, UserMessage("more")), StreamOptions())
    assert again["messages"][2]["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": "mine"}]}
    ]
    call_id = assistant["tool_calls"][0]["id"]
    assert len(call_id) == 9 and call_id.isalnum() and tool["tool_call_id"] == call_id
    assert tool["name"] == "read" and tool["content"] == [{"type": "text", "text": "[tool error] data"}]
    assert payload["prompt_mode"] == "reasoning"
    assert mistral_tool_call_id("abcDEF123") == "abcDEF123"


async def test_an_http_error_reads_with_its_status(llm: FakeLLM) -> None:
    llm.push(fl.error(401, "Unauthorized"))
    result = await run(PROVIDER, mistral(llm), context(UserMessage("hi")), api_key="bad-key-0123456789")
    assert result.message.stop_reason == "error" and result.message.error_status == 401
    assert "bad-key-0123456789" not in (result.message.error_message or "")
