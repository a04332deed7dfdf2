"""Replies whose server reports no usage get caddie's estimate, marked as one; reported usage is untouched.

Through the real ``openai`` SDK against the fake server, which can leave usage out (``no_usage``, as
llama-cpp-python's server does) and imitate the tokenizer endpoints of llama.cpp, vLLM and llama-cpp-python.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from caddie.ai import server_tokens
from caddie.ai.abort import AbortController
from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    Usage,
    UserMessage,
    message_from_json,
    message_to_json,
)
from caddie.ai.model import Context, Model, ModelCost, StreamOptions
from caddie.ai.providers.request import NO_KEY_PLACEHOLDER
from caddie.ai.stream import stream
from caddie.ai.stream_events import final_message
from caddie.ai.tokens import estimate_request_tokens
from caddie.ai.usage_estimate import is_estimated, needs_estimate
from tests.ai.helpers import READ_TOOL, context, openai_model
from tests.support import fake_llm as fl
from tests.support import fake_local


@pytest.fixture(autouse=True)
def _fresh_tokenizer_memory() -> Iterator[None]:
    server_tokens.forget_servers()
    yield
    server_tokens.forget_servers()


async def final(model: Model, ctx: Context) -> AssistantMessage:
    last = None
    async for event in stream(model, ctx, StreamOptions(api_key="local")):
        last = final_message(event) or last
    assert last is not None
    return last


def local_model(llm: fl.FakeLLM, **overrides: Any) -> Model:
    return openai_model(llm, provider="llamacpp", id="local", **overrides)


def tokenizer_calls(llm: fl.FakeLLM) -> list[str]:
    return [r.path for r in llm.requests if r.method == "POST" and "tokenize" in r.path]


async def test_a_reply_without_usage_gets_a_marked_estimate_from_four_characters_a_token() -> None:
    with fl.FakeLLM() as llm:
        llm.push(fl.text("x" * 41, no_usage=True), fl.text("y" * 8, no_usage=True))
        model = local_model(llm, cost=ModelCost(input=2.0, output=10.0))
        ctx = context(UserMessage("count me " * 30), tools=[READ_TOOL])
        message = await final(model, ctx)
        usage = message.usage
        assert usage.estimated is True and is_estimated(usage)
        assert usage.input == estimate_request_tokens(ctx) > 0
        assert usage.output == math.ceil(41 / 4)
        assert usage.total_tokens == usage.input + usage.output
        assert usage.cache_read == usage.cache_write == 0
        assert usage.cost.total == pytest.approx((usage.input * 2.0 + usage.output * 10.0) / 1_000_000)
        # The server has no tokenizer: each kind was tried once, and that is remembered.
        assert tokenizer_calls(llm) == ["/tokenize", "/tokenize", "/extras/tokenize/count"]
        second = await final(model, context(UserMessage("again")))
        assert second.usage.output == 2 and second.usage.estimated
        assert len(tokenizer_calls(llm)) == 3


async def test_reported_usage_is_left_exactly_as_the_server_sent_it(llm: fl.FakeLLM) -> None:
    llm.push(fl.text("hello there", usage=fl.UsageSpec(input=120, output=7)))
    message = await final(local_model(llm), context())
    assert (message.usage.input, message.usage.output, message.usage.estimated) == (120, 7, None)
    assert "estimated" not in json.dumps(message_to_json(message))
    assert b"estimated" not in msgspec.json.encode(message)
    assert tokenizer_calls(llm) == []


@pytest.mark.parametrize(
    ("routes", "path"),
    [
        (fake_local.llama_cpp_tokenizer(), "/tokenize"),
        (fake_local.vllm_tokenizer(), "/tokenize"),
        (fake_local.llama_cpp_python_tokenizer(), "/extras/tokenize/count"),
    ],
    ids=["llama.cpp", "vllm", "llama-cpp-python"],
)
async def test_a_local_servers_tokenizer_counts_the_request_and_the_reply(
    routes: dict[tuple[str, str], fl.Route], path: str
) -> None:
    with fl.FakeLLM(routes=routes) as llm:
        answer = "five words in this answer"
        llm.push(fl.tool_call("read", {"path": "notes.txt"}, no_usage=True), fl.text(answer, no_usage=True))
        model = local_model(llm)
        ctx = context(UserMessage("please read notes.txt and summarise it"), tools=[READ_TOOL])
        first = await final(model, ctx)
        assert first.usage.estimated is True
        assert first.usage.input == fake_local.fake_token_count(server_tokens.request_text(ctx))
        assert first.usage.output == fake_local.fake_token_count(server_tokens.reply_text(first))
        second = await final(model, context(UserMessage("and now?")))
        assert second.usage.output == 5
        # Found on the first reply (after the kinds before it answered 400/404), then asked directly.
        calls = tokenizer_calls(llm)
        assert calls[-4:] == [path] * 4
        bodies = [r.body for r in llm.requests if r.path == path and r.method == "POST"]
        assert any(isinstance(b, dict) and answer in json.dumps(b) for b in bodies)


async def test_the_key_goes_to_the_tokenizer_and_the_placeholder_does_not() -> None:
    with fl.FakeLLM(routes=fake_local.llama_cpp_tokenizer()) as llm:
        llm.push(fl.text("a b c", no_usage=True), fl.text("d e", no_usage=True))
        model = local_model(llm)
        async for _ in stream(model, context(), StreamOptions(api_key="sk-local-secret")):
            pass
        async for _ in stream(model, context(), StreamOptions(api_key=NO_KEY_PLACEHOLDER)):
            pass
        auth = [r.headers.get("authorization") for r in llm.requests if r.path == "/tokenize"]
        assert auth == ["Bearer sk-local-secret"] * 2 + [None] * 2


async def test_cloud_apis_are_never_asked_to_tokenize() -> None:
    model = Model(
        id="gpt",
        name="gpt",
        api="openai-completions",
        provider="openai",
        base_url="https://api.example.com/v1",
    )
    message = AssistantMessage(
        content=[TextContent("hi")], api=model.api, provider=model.provider, model=model.id
    )
    counted = await server_tokens.count_with_server(model, context(), message, StreamOptions())
    assert counted is None


def test_only_replies_the_server_worked_on_are_estimated() -> None:
    def reply(stop: str, content: list[Any], usage: Usage | None = None) -> AssistantMessage:
        return AssistantMessage(
            content=content,
            api="x",
            provider="p",
            model="m",
            stop_reason=stop,  # type: ignore[arg-type]
            usage=usage or Usage(),
        )

    text = [TextContent("partial")]
    assert needs_estimate(reply("stop", []))  # an empty answer still read the whole request
    assert needs_estimate(reply("length", text))
    assert needs_estimate(reply("toolUse", [ToolCall("c1", "read", {"path": "a"})]))
    assert needs_estimate(reply("aborted", text))
    assert not needs_estimate(reply("error", []))  # a refused request may never have reached the model
    assert not needs_estimate(reply("aborted", []))
    assert not needs_estimate(reply("stop", text, Usage(input=5)))


def test_the_mark_survives_both_session_codecs() -> None:
    message = AssistantMessage(
        content=[TextContent("x")],
        api="x",
        provider="p",
        model="m",
        usage=Usage(input=10, output=2, total_tokens=12, estimated=True),
    )
    data = message_to_json(message)
    assert data["usage"]["estimated"] is True
    again = message_from_json(json.loads(json.dumps(data)))
    assert isinstance(again, AssistantMessage) and again.usage.estimated is True
    decoded = msgspec.json.decode(msgspec.json.encode(message), type=AssistantMessage)
    assert decoded.usage.estimated is True


async def test_an_aborted_reply_is_estimated_without_asking_the_server() -> None:
    with fl.FakeLLM(routes=fake_local.llama_cpp_tokenizer()) as llm:
        llm.push(fl.text("a long answer that is cut " * 20, no_usage=True, delay_s=0.05, chunk_size=8))
        model = local_model(llm)
        controller = AbortController()
        last = None
        async for event in stream(model, context(), StreamOptions(api_key="local", signal=controller.signal)):
            if event.type == "text_delta":
                controller.abort()
            last = final_message(event) or last
        assert last is not None and last.stop_reason == "aborted" and last.content
        assert last.usage.estimated is True and last.usage.output >= 1
        assert tokenizer_calls(llm) == []
