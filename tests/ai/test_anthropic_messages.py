"""The anthropic-messages provider, through the real ``anthropic`` SDK against the fake server."""

from __future__ import annotations

import asyncio
import json
import time

from caddie.ai.abort import AbortController
from caddie.ai.errors import classify, is_context_overflow, is_retryable
from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import ModelCompat, ModelCost, StreamOptions
from caddie.ai.providers.anthropic_messages import PROVIDER, build_params, convert_messages, map_stop_reason
from caddie.ai.stream_events import TextDeltaEvent, ToolCallDeltaEvent
from tests.ai.helpers import READ_TOOL, TEST_KEY, anthropic_model, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, ToolCallSpec, UsageSpec


async def test_text_streams_and_ends_with_end_turn_mapped_to_stop(llm: FakeLLM) -> None:
    llm.push(fl.text("Hello from Claude."))
    result = await run(PROVIDER, anthropic_model(llm), context())
    assert result.types[:2] == ["start", "text_start"] and result.types[-2:] == ["text_end", "done"]
    assert result.message.text() == "Hello from Claude."
    assert (result.message.stop_reason, result.message.raw_stop_reason) == ("stop", "end_turn")
    assert result.message.response_id == "msg_fake"


async def test_request_has_system_prompt_tools_and_cache_markers(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    await run(PROVIDER, anthropic_model(llm), context(tools=[READ_TOOL]))
    req = llm.last_request
    assert req.path == "/v1/messages" and req.api == "anthropic"
    assert TEST_KEY in (req.headers.get("x-api-key", "") + req.headers.get("authorization", ""))
    assert req.body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert req.body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert req.body["tools"][0]["name"] == "read"
    assert req.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_no_cache_markers_when_cache_retention_is_none(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    await run(PROVIDER, anthropic_model(llm), context(tools=[READ_TOOL]), cache_retention="none")
    assert "cache_control" not in json.dumps(llm.last_request.body)


async def test_tool_use_split_across_many_deltas(llm: FakeLLM) -> None:
    args = {"path": "docs/guide.md", "offset": 10, "tags": ["a", "b"], "quote": 'say "hi"'}
    llm.push(fl.tool_call("read", args, id="toolu_01", chunk_size=1))
    result = await run(PROVIDER, anthropic_model(llm), context(tools=[READ_TOOL]))
    assert len([e for e in result.events if isinstance(e, ToolCallDeltaEvent)]) >= len(json.dumps(args))
    assert result.message.tool_calls() == [ToolCall("toolu_01", "read", args)]
    assert (result.message.stop_reason, result.message.raw_stop_reason) == ("toolUse", "tool_use")


async def test_parallel_tool_uses(llm: FakeLLM) -> None:
    llm.push(
        fl.tool_calls(ToolCallSpec("read", {"path": "a"}, "t1"), ToolCallSpec("read", {"path": "b"}, "t2"))
    )
    msg = (await run(PROVIDER, anthropic_model(llm), context(tools=[READ_TOOL]))).message
    assert [(c.id, c.arguments["path"]) for c in msg.tool_calls()] == [("t1", "a"), ("t2", "b")]


async def test_usage_with_cache_reads_and_writes_is_priced(llm: FakeLLM) -> None:
    llm.push(fl.text("ok", usage=UsageSpec(input=100, output=50, cache_read=3000, cache_write=500)))
    model = anthropic_model(llm, cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75))
    usage = (await run(PROVIDER, model, context())).message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens) == (
        100,
        50,
        3000,
        500,
        3650,
    )
    expected = (100 * 3 + 50 * 15 + 3000 * 0.3 + 500 * 3.75) / 1e6
    assert abs(usage.cost.total - expected) < 1e-12


async def test_thinking_keeps_its_signature_and_redacted_thinking_its_payload(llm: FakeLLM) -> None:
    llm.push(
        fl.thinking("First, the plan.", "Answer.", thinking_signature="sig-123", redacted_thinking="opaque==")
    )
    model = anthropic_model(llm, reasoning=True)
    msg = (await run(PROVIDER, model, context(), reasoning="high")).message
    assert msg.content == [
        ThinkingContent("First, the plan.", thinking_signature="sig-123"),
        ThinkingContent("[Reasoning redacted]", thinking_signature="opaque==", redacted=True),
        TextContent("Answer."),
    ]
    body = llm.last_request.body
    assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] >= 1024
    assert "interleaved-thinking" in llm.last_request.headers.get("anthropic-beta", "")

    llm.push(fl.text("again"))
    await run(PROVIDER, model, context(UserMessage("q"), msg, UserMessage("more")), reasoning="high")
    replayed = llm.last_request.body["messages"][1]["content"]
    assert replayed == [
        {"type": "thinking", "thinking": "First, the plan.", "signature": "sig-123"},
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "text", "text": "Answer."},
    ]


async def test_overloaded_529_is_retryable(llm: FakeLLM) -> None:
    llm.push(fl.overloaded())
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert msg.error_status == 529
    assert msg.error_message == "529 Overloaded: Overloaded (overloaded_error)"
    assert is_retryable(msg)


async def test_overloaded_error_event_mid_stream_counts_as_529(llm: FakeLLM) -> None:
    llm.push(
        fl.Reply(text="partial", stream_error_after=4, error="Overloaded", error_type="overloaded_error")
    )
    result = await run(PROVIDER, anthropic_model(llm), context())
    assert result.types[0] == "start" and result.message.stop_reason == "error"
    assert result.message.error_status == 529 and is_retryable(result.message)


async def test_rate_limit_with_retry_after(llm: FakeLLM) -> None:
    llm.push(
        fl.error(429, "Number of request tokens has exceeded your per-minute rate limit", retry_after=12)
    )
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert (msg.error_status, msg.retry_after_ms) == (429, 12_000)
    assert classify(msg).kind == "retryable"


async def test_unauthorized_and_billing_errors(llm: FakeLLM) -> None:
    llm.push(
        fl.error(401, "invalid x-api-key"),
        fl.error(400, "Your credit balance is too low to access the Anthropic API."),
    )
    unauthorized = (await run(PROVIDER, anthropic_model(llm), context())).message
    billing = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert (
        unauthorized.error_message is not None
        and "Check the API key for provider 'anthropic'" in unauthorized.error_message
    )
    assert classify(unauthorized).kind == "fatal"
    assert (classify(billing).kind, classify(billing).usage_limit) == ("usage_limit", "billing")


async def test_prompt_too_long_is_a_context_overflow(llm: FakeLLM) -> None:
    llm.push(fl.context_overflow("anthropic"))
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert is_context_overflow(msg) and classify(msg).kind == "context_overflow"


async def test_internal_server_error_is_not_retried_by_the_sdk(llm: FakeLLM) -> None:
    llm.push(fl.error(500, "Internal server error", type="api_error"), fl.text("never"))
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert msg.error_status == 500 and is_retryable(msg)
    assert len(llm.llm_requests) == 1


async def test_abort_mid_stream(llm: FakeLLM) -> None:
    llm.push(fl.text("token " * 300, chunk_size=6, delay_s=0.05))
    ctrl = AbortController()
    events = []
    async for event in PROVIDER.stream(
        anthropic_model(llm), context(), StreamOptions(api_key=TEST_KEY, signal=ctrl.signal)
    ):
        events.append(event)
        if isinstance(event, TextDeltaEvent) and event.delta and len(events) == 5:
            aborted_at = time.monotonic()
            ctrl.abort()
    assert time.monotonic() - aborted_at < 0.5
    final = events[-1]
    assert final.type == "error" and final.error.stop_reason == "aborted"
    deadline = time.monotonic() + 3
    while not llm.last_request.client_disconnected and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert llm.last_request.client_disconnected


async def test_stall_gives_a_clear_error_in_time(llm: FakeLLM) -> None:
    llm.push(fl.stall(after_events=3, seconds=10))
    started = time.monotonic()
    msg = (await run(PROVIDER, anthropic_model(llm), context(), timeout_s=0.4)).message
    assert time.monotonic() - started < 2
    assert msg.error_message is not None and "stalled" in msg.error_message and is_retryable(msg)


async def test_malformed_event_json(llm: FakeLLM) -> None:
    llm.push(fl.malformed(after_events=3))
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert msg.error_message is not None and msg.error_message.startswith("Malformed JSON in the stream")


async def test_stream_cut_before_message_stop(llm: FakeLLM) -> None:
    llm.push(fl.disconnect(after_events=4))
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert msg.error_message is not None and msg.error_message.startswith("Connection lost")
    assert is_retryable(msg)


async def test_max_tokens_maps_to_length(llm: FakeLLM) -> None:
    llm.push(fl.text("cut", finish="max_tokens"))
    msg = (await run(PROVIDER, anthropic_model(llm), context())).message
    assert msg.stop_reason == "length"


# -- conversion (no network) -------------------------------------------------------------------------


def test_stop_reason_mapping() -> None:
    assert [
        map_stop_reason(r)[0] for r in ("end_turn", "max_tokens", "tool_use", "pause_turn", "refusal")
    ] == [
        "stop",
        "length",
        "toolUse",
        "stop",
        "error",
    ]


def test_conversion_groups_tool_results_and_repairs_foreign_history() -> None:
    model = anthropic_model(None, input=["text", "image"])
    foreign = AssistantMessage(
        content=[
            ThinkingContent("gpt thoughts", thinking_signature="reasoning_content"),
            ToolCall("call|x y", "read", {"p": 1}),
        ],
        api="openai-completions",
        provider="openai",
        model="gpt-5",
    )
    messages: list[LlmMessage] = [
        UserMessage("go"),
        foreign,
        ToolResultMessage(tool_call_id="call|x y", tool_name="read", content=[TextContent("one")]),
        AssistantMessage(
            content=[ToolCall("t2", "read", {}), ToolCall("t3", "read", {})],
            api=model.api,
            provider=model.provider,
            model=model.id,
        ),
        ToolResultMessage(
            tool_call_id="t2", tool_name="read", content=[ImageContent("aGk=", "image/png")], is_error=False
        ),
    ]
    out = convert_messages(model, context(*messages), cache_control=None)
    assert out[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "gpt thoughts"},
            {"type": "tool_use", "id": "call_x_y", "name": "read", "input": {"p": 1}},
        ],
    }
    assert out[2]["content"][0]["tool_use_id"] == "call_x_y"
    last = out[4]
    assert last["role"] == "user"
    assert [b["tool_use_id"] for b in last["content"]] == ["t2", "t3"]
    assert last["content"][0]["content"][0] == {"type": "text", "text": "(see attached image)"}
    assert last["content"][1]["is_error"] is True


def test_adaptive_thinking_models_send_an_effort() -> None:
    model = anthropic_model(None, reasoning=True, compat=ModelCompat(force_adaptive_thinking=True))
    params = build_params(model, context(), StreamOptions(reasoning="medium", temperature=0.5))
    assert params["thinking"]["type"] == "adaptive"
    assert params["output_config"] == {"effort": "medium"}
    assert "temperature" not in params


def test_thinking_off_disables_it_and_allows_temperature() -> None:
    model = anthropic_model(None, reasoning=True)
    params = build_params(model, context(), StreamOptions(reasoning=None, temperature=0.5))
    assert params["thinking"] == {"type": "disabled"}
    assert params["temperature"] == 0.5


def test_long_cache_retention_uses_a_one_hour_ttl() -> None:
    params = build_params(anthropic_model(None), context(), StreamOptions(cache_retention="long"))
    assert params["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


async def test_unreachable_server_is_a_retryable_connection_error() -> None:
    with FakeLLM() as gone:
        model = anthropic_model(gone)
    msg = (await run(PROVIDER, model, context())).message
    assert msg.error_message is not None and msg.error_message.startswith("Connection error: could not reach")
    assert is_retryable(msg)
