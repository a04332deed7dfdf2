"""The ``openai-codex-responses`` provider against fake Codex endpoints: a kept WebSocket with
``previous_response_id`` continuations, SSE, the fallback from one to the other, and Codex's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from caddie.ai.messages import TextContent, ToolResultMessage, UserMessage
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers import openai_codex_responses as codex
from tests.ai.helpers import READ_TOOL, context, run
from tests.models.oauth_helpers import codex_token
from tests.support import fake_llm as fl
from tests.support.fake_codex_ws import FakeCodexWebSocket

TOKEN = codex_token("acct-77")


def model(base_url: str) -> Model:
    return Model("gpt-5.5", "GPT-5.5", "openai-codex-responses", "openai-codex", base_url, reasoning=True)


@pytest.fixture
def ws() -> Iterator[FakeCodexWebSocket]:
    with FakeCodexWebSocket() as fake:
        yield fake
    codex._connections.clear()
    codex._sse_sessions.clear()


async def test_a_session_keeps_its_websocket_and_sends_only_the_new_input(ws: FakeCodexWebSocket) -> None:
    m = model(ws.url)
    ws.replies = [fl.tool_call("read", {"path": "a.txt"}, id="call_1"), fl.text("done")]
    first = await run(
        codex.PROVIDER,
        m,
        context(UserMessage("read a.txt"), tools=[READ_TOOL]),
        api_key=TOKEN,
        session_id="sess-1",
    )
    assert first.message.stop_reason == "toolUse"
    ctx = context(
        UserMessage("read a.txt"),
        first.message,
        ToolResultMessage(first.message.tool_calls()[0].id, "read", [TextContent("hello")]),
        tools=[READ_TOOL],
    )
    second = await run(codex.PROVIDER, m, ctx, api_key=TOKEN, session_id="sess-1")
    assert second.message.stop_reason == "stop" and second.message.content[0].text == "done"  # type: ignore[union-attr]
    assert len(ws.handshakes) == 1  # one connection for the session
    path, headers = ws.handshakes[0]
    assert path == "/backend-api/codex/responses"
    assert headers["authorization"] == f"Bearer {TOKEN}" and headers["chatgpt-account-id"] == "acct-77"
    assert headers["openai-beta"] == codex.WEBSOCKET_BETA and headers["originator"] == "pi"
    assert headers["session-id"] == headers["x-client-request-id"] == "sess-1"
    full, delta = ws.messages
    assert full["type"] == "response.create" and "previous_response_id" not in full
    assert full["prompt_cache_key"] == "sess-1" and full["store"] is False
    assert delta["previous_response_id"] == "resp_ws_1"
    assert [i.get("type") for i in delta["input"]] == ["function_call_output"]


async def test_a_changed_request_sends_the_whole_input_again(ws: FakeCodexWebSocket) -> None:
    m = model(ws.url)
    await run(codex.PROVIDER, m, context(UserMessage("one")), api_key=TOKEN, session_id="s2")
    reply = await run(
        codex.PROVIDER, m, context(UserMessage("something else")), api_key=TOKEN, session_id="s2"
    )
    assert reply.message.stop_reason == "stop"
    assert all("previous_response_id" not in message for message in ws.messages)


async def test_a_refused_websocket_falls_back_to_sse_for_the_rest_of_the_session(
    ws: FakeCodexWebSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.refuse = True
    with fl.FakeLLM() as llm:
        # The SSE endpoint is the fake LLM's; the WebSocket is the refusing fake, on another port.
        m = model(f"{llm.url}/backend-api")
        monkeypatch.setattr(
            codex, "websocket_url", lambda _base: f"ws://127.0.0.1:{ws.port}/backend-api/codex/responses"
        )
        llm.push(fl.text("via sse"), fl.text("again"))
        one = await run(codex.PROVIDER, m, context(UserMessage("hi")), api_key=TOKEN, session_id="s3")
        two = await run(codex.PROVIDER, m, context(UserMessage("hi")), api_key=TOKEN, session_id="s3")
        assert one.message.stop_reason == two.message.stop_reason == "stop"
        assert len(ws.handshakes) == 1  # the second request did not try again
        sse = llm.llm_requests
        assert [r.path for r in sse] == ["/backend-api/codex/responses"] * 2
        assert sse[0].headers["accept"] == "text/event-stream"
        assert sse[0].headers["openai-beta"] == "responses=experimental"


async def test_sse_transport_usage_limit_text_and_a_token_without_an_account() -> None:
    with fl.FakeLLM() as llm:
        m = model(f"{llm.url}/backend-api")
        llm.push(fl.error(429, "limit", type="usage_limit_reached"))
        limited = await run(codex.PROVIDER, m, context(UserMessage("hi")), api_key=TOKEN, transport="sse")
        assert "You have hit your ChatGPT usage limit." in (limited.message.error_message or "")
        no_account = await run(
            codex.PROVIDER, m, context(UserMessage("hi")), api_key="not-a-jwt", transport="sse"
        )
        assert "no ChatGPT account" in (no_account.message.error_message or "")
        assert len(llm.llm_requests) == 1


def test_codex_urls_follow_pis_rules() -> None:
    assert (
        codex.codex_url("https://chatgpt.com/backend-api")
        == "https://chatgpt.com/backend-api/codex/responses"
    )
    assert codex.codex_url("https://x/codex") == "https://x/codex/responses"
    assert codex.codex_url("https://x/codex/responses/") == "https://x/codex/responses"
    assert (
        codex.websocket_url("http://127.0.0.1:9/backend-api")
        == "ws://127.0.0.1:9/backend-api/codex/responses"
    )


def test_the_body_is_codexs_shape() -> None:
    m = model("https://chatgpt.com/backend-api")
    ctx = Context(None, [UserMessage("hi")], [READ_TOOL])
    body = codex.build_body(m, ctx, StreamOptions(session_id="s", reasoning="medium"))
    assert list(body) == [
        "model", "store", "stream", "instructions", "input", "text", "include", "prompt_cache_key",
        "tool_choice", "parallel_tool_calls", "tools", "reasoning",
    ]  # fmt: skip
    assert body["tools"][0]["strict"] is None and body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["instructions"] == "You are a helpful assistant."
