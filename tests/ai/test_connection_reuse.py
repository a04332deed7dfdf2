"""Consecutive requests to a server that keeps connections alive (as the real APIs do) share one TCP
connection: each reply is read to the end of its body, so the SDK's pool can hand the connection to the
next request instead of opening a new one (and, against a real endpoint, paying a new TLS handshake)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from caddie.ai.messages import UserMessage
from caddie.ai.model import Model
from caddie.ai.providers import anthropic_messages, google_generative_ai, openai_completions, openai_responses
from caddie.ai.stream import ApiProvider
from tests.ai.helpers import READ_TOOL, anthropic_model, context, openai_model, run
from tests.ai.test_google_generative_ai import gemini_model
from tests.ai.test_openai_responses import responses_model
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM

APIS: dict[str, tuple[ApiProvider, Callable[[FakeLLM], Model]]] = {
    "openai-completions": (openai_completions.PROVIDER, openai_model),
    "openai-responses": (openai_responses.PROVIDER, responses_model),
    "anthropic-messages": (anthropic_messages.PROVIDER, anthropic_model),
    "google-generative-ai": (google_generative_ai.PROVIDER, gemini_model),
}


@pytest.fixture
def keep_alive_llm() -> Iterator[FakeLLM]:
    with FakeLLM(keep_alive=True) as server:
        yield server


@pytest.mark.parametrize("api", sorted(APIS))
async def test_consecutive_requests_share_one_connection(keep_alive_llm: FakeLLM, api: str) -> None:
    provider, make_model = APIS[api]
    model = make_model(keep_alive_llm)
    keep_alive_llm.push(
        fl.tool_call("read", {"path": "a.txt"}, id="call_1"),
        fl.text("first answer"),
        fl.text("second answer"),
    )
    results = [
        await run(provider, model, context(UserMessage(f"question {i}"), tools=[READ_TOOL])) for i in range(3)
    ]
    assert [r.message.stop_reason for r in results] == ["toolUse", "stop", "stop"]
    assert [r.message.content[0].type for r in results] == ["toolCall", "text", "text"]
    assert len(keep_alive_llm.requests) == 3
    assert keep_alive_llm.connections == 1


async def test_a_server_that_closes_each_stream_gets_a_new_connection_per_request(llm: FakeLLM) -> None:
    """The default fake server ends every stream with ``Connection: close``: the client follows."""
    llm.push(fl.text("one"), fl.text("two"))
    model = anthropic_model(llm)
    for _ in range(2):
        assert (await run(anthropic_messages.PROVIDER, model, context())).message.stop_reason == "stop"
    assert llm.connections == 2
