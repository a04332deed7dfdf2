"""``bedrock-converse-stream``: any Bedrock model through boto3's Converse client against the fake server —
botocore's own event-stream parsing, SigV4 or a Bedrock API key, Converse's message shapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Model, StreamOptions
from tests.ai.helpers import READ_TOOL, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.extra("bedrock")  # tests/support/extras.py: skipped without it, run by .ci/run


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    yield


def nova(llm: FakeLLM) -> Model:
    return Model(
        "amazon.nova-2-lite-v1:0", "Nova 2 Lite", "bedrock-converse-stream", "amazon-bedrock", llm.url
    )


def claude(llm: FakeLLM) -> Model:
    return Model(
        "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude Sonnet 4.5", "bedrock-converse-stream",
        "amazon-bedrock", llm.url, reasoning=True, max_tokens=64000,
    )  # fmt: skip


async def test_a_non_claude_model_streams_text_and_tool_calls_signed_with_sigv4(llm: FakeLLM) -> None:
    from caddie.ai.providers.bedrock_converse_stream import PROVIDER

    llm.push(
        fl.Reply(
            text="Reading.",
            tool_calls=[fl.ToolCallSpec("read", {"path": "a.txt"}, "tooluse_1")],
            usage=fl.UsageSpec(12, 5, 3),
        )
    )
    result = await run(
        PROVIDER, nova(llm), context(UserMessage("read a.txt"), tools=[READ_TOOL]), api_key=None
    )
    message = result.message
    assert message.stop_reason == "toolUse" and message.text() == "Reading."
    call = message.content[-1]
    assert isinstance(call, ToolCall) and call.arguments == {"path": "a.txt"} and call.id == "tooluse_1"
    assert (message.usage.input, message.usage.output, message.usage.cache_read) == (12, 5, 3)
    request = llm.last_request
    assert request.path == "/model/amazon.nova-2-lite-v1%3A0/converse-stream"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/bedrock/aws4_request" in request.headers["authorization"]
    body = request.body
    assert body["system"] == [{"text": "You are terse."}]  # no cache point for a non-Claude model
    assert body["toolConfig"]["tools"][0]["toolSpec"]["name"] == "read"
    assert "inferenceConfig" in body


async def test_claude_history_caching_thinking_and_a_bedrock_api_key(llm: FakeLLM) -> None:
    from caddie.ai.providers.bedrock_converse_stream import PROVIDER

    model = claude(llm)
    turn = AssistantMessage(
        [ThinkingContent("plan", thinking_signature="sig=="), ToolCall("tooluse_9", "read", {"path": "b"})],
        "bedrock-converse-stream", "amazon-bedrock", model.id, stop_reason="toolUse",
    )  # fmt: skip
    results = [
        ToolResultMessage("tooluse_9", "read", [TextContent("one")]),
        ToolResultMessage("tooluse_9", "read", [TextContent("two")], is_error=True),
    ]
    llm.push(fl.thinking("Considering.", "Done.", thinking_signature="new-sig"))
    result = await run(
        PROVIDER,
        model,
        context(UserMessage("go"), turn, *results),
        api_key="bedrock-api-key-0123456789",
        reasoning="medium",
    )
    thinking, text = result.message.content
    assert (
        isinstance(thinking, ThinkingContent)
        and thinking.thinking == "Considering."
        and thinking.thinking_signature == "new-sig"
    )
    assert isinstance(text, TextContent) and text.text == "Done."
    request = llm.last_request
    assert request.headers["authorization"] == "Bearer bedrock-api-key-0123456789"
    body = request.body
    assert body["system"][-1] == {"cachePoint": {"type": "default"}}
    assistant, tools = body["messages"][1], body["messages"][2]
    assert assistant["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "plan", "signature": "sig=="}}
    }
    assert [c["toolResult"]["status"] for c in tools["content"][:2]] == ["success", "error"]
    assert tools["content"][-1] == {"cachePoint": {"type": "default"}}
    assert body["additionalModelRequestFields"]["thinking"]["type"] == "enabled"


async def test_an_error_reply_reads_with_its_status(llm: FakeLLM) -> None:
    from caddie.ai.providers.bedrock_converse_stream import PROVIDER

    llm.push(
        fl.error(
            403,
            "The security token included in the request is invalid.",
            headers={"x-amzn-errortype": "UnrecognizedClientException"},
        )
    )
    result = await run(PROVIDER, nova(llm), context(UserMessage("hi")), api_key=None)
    assert result.message.stop_reason == "error"
    assert "security token" in (result.message.error_message or "")
    assert isinstance(StreamOptions(), StreamOptions)


async def test_a_proxy_without_aws_credentials_with_pis_skip_auth_switch(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from caddie.ai.providers.bedrock_converse_stream import PROVIDER
    from caddie.models.registry import ambient_credentials

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "should-not-be-sent")
    monkeypatch.setenv("AWS_BEDROCK_SKIP_AUTH", "1")
    llm.push(fl.text("Through the proxy."))
    result = await run(PROVIDER, nova(llm), context(UserMessage("hi")), api_key=None)
    assert result.message.text() == "Through the proxy."
    assert llm.last_request.headers["authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=dummy-access-key/"
    )
    assert ambient_credentials("amazon-bedrock", {"AWS_BEDROCK_SKIP_AUTH": "1", "HOME": str(tmp_path)})
    assert not ambient_credentials("amazon-bedrock", {"HOME": str(tmp_path)})
