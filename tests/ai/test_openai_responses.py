"""The openai-responses and azure-openai-responses providers, through the real ``openai`` SDK against
the fake server speaking the Responses streaming protocol."""

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
from caddie.ai.model import Model, ModelCost
from caddie.ai.providers import azure_openai_responses as azure
from caddie.ai.providers.openai_responses import PROVIDER, convert_messages
from caddie.ai.stream_events import TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent
from tests.ai.helpers import READ_TOOL, TEST_KEY, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, ToolCallSpec, UsageSpec


def responses_model(llm: FakeLLM | None, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5.5",
        "name": "GPT-5.5",
        "api": "openai-responses",
        "provider": "openai",
        "base_url": llm.openai_base_url if llm is not None else "http://127.0.0.1:9/v1",
        "reasoning": True,
        "input": ["text", "image"],
    }
    fields.update(overrides)
    return Model(**fields)


async def test_reasoning_summary_and_text_stream_and_are_stored_the_way_pi_stores_them(llm: FakeLLM) -> None:
    llm.push(
        fl.thinking(
            "Check the file first.", "It defines main().", chunk_size=3, encrypted_reasoning="gAAAenc"
        )
    )
    result = await run(PROVIDER, responses_model(llm), context(), reasoning="high")
    assert result.types[:2] == ["start", "thinking_start"]
    assert result.types[-1] == "done"
    thinking = "".join(e.delta for e in result.events if isinstance(e, ThinkingDeltaEvent))
    assert thinking.startswith("Check the file first.")
    assert "".join(e.delta for e in result.events if isinstance(e, TextDeltaEvent)) == "It defines main()."
    block, text = result.message.content
    assert isinstance(block, ThinkingContent) and isinstance(text, TextContent)
    assert block.thinking == "Check the file first."
    assert json.loads(block.thinking_signature or "") == {
        "id": "rs_fake_1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Check the file first."}],
        "encrypted_content": "gAAAenc",
    }
    assert (
        block.thinking_signature is not None and ", " not in block.thinking_signature
    )  # JSON.stringify form
    assert text.text_signature == '{"v":1,"id":"msg_fake_1"}'
    assert result.message.response_id == "resp_fake"
    assert result.message.stop_reason == "stop"
    body = llm.last_request.body
    assert llm.last_request.path == "/v1/responses"
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["input"][0] == {"role": "developer", "content": "You are terse."}


async def test_reasoning_items_go_back_verbatim_on_the_next_request(llm: FakeLLM) -> None:
    llm.push(
        fl.Reply(
            thinking="I should read a.py.",
            tool_calls=[ToolCallSpec("read", {"path": "a.py"}, "call_A")],
            encrypted_reasoning="gAAAAB-secret-chain",
        ),
        fl.text("done"),
    )
    model = responses_model(llm)
    first = await run(
        PROVIDER, model, context(UserMessage("read a.py"), tools=[READ_TOOL]), reasoning="medium"
    )
    assert first.message.stop_reason == "toolUse"
    call = first.message.tool_calls()[0]
    assert call.id == "call_A|fc_fake_1"
    result = ToolResultMessage(call.id, "read", [TextContent("def main(): ...")])
    await run(
        PROVIDER,
        model,
        context(UserMessage("read a.py"), first.message, result, tools=[READ_TOOL]),
        reasoning="medium",
    )
    raw = llm.llm_requests[1].raw
    items = json.loads(raw)["input"]
    block = first.message.content[0]
    assert isinstance(block, ThinkingContent) and block.thinking_signature is not None
    sent_reasoning = json.loads(block.thinking_signature)
    assert items[2] == sent_reasoning
    assert b'"encrypted_content":"gAAAAB-secret-chain"' in raw
    assert items[3] == {
        "type": "function_call",
        "id": "fc_fake_1",
        "call_id": "call_A",
        "name": "read",
        "arguments": '{"path":"a.py"}',
    }
    assert items[4] == {"type": "function_call_output", "call_id": "call_A", "output": "def main(): ..."}


async def test_text_item_ids_are_replayed_and_other_models_lose_their_item_ids(llm: FakeLLM) -> None:
    llm.push(fl.text("ok"))
    mine = AssistantMessage(
        [TextContent("hello", text_signature='{"v":1,"id":"msg_abc","phase":"final_answer"}')],
        api="openai-responses",
        provider="openai",
        model="gpt-5.5",
    )
    sibling = AssistantMessage(
        [ToolCall("call_9|fc_old", "read", {"path": "b"})],
        api="openai-responses",
        provider="openai",
        model="gpt-4.1",
        stop_reason="toolUse",
    )
    ctx = context(
        UserMessage("hi"), mine, UserMessage("more"), sibling, ToolResultMessage("call_9|fc_old", "read", [])
    )
    await run(PROVIDER, responses_model(llm), ctx)
    items = llm.last_request.body["input"]
    assert items[2]["id"] == "msg_abc" and items[2]["phase"] == "final_answer"
    call = next(i for i in items if i.get("type") == "function_call")
    assert "id" not in call and call["call_id"] == "call_9"
    assert items[-1] == {"type": "function_call_output", "call_id": "call_9", "output": "(no tool output)"}


async def test_tool_call_arguments_in_many_deltas(llm: FakeLLM) -> None:
    args = {"path": "src/app/main.py", "nested": {"a": [1, 2], "b": 'x"y'}}
    llm.push(fl.tool_call("read", args, id="call_x", chunk_size=1))
    result = await run(PROVIDER, responses_model(llm, reasoning=False), context(tools=[READ_TOOL]))
    deltas = [e for e in result.events if isinstance(e, ToolCallDeltaEvent)]
    assert "".join(d.delta for d in deltas) == json.dumps(args)
    assert result.message.tool_calls() == [ToolCall("call_x|fc_fake_0", "read", args)]
    assert "reasoning" not in llm.last_request.body


async def test_usage_counts_cached_and_reasoning_tokens_and_the_flex_tier_halves_the_price(
    llm: FakeLLM,
) -> None:
    usage = UsageSpec(input=1000, output=200, cache_read=3000, reasoning=150)
    llm.push(fl.text("a", usage=usage), fl.text("b", usage=usage, service_tier="flex"))
    model = responses_model(llm, cost=ModelCost(input=2.0, output=10.0, cache_read=0.5))
    normal = (await run(PROVIDER, model, context())).message.usage
    assert (normal.input, normal.output, normal.cache_read, normal.reasoning) == (1000, 200, 3000, 150)
    assert normal.total_tokens == 4200
    assert normal.cost.total == pytest.approx((1000 * 2 + 200 * 10 + 3000 * 0.5) / 1e6)
    flex = (await run(PROVIDER, model, context(), service_tier="flex")).message.usage
    assert llm.last_request.body["service_tier"] == "flex"
    assert flex.cost.total == pytest.approx(normal.cost.total / 2)


async def test_prompt_cache_key_and_affinity_headers_come_from_the_session_id(llm: FakeLLM) -> None:
    llm.push(fl.text("a"), fl.text("b"))
    session = "0" * 70
    await run(PROVIDER, responses_model(llm), context(), session_id=session)
    req = llm.last_request
    assert req.body["prompt_cache_key"] == "0" * 64
    assert req.headers["session_id"] == session and req.headers["x-client-request-id"] == session
    await run(PROVIDER, responses_model(llm), context(), session_id=session, cache_retention="none")
    assert "prompt_cache_key" not in llm.last_request.body
    assert "session_id" not in llm.last_request.headers


async def test_thinking_off_asks_for_no_reasoning_and_sends_images(llm: FakeLLM) -> None:
    llm.push(fl.text("a cat"))
    image = ImageContent("aGVsbG8=", "image/png")
    await run(PROVIDER, responses_model(llm), context(UserMessage([TextContent("what?"), image])))
    body = llm.last_request.body
    assert body["reasoning"] == {"effort": "none"}
    assert "include" not in body
    assert body["input"][1]["content"][1] == {
        "type": "input_image",
        "detail": "auto",
        "image_url": "data:image/png;base64,aGVsbG8=",
    }


async def test_incomplete_for_max_output_tokens_is_length(llm: FakeLLM) -> None:
    llm.push(fl.text("cut", finish="max_output_tokens"))
    result = await run(PROVIDER, responses_model(llm), context())
    assert result.message.stop_reason == "length"
    assert result.message.raw_stop_reason == "incomplete.max_output_tokens"


async def test_an_error_event_mid_stream_ends_with_the_servers_text(llm: FakeLLM) -> None:
    llm.push(
        fl.Reply(
            text="partial answer",
            stream_error_after=4,
            error="The server had an error",
            error_code="server_error",
        )
    )
    result = await run(PROVIDER, responses_model(llm), context())
    assert result.types[-1] == "error"
    assert "Error Code server_error: The server had an error" in (result.message.error_message or "")


async def test_a_stream_cut_before_the_terminal_event_is_a_retryable_error(llm: FakeLLM) -> None:
    llm.push(fl.disconnect(after_events=5))
    result = await run(PROVIDER, responses_model(llm), context())
    assert result.message.stop_reason == "error"
    assert is_retryable(result.message)


async def test_unauthorized_never_echoes_the_key(llm: FakeLLM) -> None:
    llm.push(fl.error(401, f"Incorrect API key provided: {TEST_KEY}", code="invalid_api_key"))
    result = await run(PROVIDER, responses_model(llm), context())
    text = result.message.error_message or ""
    assert text.startswith("401 Unauthorized")
    assert TEST_KEY not in text and TEST_KEY[-8:] not in text


async def test_missing_key_names_the_variable_and_login() -> None:
    result = await run(
        PROVIDER, responses_model(None, base_url="https://api.openai.com/v1"), context(), api_key=None
    )
    text = result.message.error_message or ""
    assert "OPENAI_API_KEY" in text and "/login" in text


def test_foreign_responses_item_ids_are_rederived_and_other_apis_are_plain() -> None:
    foreign = AssistantMessage(
        [ToolCall("call_1|fc_" + "x" * 100, "read", {})],
        api="openai-responses",
        provider="opencode",
        model="m",
        stop_reason="toolUse",
    )
    items = convert_messages(responses_model(None), context(UserMessage("q"), foreign))
    call = items[2]
    assert call["call_id"] == "call_1" and call["id"].startswith("fc_") and len(call["id"]) <= 64


# --------------------------------------------------------------------------------------------------
# Azure


def azure_model(**overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "gpt-5.5",
        "name": "GPT-5.5 (Azure)",
        "api": "azure-openai-responses",
        "provider": "azure-openai-responses",
        "base_url": "",
        "reasoning": True,
    }
    fields.update(overrides)
    return Model(**fields)


async def test_azure_uses_the_endpoint_deployment_map_api_key_header_and_api_version(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{llm.url}/openai/v1")
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-4.1=legacy, gpt-5.5=my-gpt55")
    llm.push(fl.thinking("think", "hello from azure"))
    result = await run(azure.PROVIDER, azure_model(), context(), reasoning="low", session_id="s1")
    assert result.message.text() == "hello from azure"
    assert result.message.api == "azure-openai-responses"
    req = llm.last_request
    assert req.path == "/openai/v1/responses?api-version=v1"
    assert req.headers["api-key"] == TEST_KEY
    assert "authorization" not in req.headers
    assert req.body["model"] == "my-gpt55"
    assert req.body["prompt_cache_key"] == "s1"
    assert req.body["include"] == ["reasoning.encrypted_content"]


async def test_azure_without_key_or_endpoint_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_RESOURCE_NAME", raising=False)
    no_endpoint = await run(azure.PROVIDER, azure_model(), context())
    assert "AZURE_OPENAI_BASE_URL" in (no_endpoint.message.error_message or "")
    monkeypatch.setenv("AZURE_OPENAI_RESOURCE_NAME", "acme")
    no_key = await run(azure.PROVIDER, azure_model(), context(), api_key=None)  # remote endpoint: no request
    assert "AZURE_OPENAI_API_KEY" in (no_key.message.error_message or "")


def test_azure_hosts_get_the_v1_path() -> None:
    assert (
        azure.normalize_base_url("https://acme.openai.azure.com") == "https://acme.openai.azure.com/openai/v1"
    )
    assert (
        azure.normalize_base_url("https://acme.openai.azure.com/openai/v1/responses")
        == "https://acme.openai.azure.com/openai/v1"
    )
    assert azure.normalize_base_url("http://127.0.0.1:8080/custom/") == "http://127.0.0.1:8080/custom"
    assert azure.resolve_endpoint(azure_model(), {"AZURE_OPENAI_RESOURCE_NAME": "r"}) == (
        "https://r.openai.azure.com/openai/v1",
        "v1",
    )
