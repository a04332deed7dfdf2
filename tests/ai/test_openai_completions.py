"""The openai-completions provider, through the real ``openai`` SDK against the fake server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

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
from caddie.ai.model import ModelCompat, ModelCost, ProviderResponse, StreamOptions
from caddie.ai.providers.openai_completions import PROVIDER, build_params, convert_messages, resolve_compat
from caddie.ai.stream_events import TextDeltaEvent, ToolCallDeltaEvent
from tests.ai.helpers import READ_TOOL, TEST_KEY, context, openai_model, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, ToolCallSpec, UsageSpec


async def test_text_streams_as_start_deltas_end_done(llm: FakeLLM) -> None:
    llm.push(fl.text("Hello there, world!", chunk_size=4))
    result = await run(PROVIDER, openai_model(llm), context())
    assert result.types[:2] == ["start", "text_start"]
    assert result.types[-2:] == ["text_end", "done"]
    assert "".join(e.delta for e in result.events if isinstance(e, TextDeltaEvent)) == "Hello there, world!"
    assert result.message.text() == "Hello there, world!"
    assert result.message.stop_reason == "stop"
    assert result.message.response_id == "chatcmpl-fake"


async def test_request_carries_key_system_prompt_tools_and_usage_option(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    await run(
        PROVIDER, openai_model(llm, provider="acme", base_url=llm.openai_base_url), context(tools=[READ_TOOL])
    )
    req = llm.last_request
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {TEST_KEY}"
    assert req.system == "You are terse."
    assert req.body["stream"] is True
    assert req.body["stream_options"] == {"include_usage": True}
    assert req.tool_names == ["read"]
    assert req.last_user_text == "hi"


async def test_tool_call_arguments_split_across_many_deltas_are_reassembled(llm: FakeLLM) -> None:
    args = {"path": "src/app/main.py", "limit": 200, "nested": {"a": [1, 2, 3], "b": 'x"y'}}
    llm.push(fl.tool_call("read", args, id="call_abc", chunk_size=1))
    result = await run(PROVIDER, openai_model(llm), context(tools=[READ_TOOL]))
    deltas = [e for e in result.events if isinstance(e, ToolCallDeltaEvent)]
    assert len(deltas) >= len(json.dumps(args))
    assert result.message.tool_calls() == [ToolCall("call_abc", "read", args)]
    assert result.message.stop_reason == "toolUse"
    assert result.types.count("toolcall_start") == 1 and result.types.count("toolcall_end") == 1


async def test_parallel_tool_calls_interleaved_by_index_stay_separate(llm: FakeLLM) -> None:
    llm.push(
        fl.tool_calls(
            ToolCallSpec("read", {"path": "a.py"}, "c1"),
            ToolCallSpec("read", {"path": "b.py"}, "c2"),
            ToolCallSpec("bash", {"command": "ls -la"}, "c3"),
            interleave_tool_calls=True,
            chunk_size=2,
        )
    )
    result = await run(PROVIDER, openai_model(llm), context(tools=[READ_TOOL]))
    assert result.message.tool_calls() == [
        ToolCall("c1", "read", {"path": "a.py"}),
        ToolCall("c2", "read", {"path": "b.py"}),
        ToolCall("c3", "bash", {"command": "ls -la"}),
    ]


async def test_usage_counts_cached_tokens_as_cache_reads_and_prices_them(llm: FakeLLM) -> None:
    llm.push(fl.text("ok", usage=UsageSpec(input=1000, output=200, cache_read=4000, reasoning=50)))
    model = openai_model(llm, cost=ModelCost(input=2.0, output=8.0, cache_read=0.5))
    usage = (await run(PROVIDER, model, context())).message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (1000, 200, 4000, 5200)
    assert usage.reasoning == 50
    assert abs(usage.cost.total - (1000 * 2 + 200 * 8 + 4000 * 0.5) / 1e6) < 1e-12


async def test_reasoning_content_becomes_a_thinking_block(llm: FakeLLM) -> None:
    llm.push(fl.thinking("Let me look at the file first.", "Done."))
    result = await run(PROVIDER, openai_model(llm), context())
    thinking, text = result.message.content
    assert thinking == ThinkingContent(
        "Let me look at the file first.", thinking_signature="reasoning_content"
    )
    assert text == TextContent("Done.")
    assert "thinking_start" in result.types and "thinking_end" in result.types


async def test_reasoning_field_name_is_remembered_for_replay(llm: FakeLLM) -> None:
    llm.push(fl.thinking("hmm", "answer", reasoning_field="reasoning"))
    model = openai_model(llm)
    first = (await run(PROVIDER, model, context())).message
    llm.push(fl.text("next"))
    await run(PROVIDER, model, context(UserMessage("q"), first, UserMessage("again")))
    replayed = llm.last_request.messages[2]
    assert replayed == {"role": "assistant", "content": "answer", "reasoning": "hmm"}


async def test_unauthorized_is_an_error_with_status_hint_and_no_key(llm: FakeLLM) -> None:
    llm.push(fl.error(401, f"Incorrect API key provided: {TEST_KEY}", type="invalid_request_error"))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert msg.stop_reason == "error" and msg.error_status == 401
    assert msg.error_message is not None
    assert msg.error_message.startswith("401 Unauthorized: Incorrect API key provided")
    assert "Check the API key for provider 'openai'" in msg.error_message
    assert TEST_KEY not in msg.error_message
    assert classify(msg).kind == "fatal"


async def test_rate_limit_carries_retry_after_and_is_retryable(llm: FakeLLM) -> None:
    llm.push(fl.error(429, "Rate limit reached for requests", retry_after=7))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert (msg.error_status, msg.retry_after_ms) == (429, 7000)
    assert is_retryable(msg)


async def test_server_error_is_retryable_and_the_sdk_does_not_retry_on_its_own(llm: FakeLLM) -> None:
    llm.push(fl.error(500, "The server had an error while processing your request"), fl.text("never reached"))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert msg.error_status == 500 and is_retryable(msg)
    assert len(llm.llm_requests) == 1


async def test_context_overflow_is_recognised(llm: FakeLLM) -> None:
    llm.push(fl.context_overflow("openai"))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert is_context_overflow(msg) and not is_retryable(msg)


async def test_quota_exhaustion_is_a_usage_limit(llm: FakeLLM) -> None:
    llm.push(
        fl.error(429, "You exceeded your current quota", type="insufficient_quota", code="insufficient_quota")
    )
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    verdict = classify(msg)
    assert (verdict.kind, verdict.usage_limit) == ("usage_limit", "quota")


async def test_an_error_event_inside_the_stream_ends_with_an_error(llm: FakeLLM) -> None:
    llm.push(
        fl.Reply(text="partial answer", stream_error_after=3, error="Overloaded", error_type="server_error")
    )
    result = await run(PROVIDER, openai_model(llm), context())
    assert result.types[0] == "start" and result.types[-1] == "error"
    assert (
        result.message.error_message
        == "The provider reported an error mid-response: Overloaded (server_error)"
    )
    assert is_retryable(result.message)


async def test_abort_mid_stream_returns_promptly_and_closes_the_connection(llm: FakeLLM) -> None:
    llm.push(fl.text("word " * 400, chunk_size=5, delay_s=0.05))
    ctrl = AbortController()
    events = []
    started = time.monotonic()
    async for event in PROVIDER.stream(
        openai_model(llm), context(), StreamOptions(api_key=TEST_KEY, signal=ctrl.signal)
    ):
        events.append(event)
        if isinstance(event, TextDeltaEvent) and len(events) == 4:
            aborted_at = time.monotonic()
            ctrl.abort()
    assert time.monotonic() - aborted_at < 0.5
    assert time.monotonic() - started < 3
    final = events[-1]
    assert final.type == "error" and final.reason == "aborted"
    assert final.error.stop_reason == "aborted"
    assert final.error.error_message == "Request was aborted"
    assert final.error.text().startswith("word")
    deadline = time.monotonic() + 3
    while not llm.last_request.client_disconnected and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert llm.last_request.client_disconnected


async def test_abort_before_the_request_sends_nothing_slow(llm: FakeLLM) -> None:
    ctrl = AbortController()
    ctrl.abort()
    llm.push(fl.text("unused"))
    msg = (await run(PROVIDER, openai_model(llm), context(), signal=ctrl.signal)).message
    assert msg.stop_reason == "aborted"


async def test_a_stalled_server_ends_with_a_clear_error_within_the_timeout(llm: FakeLLM) -> None:
    llm.push(fl.stall(after_events=2, seconds=10))
    started = time.monotonic()
    msg = (await run(PROVIDER, openai_model(llm), context(), timeout_s=0.4)).message
    assert time.monotonic() - started < 2
    assert msg.stop_reason == "error"
    assert msg.error_message is not None and "stalled" in msg.error_message
    assert is_retryable(msg)


async def test_a_server_that_never_answers_the_request_times_out(llm: FakeLLM) -> None:
    def slow(_req: Any) -> fl.Reply:
        time.sleep(1.0)
        return fl.text("late")

    llm.push(slow)
    started = time.monotonic()
    msg = (await run(PROVIDER, openai_model(llm), context(), timeout_s=0.3)).message
    assert time.monotonic() - started < 0.9
    assert msg.error_message is not None and "stalled" in msg.error_message


async def test_malformed_json_in_the_stream_is_a_clear_error(llm: FakeLLM) -> None:
    llm.push(fl.malformed(after_events=2))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert msg.stop_reason == "error"
    assert msg.error_message is not None and msg.error_message.startswith("Malformed JSON in the stream from")


async def test_a_dropped_connection_mid_stream_is_retryable(llm: FakeLLM) -> None:
    llm.push(fl.disconnect(after_events=3))
    msg = (await run(PROVIDER, openai_model(llm), context())).message
    assert msg.stop_reason == "error"
    assert msg.error_message is not None and msg.error_message.startswith("Connection lost")
    assert is_retryable(msg)


async def test_unreachable_server_is_a_connection_error() -> None:
    with FakeLLM() as gone:
        model = openai_model(gone)
    msg = (await run(PROVIDER, model, context())).message
    assert msg.error_message is not None and msg.error_message.startswith("Connection error: could not reach")
    assert is_retryable(msg)


async def test_missing_key_for_a_remote_server_is_reported_without_a_request(llm: FakeLLM) -> None:
    model = openai_model(llm, base_url="https://api.example.invalid/v1")
    msg = (await run(PROVIDER, model, context(), api_key=None)).message
    assert msg.error_message is not None and msg.error_message.startswith("No API key for provider 'openai'")


async def test_a_local_server_needs_no_key(llm: FakeLLM) -> None:
    llm.push(fl.text("local"))
    msg = (await run(PROVIDER, openai_model(llm, provider="ollama"), context(), api_key=None)).message
    assert msg.text() == "local"
    assert llm.last_request.headers["authorization"].startswith("Bearer caddie-no-key")


async def test_payload_hook_can_replace_the_body_and_response_hook_sees_the_status(llm: FakeLLM) -> None:
    seen: list[ProviderResponse] = []

    async def on_payload(payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "temperature": 0.25, "custom_field": "x"}

    async def on_response(response: ProviderResponse) -> None:
        seen.append(response)

    llm.push(fl.text("ok"))
    await run(PROVIDER, openai_model(llm), context(), on_payload=on_payload, on_response=on_response)
    assert llm.last_request.body["temperature"] == 0.25
    assert llm.last_request.body["custom_field"] == "x"
    assert seen[0].status == 200 and seen[0].headers["content-type"].startswith("text/event-stream")


async def test_without_usage_in_streaming_no_stream_options_are_sent(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    model = openai_model(
        llm, compat=ModelCompat(supports_usage_in_streaming=False, max_tokens_field="max_tokens")
    )
    msg = (await run(PROVIDER, model, context(), max_tokens=123)).message
    assert "stream_options" not in llm.last_request.body
    assert llm.last_request.body["max_tokens"] == 123
    assert msg.usage.total_tokens == 0


async def test_stream_without_finish_reason_is_inferred_when_the_server_never_sends_one(llm: FakeLLM) -> None:
    llm.push(fl.tool_call("read", {"path": "a"}, finish=""))
    model = openai_model(llm, compat=ModelCompat(supports_finish_reason=False))
    msg = (await run(PROVIDER, model, context())).message
    assert msg.stop_reason == "toolUse"


# -- conversion (no network) -------------------------------------------------------------------------


def test_conversion_repairs_and_maps_every_role() -> None:
    model = openai_model(None, base_url="https://api.openai.com/v1", reasoning=True, input=["text", "image"])
    call = ToolCall("call_1", "read", {"path": "a.py"})
    messages: list[LlmMessage] = [
        UserMessage([TextContent("see"), ImageContent("aGk=", "image/png")]),
        AssistantMessage(content=[TextContent("bad")], api="x", provider="y", model="z", stop_reason="error"),
        AssistantMessage(
            content=[TextContent("Reading."), call], api=model.api, provider=model.provider, model=model.id
        ),
        ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent("print(1)")]),
        AssistantMessage(
            content=[ToolCall("call_2", "read", {})], api=model.api, provider=model.provider, model=model.id
        ),
        UserMessage("next"),
    ]
    out = convert_messages(model, context(*messages, system="sys"))
    assert out == [
        {"role": "developer", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path":"a.py"}'},
                }
            ],
        },
        {"role": "tool", "content": "print(1)", "tool_call_id": "call_1"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "content": "No result provided", "tool_call_id": "call_2"},
        {"role": "user", "content": "next"},
    ]


def test_thinking_level_maps_to_reasoning_effort_for_reasoning_models() -> None:
    model = openai_model(
        None,
        base_url="https://api.openai.com/v1",
        reasoning=True,
        thinking_level_map={"off": "none", "minimal": None},
    )
    high = build_params(model, context(), StreamOptions(reasoning="high"))
    off = build_params(model, context(), StreamOptions(reasoning="off"))
    minimal = build_params(model, context(), StreamOptions(reasoning="minimal"))
    assert (high["reasoning_effort"], off["reasoning_effort"], minimal["reasoning_effort"]) == (
        "high",
        "none",
        "low",
    )
    assert "max_completion_tokens" in high and high["store"] is False
    plain = build_params(
        openai_model(None, base_url="https://api.openai.com/v1"), context(), StreamOptions(reasoning="high")
    )
    assert "reasoning_effort" not in plain


def test_system_role_follows_the_developer_role_flag() -> None:
    model = openai_model(
        None,
        base_url="https://api.openai.com/v1",
        reasoning=True,
        compat=ModelCompat(supports_developer_role=False),
    )
    assert convert_messages(model, context(system="sys"))[0] == {"role": "system", "content": "sys"}


def test_openrouter_anthropic_models_get_cache_markers_and_reasoning_object() -> None:
    model = openai_model(
        None,
        provider="openrouter",
        id="anthropic/claude-sonnet-5",
        base_url="https://openrouter.ai/api/v1",
        reasoning=True,
    )
    compat = resolve_compat(model)
    assert compat.cache_control_format == "anthropic" and compat.thinking_format == "openrouter"
    params = build_params(model, context(tools=[READ_TOOL]), StreamOptions(reasoning="medium"))
    assert params["reasoning"] == {"effort": "medium"}
    assert params["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert params["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}


def test_tool_result_images_follow_as_a_user_message_for_vision_models() -> None:
    model = openai_model(None, input=["text", "image"])
    call = ToolCall("c1", "read", {"path": "x.png"})
    messages: list[LlmMessage] = [
        UserMessage("look"),
        AssistantMessage(content=[call], api=model.api, provider=model.provider, model=model.id),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[ImageContent("aGk=", "image/png")]),
    ]
    out = convert_messages(model, context(*messages, system=None))
    assert out[2] == {"role": "tool", "content": "(see attached image)", "tool_call_id": "c1"}
    assert out[3]["role"] == "user" and out[3]["content"][1]["type"] == "image_url"


async def test_cancelling_the_consumer_closes_the_stream(llm: FakeLLM) -> None:
    llm.push(fl.text("slow " * 200, chunk_size=5, delay_s=0.05))

    async def consume() -> None:
        async for _event in PROVIDER.stream(openai_model(llm), context(), StreamOptions(api_key=TEST_KEY)):
            pass

    task = asyncio.create_task(consume())
    await asyncio.to_thread(llm.wait_for_requests, 1)
    await asyncio.sleep(0.2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    deadline = time.monotonic() + 3
    while not llm.last_request.client_disconnected and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert llm.last_request.client_disconnected


def test_an_unreachable_cloud_api_points_at_the_network_not_at_a_server_to_start() -> None:
    from caddie.ai.providers.failures import connection_advice

    assert connection_advice("https://api.anthropic.com").startswith("Check your network connection")
    assert connection_advice("http://127.0.0.1:8080/v1") == (
        "Check that the server is running and that baseUrl is right."
    )
    assert connection_advice("http://localhost:11434/v1").startswith("Check that the server is running")
    assert connection_advice("http://192.168.1.20:8000/v1").startswith("Check that the server is running")
    assert connection_advice("http://gpu-box:8000/v1").startswith("Check that the server is running")


def test_detected_flags_follow_pis_provider_list_and_a_named_provider_keeps_them_on_a_local_url() -> None:
    def flags(provider: str, base_url: str, model_id: str = "m") -> tuple[Any, ...]:
        c = resolve_compat(openai_model(None, provider=provider, base_url=base_url, id=model_id))
        return (c.supports_store, c.max_tokens_field, c.supports_reasoning_effort, c.supports_strict_mode)

    # OpenRouter takes store and max_completion_tokens, as in Pi — also behind a local proxy.
    assert flags("openrouter", "https://openrouter.ai/api/v1") == (True, "max_completion_tokens", True, True)
    assert flags("openrouter", "http://127.0.0.1:4000/v1") == (True, "max_completion_tokens", True, True)
    assert flags("nvidia", "https://integrate.api.nvidia.com/v1") == (False, "max_tokens", False, False)
    assert flags("ant-ling", "https://api.ant-ling.com/v1") == (False, "max_tokens", False, True)
    assert flags("opencode", "https://opencode.ai/zen/v1") == (False, "max_completion_tokens", True, True)
    assert flags("cloudflare-ai-gateway", "https://gateway.ai.cloudflare.com/v1/a/b/compat")[:3] == (
        False,
        "max_tokens",
        False,
    )
    # An unnamed server on this machine still gets the conservative flags.
    assert flags("my-box", "http://127.0.0.1:8000/v1") == (False, "max_tokens", True, True)
    openrouter = build_params(
        openai_model(None, provider="openrouter", base_url="http://127.0.0.1:4000/v1"),
        context(),
        StreamOptions(),
    )
    assert openrouter["store"] is False and "max_completion_tokens" in openrouter
