"""The google-generative-ai provider (Gemini's documented REST API over plain HTTP) against the fake server
speaking Gemini's ``streamGenerateContent?alt=sse`` protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest

from caddie.ai.errors import is_retryable
from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model, ModelCost, StreamOptions
from caddie.ai.providers.google_generative_ai import PROVIDER, build_params, thinking_config
from caddie.ai.stream_events import TextDeltaEvent, ThinkingDeltaEvent
from tests.ai.helpers import READ_TOOL, TEST_KEY, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, ToolCallSpec, UsageSpec

SIGNATURE = "c2lnbmF0dXJlLW9mLXRoZS10aG91Z2h0cw=="


def gemini_model(llm: FakeLLM | None, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gemini-3-pro-preview",
        "name": "Gemini 3 Pro",
        "api": "google-generative-ai",
        "provider": "google",
        "base_url": f"{llm.url}/v1beta"
        if llm is not None
        else "https://generativelanguage.googleapis.com/v1beta",
        "reasoning": True,
        "input": ["text", "image"],
    }
    fields.update(overrides)
    return Model(**fields)


async def test_thinking_and_text_stream_with_the_signature_kept(llm: FakeLLM) -> None:
    llm.push(fl.thinking("Consider the question.", "Forty-two.", chunk_size=5, thinking_signature=SIGNATURE))
    result = await run(PROVIDER, gemini_model(llm), context(), reasoning="high")
    assert result.types[:2] == ["start", "thinking_start"] and result.types[-1] == "done"
    assert (
        "".join(e.delta for e in result.events if isinstance(e, ThinkingDeltaEvent))
        == "Consider the question."
    )
    assert "".join(e.delta for e in result.events if isinstance(e, TextDeltaEvent)) == "Forty-two."
    thinking, text = result.message.content
    assert isinstance(thinking, ThinkingContent) and isinstance(text, TextContent)
    assert text.text == "Forty-two." and text.text_signature == SIGNATURE
    assert result.message.stop_reason == "stop" and result.message.response_id == "gemini_fake"
    req = llm.last_request
    assert req.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    assert req.headers["x-goog-api-key"] == TEST_KEY
    assert req.body["systemInstruction"] == {
        "parts": [{"text": "You are terse."}],
        "role": "user",
    }  # as Pi sends it
    assert req.body["generationConfig"]["thinkingConfig"] == {
        "includeThoughts": True,
        "thinkingLevel": "HIGH",
    }
    assert req.body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


async def test_function_calls_carry_their_thought_signature_back_on_the_next_request(llm: FakeLLM) -> None:
    llm.push(
        fl.Reply(
            thinking="Need the file.",
            tool_calls=[ToolCallSpec("read", {"path": "a.py"}, "fc_1")],
            thinking_signature=SIGNATURE,
        ),
        fl.text("It returns 42."),
    )
    model = gemini_model(llm)
    first = await run(
        PROVIDER, model, context(UserMessage("read a.py"), tools=[READ_TOOL]), reasoning="medium"
    )
    assert first.message.stop_reason == "toolUse"
    call = first.message.tool_calls()[0]
    assert (call.id, call.name, call.arguments, call.thought_signature) == (
        "fc_1",
        "read",
        {"path": "a.py"},
        SIGNATURE,
    )
    result = ToolResultMessage(call.id, "read", [TextContent("return 42")])
    await run(
        PROVIDER,
        model,
        context(UserMessage("read a.py"), first.message, result, tools=[READ_TOOL]),
        reasoning="medium",
    )
    raw = llm.llm_requests[1].raw
    contents = json.loads(raw)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"thought": True, "text": "Need the file."},
            {
                "functionCall": {"name": "read", "args": {"path": "a.py"}, "id": "fc_1"},
                "thoughtSignature": SIGNATURE,
            },
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [{"functionResponse": {"name": "read", "response": {"output": "return 42"}, "id": "fc_1"}}],
    }
    assert json.loads(raw)["tools"] == [
        {
            "functionDeclarations": [
                {"name": "read", "description": "Read a file", "parametersJsonSchema": READ_TOOL.parameters}
            ]
        }
    ]


async def test_signatures_of_another_model_are_not_sent(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    other = AssistantMessage(
        [ThinkingContent("old thoughts", SIGNATURE), ToolCall("c1", "read", {}, thought_signature=SIGNATURE)],
        api="google-generative-ai",
        provider="google",
        model="gemini-2.5-flash",
        stop_reason="toolUse",
    )
    await run(
        PROVIDER, gemini_model(llm), context(UserMessage("q"), other, ToolResultMessage("c1", "read", []))
    )
    assert SIGNATURE.encode() not in llm.last_request.raw


async def test_usage_counts_cached_and_thought_tokens(llm: FakeLLM) -> None:
    llm.push(fl.text("x", usage=UsageSpec(input=100, output=20, cache_read=50, reasoning=30)))
    model = gemini_model(llm, cost=ModelCost(input=1.0, output=10.0, cache_read=0.1))
    usage = (await run(PROVIDER, model, context())).message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.reasoning) == (100, 50, 50, 30)
    assert usage.cost.total == pytest.approx((100 * 1 + 50 * 10 + 50 * 0.1) / 1e6)


async def test_images_are_inline_data(llm: FakeLLM) -> None:
    llm.push(fl.text("a cat"))
    await run(
        PROVIDER,
        gemini_model(llm),
        context(UserMessage([TextContent("what?"), ImageContent("aGk=", "image/png")])),
    )
    assert llm.last_request.body["contents"][0]["parts"][1] == {
        "inlineData": {"mimeType": "image/png", "data": "aGk="}
    }


async def test_max_tokens_is_length_and_safety_is_an_error(llm: FakeLLM) -> None:
    llm.push(fl.text("cut", finish="MAX_TOKENS"), fl.text("no", finish="SAFETY"))
    assert (await run(PROVIDER, gemini_model(llm), context())).message.stop_reason == "length"
    blocked = (await run(PROVIDER, gemini_model(llm), context())).message
    assert blocked.stop_reason == "error" and "SAFETY" in (blocked.error_message or "")


async def test_unauthorized_never_echoes_the_key_and_rate_limits_are_retryable(llm: FakeLLM) -> None:
    llm.push(
        fl.error(401, f"API key not valid: {TEST_KEY}"), fl.error(429, "Resource exhausted", retry_after=2)
    )
    denied = (await run(PROVIDER, gemini_model(llm), context())).message
    assert (denied.error_message or "").startswith("401 Unauthorized")
    assert TEST_KEY not in (denied.error_message or "")
    limited = (await run(PROVIDER, gemini_model(llm), context())).message
    assert limited.error_status == 429 and limited.retry_after_ms == 2000 and is_retryable(limited)


async def test_a_stream_cut_before_the_finish_reason_is_retryable(llm: FakeLLM) -> None:
    llm.push(fl.disconnect(after_events=2, content="a long answer that is cut"))
    result = (await run(PROVIDER, gemini_model(llm), context())).message
    assert result.stop_reason == "error" and is_retryable(result)


async def test_missing_key_names_gemini_api_key() -> None:
    result = await run(PROVIDER, gemini_model(None), context(), api_key=None)
    assert "GEMINI_API_KEY" in (result.message.error_message or "")


def test_thinking_levels_map_like_pi() -> None:
    flash = gemini_model(None, id="gemini-2.5-flash")
    assert thinking_config(flash, StreamOptions(reasoning="low")) == {
        "includeThoughts": True,
        "thinkingBudget": 2048,
    }
    assert thinking_config(flash, StreamOptions()) == {"thinkingBudget": 0}
    assert thinking_config(gemini_model(None), StreamOptions()) == {"thinkingLevel": "LOW"}
    assert thinking_config(gemini_model(None, reasoning=False), StreamOptions(reasoning="high")) is None
    body = build_params(gemini_model(None), context(), StreamOptions(max_tokens=1000, temperature=0.3))
    assert (
        body["generationConfig"]["maxOutputTokens"] == 1000 and body["generationConfig"]["temperature"] == 0.3
    )
