"""The wire APIs caddie added for Pi parity — ``mistral-conversations``, ``google-vertex`` and
``bedrock-converse-stream`` — side by side with Pi 0.84.4's own pi-ai modules: the same model and
conversation (a tool call and its result, then a follow-up) sent by each to the same fake server must give
the same path and the same bytes (Bedrock's body is serialised by boto3 itself, so there the JSON is
compared). Skips (with the reason) where Pi or an optional SDK is absent; fails under ``CI=1``."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from caddie.ai.messages import message_from_json
from caddie.ai.model import Context, Model, Tool
from caddie.ai.stream import get_api
from tests.ai.helpers import run
from tests.interop.pi import HERE, PI_DIR, require_pi
from tests.support import fake_llm as fl

READ: dict[str, Any] = {
    "name": "read",
    "description": "Read a file",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}


@pytest.fixture
def llm() -> Iterator[fl.FakeLLM]:
    with fl.FakeLLM() as server:
        yield server


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
"""A 1×1 PNG: a user image and a tool result's image travel too."""
NO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


def conversation(
    api: str, provider: str, model_id: str, call_id: str, thinking: bool = False
) -> list[dict[str, Any]]:
    usage = {"input": 9, "output": 3, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12, "cost": NO_COST}
    thought = [{"type": "thinking", "thinking": "The notes first.", "thinkingSignature": "c2lnbmF0dXJl"}]
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": "What do the notes say?"}, image],
            "timestamp": 1,
        },
        {
            "role": "assistant",
            "content": [
                *(thought if thinking else []),
                {"type": "text", "text": "Reading them."},
                {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "notes.txt"}},
            ],
            "api": api,
            "provider": provider,
            "model": model_id,
            "usage": usage,
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read",
            "content": [{"type": "text", "text": "the answer is 42"}, image],
            "isError": False,
            "timestamp": 3,
        },
        {"role": "user", "content": [{"type": "text", "text": "Thanks. Anything else?"}], "timestamp": 4},
    ]


def pi_model(model: Model) -> dict[str, Any]:
    return {
        "id": model.id,
        "name": model.name,
        "api": model.api,
        "provider": model.provider,
        "baseUrl": model.base_url,
        "reasoning": model.reasoning,
        "input": ["text", "image"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": model.context_window,
        "maxTokens": model.max_tokens,
    }


async def side_by_side(
    llm: fl.FakeLLM,
    model: Model,
    messages: list[dict[str, Any]],
    api_key: str | None,
    reasoning: str | None = None,
) -> tuple[fl.RecordedRequest, fl.RecordedRequest]:
    """(caddie's request, Pi's request) for one turn of ``messages`` with the ``read`` tool."""
    node = require_pi()

    llm.push(fl.text("Nothing else."), fl.text("Nothing else."))
    payload = {
        "api": model.api,
        "model": pi_model(model),
        "context": {"systemPrompt": "You are terse.", "messages": messages, "tools": [READ]},
        "options": {
            **({"apiKey": api_key} if api_key else {}),
            **({"reasoning": reasoning} if reasoning else {}),
        },
    }
    proc = subprocess.run(
        [node, str(HERE / "pi_stream.mjs")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CADDIE_PI_DIR": str(PI_DIR)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["type"] == "done", proc.stdout + proc.stderr[-2000:]
    tools = [Tool(READ["name"], READ["description"], READ["parameters"])]
    ctx = Context("You are terse.", [message_from_json(m) for m in messages], tools)  # type: ignore[misc]
    provider = get_api(model.api)
    assert provider is not None
    result = await run(provider, model, ctx, api_key=api_key, reasoning=reasoning)
    assert result.message.stop_reason == "stop", result.message.error_message
    theirs, ours = llm.llm_requests
    return ours, theirs


async def test_mistral_conversations_sends_pis_body(llm: fl.FakeLLM) -> None:
    model = Model(
        "devstral-medium-latest",
        "Devstral",
        "mistral-conversations",
        "mistral",
        llm.url,
        input=["text", "image"],
    )
    messages = conversation(model.api, model.provider, model.id, "abcDEF123")
    ours, theirs = await side_by_side(llm, model, messages, "mistral-key-0123")
    assert ours.path == theirs.path
    assert ours.headers["authorization"] == theirs.headers["authorization"] == "Bearer mistral-key-0123"
    assert ours.raw == theirs.raw


@pytest.mark.parametrize(
    ("api", "provider"), [("google-vertex", "google-vertex"), ("google-generative-ai", "google")]
)
async def test_gemini_with_an_api_key_sends_pis_body(llm: fl.FakeLLM, api: str, provider: str) -> None:
    """Gemini on Vertex AI and through the Gemini API (both sent over REST by caddie, through
    ``@google/genai`` by Pi)."""
    model = Model("gemini-2.5-flash", "Gemini 2.5 Flash", api, provider, llm.url, input=["text", "image"])  # type: ignore[arg-type]
    messages = conversation(model.api, model.provider, model.id, "call_1")
    ours, theirs = await side_by_side(llm, model, messages, "gemini-key-0123")
    assert ours.path.split("?")[0] == theirs.path.split("?")[0]
    assert ours.headers["x-goog-api-key"] == theirs.headers["x-goog-api-key"] == "gemini-key-0123"
    assert ours.raw == theirs.raw


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """AWS credentials of no account, and no profile or config file (the Bedrock tests)."""
    for name in ("AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv(
        "AWS_BEDROCK_FORCE_HTTP1", "1"
    )  # Pi's AWS SDK speaks HTTP/2 otherwise; the fake does not
    yield


@pytest.mark.extra("bedrock")
@pytest.mark.parametrize(
    "model_id", ["amazon.nova-2-lite-v1:0", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"]
)
async def test_bedrock_converse_sends_pis_body(llm: fl.FakeLLM, aws: None, model_id: str) -> None:
    model = Model(
        model_id,
        model_id,
        "bedrock-converse-stream",
        "amazon-bedrock",
        llm.url,
        max_tokens=8000,
        input=["text", "image"],
    )
    messages = conversation(model.api, model.provider, model.id, "tooluse_1")
    ours, theirs = await side_by_side(llm, model, messages, None)
    assert ours.path == theirs.path
    assert ours.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert ours.body == theirs.body


@pytest.mark.parametrize(
    ("api", "provider", "model_id", "call_id"),
    [
        ("mistral-conversations", "mistral", "magistral-medium-latest", "abcDEF123"),
        ("google-generative-ai", "google", "gemini-2.5-pro", "call_1"),
        ("google-vertex", "google-vertex", "gemini-3-pro-preview", "call_1"),
        pytest.param(
            "bedrock-converse-stream",
            "amazon-bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "tu_1",
            marks=pytest.mark.extra("bedrock"),
        ),
    ],
)
async def test_thinking_requests_and_replayed_thinking_match_pi(
    llm: fl.FakeLLM, aws: None, api: str, provider: str, model_id: str, call_id: str
) -> None:
    """A reasoning model asked to think hard, with a signed thinking block in the history."""
    model = Model(
        model_id,
        model_id,
        api,  # type: ignore[arg-type]
        provider,
        llm.url,
        reasoning=True,
        max_tokens=32000,
        input=["text", "image"],
    )
    messages = conversation(api, provider, model_id, call_id, thinking=True)
    key = None if api.startswith("bedrock") else "key-0123"
    ours, theirs = await side_by_side(llm, model, messages, key, reasoning="high")
    assert ours.path.split("?")[0] == theirs.path.split("?")[0]
    if api.startswith("bedrock"):  # boto3 serialises the body itself (with spaces): equal as JSON
        assert ours.body == theirs.body
    else:  # the very bytes Pi sends
        assert ours.raw == theirs.raw
