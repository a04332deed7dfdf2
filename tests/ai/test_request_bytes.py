"""Every API sends the body caddie built, serialised once by caddie: the bytes on the wire are exactly
``encode_body(build_params(...))`` — no SDK layer re-walks (or reshapes) the conversation on the way."""

from __future__ import annotations

from typing import Any

from caddie.ai.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from caddie.ai.model import Model, StreamOptions
from caddie.ai.providers import anthropic_messages, google_generative_ai, openai_completions, openai_responses
from caddie.ai.providers.request import encode_body
from tests.ai.helpers import READ_TOOL, anthropic_model, context, openai_model, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM


def conversation(api: str, provider: str, model_id: str) -> Any:
    turns: list[Any] = []
    for i in range(30):
        call_id = f"call_{i}|fc_{i}" if api == "openai-responses" else f"call_{i}"
        turns += [
            UserMessage(f'question {i} — with ünïcode and "quotes"'),
            AssistantMessage(
                [ToolCall(call_id, "read", {"path": f"f{i}.py"})],
                api,
                provider,
                model_id,
                stop_reason="toolUse",
            ),
            ToolResultMessage(call_id, "read", [TextContent(f"contents {i}\n" * 20)]),
            AssistantMessage([TextContent(f"answer {i}")], api, provider, model_id),
        ]
    return context(*turns, UserMessage("next"), tools=[READ_TOOL])


async def test_openai_completions_sends_exactly_the_body_caddie_serialised(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    model = openai_model(llm)
    ctx = conversation(model.api, model.provider, model.id)
    options = StreamOptions(api_key="k", session_id="s")
    await run(openai_completions.PROVIDER, model, ctx, api_key="k", session_id="s")
    assert llm.last_request.raw == encode_body(openai_completions.build_params(model, ctx, options))


async def test_openai_responses_sends_exactly_the_body_caddie_serialised(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    model = Model("gpt-5.5", "GPT", "openai-responses", "openai", llm.openai_base_url, reasoning=True)
    ctx = conversation(model.api, model.provider, model.id)
    await run(openai_responses.PROVIDER, model, ctx, api_key="k", reasoning="high")
    expected = openai_responses.build_params(model, ctx, StreamOptions(reasoning="high"))
    assert llm.last_request.raw == encode_body(expected)


async def test_anthropic_messages_sends_exactly_the_body_caddie_serialised(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    model = anthropic_model(llm)
    ctx = conversation(model.api, model.provider, model.id)
    await run(anthropic_messages.PROVIDER, model, ctx, api_key="k")
    assert llm.last_request.raw == encode_body(anthropic_messages.build_params(model, ctx, StreamOptions()))


async def test_gemini_sends_exactly_the_body_caddie_serialised(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    model = Model("gemini-2.5-flash", "G", "google-generative-ai", "google", f"{llm.url}/v1beta")
    ctx = conversation(model.api, model.provider, model.id)
    await run(google_generative_ai.PROVIDER, model, ctx, api_key="k")
    assert llm.last_request.raw == encode_body(google_generative_ai.build_params(model, ctx, StreamOptions()))
