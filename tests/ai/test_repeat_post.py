"""After a client's first request, later ones to the same endpoint skip the SDK's request assembly
(``repeat_post``): the server must see the same headers as the SDK sent and caddie's exact body, and every
failure must reach the session exactly as the SDK would have reported it (status, text, Retry-After)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from caddie.ai.messages import AssistantMessage, UserMessage
from caddie.ai.model import Model, StreamOptions
from caddie.ai.providers import anthropic_messages, openai_completions, openai_responses, repeat_post
from caddie.ai.providers.request import encode_body
from caddie.ai.stream import ApiProvider
from tests.ai.helpers import READ_TOOL, anthropic_model, context, openai_model, run
from tests.ai.test_openai_responses import responses_model
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, Reply

KEY = "sk-test-first-0123456789abcdef"
OTHER_KEY = "sk-test-other-0123456789abcdef"

APIS: dict[str, tuple[ApiProvider, Callable[[FakeLLM], Model], str]] = {
    "openai-completions": (openai_completions.PROVIDER, openai_model, "/chat/completions"),
    "openai-responses": (openai_responses.PROVIDER, responses_model, "/responses"),
    "anthropic-messages": (anthropic_messages.PROVIDER, anthropic_model, "/v1/messages"),
}


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM(keep_alive=True) as llm:
        yield llm


def build(api: str, model: Model, question: str) -> bytes:
    ctx = context(UserMessage(question), tools=[READ_TOOL])
    options = StreamOptions(api_key=KEY)
    if api == "openai-completions":
        return encode_body(openai_completions.build_params(model, ctx, options))
    if api == "openai-responses":
        return encode_body(openai_responses.build_params(model, ctx, options))
    return encode_body(anthropic_messages.build_params(model, ctx, options))


@pytest.mark.parametrize("api", sorted(APIS))
async def test_repeated_requests_carry_the_sdks_headers_and_caddies_body(server: FakeLLM, api: str) -> None:
    provider, make_model, path = APIS[api]
    model = make_model(server)
    server.push(fl.text("one"), fl.text("two"), fl.text("three"))
    for question in ("first", "second", "third"):
        result = await run(provider, model, context(UserMessage(question), tools=[READ_TOOL]), api_key=KEY)
        assert result.message.stop_reason == "stop"
    first, *repeats = server.requests
    assert any(path in paths for paths in repeat_post._prepared.values())  # the repeat path was taken
    for request, question in zip(server.requests, ("first", "second", "third"), strict=True):
        assert request.raw == build(api, model, question)
    expected = {k: v for k, v in first.headers.items() if k != "content-length"}
    for request in repeats:
        assert {k: v for k, v in request.headers.items() if k != "content-length"} == expected
        assert request.headers["content-length"] == str(len(request.raw))
    assert server.connections == 1


FAILURES: dict[str, Callable[[], Reply]] = {
    "401": lambda: fl.error(401, "invalid x-api-key", type="authentication_error"),
    "429 with Retry-After": lambda: fl.error(429, "slow down", type="rate_limit_error", retry_after=7),
    "500": lambda: fl.error(500, "boom", type="api_error"),
    "context overflow": lambda: fl.context_overflow("anthropic"),
}


def outcome(message: AssistantMessage) -> tuple[object, ...]:
    return (message.stop_reason, message.error_message, message.error_status, message.retry_after_ms)


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("api", sorted(APIS))
async def test_a_failed_repeat_request_reads_exactly_like_the_sdks(
    server: FakeLLM, api: str, failure: str
) -> None:
    provider, make_model, _path = APIS[api]
    model = make_model(server)
    ctx = context(UserMessage("hi"))
    server.push(fl.text("fine"), FAILURES[failure](), FAILURES[failure]())
    assert (await run(provider, model, ctx, api_key=KEY)).message.stop_reason == "stop"
    repeated = (await run(provider, model, ctx, api_key=KEY)).message  # the client's second request
    through_sdk = (await run(provider, model, ctx, api_key=OTHER_KEY)).message  # a new client's first
    assert repeated.stop_reason == "error" and repeated.error_status is not None
    assert outcome(repeated) == outcome(through_sdk)


@pytest.mark.parametrize("api", sorted(APIS))
async def test_a_server_gone_between_requests_is_a_connection_error_like_the_sdks(api: str) -> None:
    provider, make_model, _path = APIS[api]
    ctx = context(UserMessage("hi"))
    with FakeLLM() as llm:  # its stream ends the connection: the next request must connect again
        model = make_model(llm)
        llm.push(fl.text("fine"))
        assert (await run(provider, model, ctx, api_key=KEY)).message.stop_reason == "stop"
    repeated = (await run(provider, model, ctx, api_key=KEY)).message  # nothing listens any more
    through_sdk = (await run(provider, model, ctx, api_key=OTHER_KEY)).message
    assert repeated.stop_reason == "error" and "127.0.0.1" in (repeated.error_message or "")
    assert outcome(repeated) == outcome(through_sdk)


def test_only_plain_clients_without_sdk_retries_repeat() -> None:
    import anthropic
    import openai

    plain = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0)
    assert repeat_post._repeatable(plain, openai, "AsyncOpenAI")
    retrying = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=2)
    assert not repeat_post._repeatable(retrying, openai, "AsyncOpenAI")
    azure = openai.AsyncAzureOpenAI(
        api_key="k", azure_endpoint="http://127.0.0.1:9", api_version="preview", max_retries=0
    )
    assert not repeat_post._repeatable(azure, openai, "AsyncOpenAI")
    claude = anthropic.AsyncAnthropic(api_key="k", base_url="http://127.0.0.1:9", max_retries=0)
    assert repeat_post._repeatable(claude, anthropic, "AsyncAnthropic")
    assert not repeat_post._repeatable(claude, openai, "AsyncOpenAI")
