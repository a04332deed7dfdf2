"""Claude on Bedrock and on Vertex AI, through the ``anthropic`` SDK's Bedrock and Vertex clients against
the fake server: Bedrock's AWS event stream (decoded by botocore), SigV4 or bearer auth; Vertex's
``streamRawPredict`` with application-default credentials refreshed from a token endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import TextContent, ToolResultMessage, UserMessage
from caddie.ai.model import Model
from caddie.ai.providers import anthropic_bedrock as bedrock
from caddie.ai.providers import anthropic_vertex as vertex
from caddie.ai.stream_events import TextDeltaEvent
from tests.ai.helpers import READ_TOOL, context, run
from tests.support import fake_llm as fl
from tests.support.fake_llm import FakeLLM, ToolCallSpec

BEDROCK_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
TOKEN = "ABSKbedrock-api-key-0123456789"


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "ANTHROPIC_BEDROCK_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def bedrock_model(llm: FakeLLM | None, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": BEDROCK_ID,
        "name": "Claude Sonnet 4.5 (Bedrock)",
        "api": "anthropic-bedrock",
        "provider": "amazon-bedrock",
        "base_url": llm.url if llm is not None else "",
        "reasoning": True,
    }
    fields.update(overrides)
    return Model(**fields)


@pytest.mark.extra("bedrock")
async def test_bedrock_with_a_bearer_token_streams_thinking_text_and_tools(
    llm: FakeLLM, aws_env: pytest.MonkeyPatch
) -> None:
    aws_env.setenv("AWS_BEARER_TOKEN_BEDROCK", TOKEN)
    llm.push(
        fl.Reply(
            thinking="plan",
            text="Reading.",
            tool_calls=[ToolCallSpec("read", {"path": "a.py"}, "toolu_1")],
            thinking_signature="sig-1",
        ),
        fl.text("Done."),
    )
    model = bedrock_model(llm)
    first = await run(
        bedrock.PROVIDER, model, context(UserMessage("go"), tools=[READ_TOOL]), api_key=None, reasoning="low"
    )
    assert first.message.stop_reason == "toolUse" and first.message.api == "anthropic-bedrock"
    assert "".join(e.delta for e in first.events if isinstance(e, TextDeltaEvent)) == "Reading."
    req = llm.last_request
    assert req.path == f"/model/{BEDROCK_ID}/invoke-with-response-stream"
    assert req.headers["authorization"] == f"Bearer {TOKEN}"
    assert req.body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in req.body and "stream" not in req.body
    assert req.body["anthropic_beta"] == ["interleaved-thinking-2025-05-14"]
    call = first.message.tool_calls()[0]
    result = ToolResultMessage(call.id, "read", [TextContent("x = 1")])
    second = await run(
        bedrock.PROVIDER,
        model,
        context(UserMessage("go"), first.message, result, tools=[READ_TOOL]),
        api_key=None,
        reasoning="low",
    )
    assert second.message.text() == "Done."
    replay = json.loads(llm.last_request.raw)["messages"][1]["content"][0]
    assert replay == {"type": "thinking", "thinking": "plan", "signature": "sig-1"}


@pytest.mark.extra("bedrock")
async def test_bedrock_signs_with_aws_credentials_when_there_is_no_token(
    llm: FakeLLM, aws_env: pytest.MonkeyPatch
) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    llm.push(fl.text("signed"))
    result = await run(bedrock.PROVIDER, bedrock_model(llm, reasoning=False), context(), api_key=None)
    assert result.message.text() == "signed"
    auth = llm.last_request.headers["authorization"]
    assert (
        auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        and "/us-east-1/bedrock/aws4_request" in auth
    )
    assert "x-amz-date" in llm.last_request.headers


@pytest.mark.extra("bedrock")
async def test_bedrock_errors_say_what_to_set_and_never_echo_the_token(
    llm: FakeLLM, aws_env: pytest.MonkeyPatch
) -> None:
    no_creds = await run(bedrock.PROVIDER, bedrock_model(llm), context(), api_key=None)
    assert "AWS_BEARER_TOKEN_BEDROCK" in (no_creds.message.error_message or "")
    assert llm.llm_requests == []
    aws_env.delenv("AWS_REGION")
    aws_env.delenv("AWS_DEFAULT_REGION", raising=False)
    no_region = await run(bedrock.PROVIDER, bedrock_model(llm), context(), api_key=TOKEN)
    assert "AWS_REGION" in (no_region.message.error_message or "")
    aws_env.setenv("AWS_REGION", "us-east-1")
    llm.push(fl.error(403, f"The security token included in the request is invalid: {TOKEN}"))
    denied = await run(bedrock.PROVIDER, bedrock_model(llm), context(), api_key=TOKEN)
    text = denied.message.error_message or ""
    assert text.startswith("403 Forbidden") and TOKEN not in text


def vertex_model(llm: FakeLLM, **overrides: Any) -> Model:
    fields: dict[str, Any] = {
        "id": "claude-sonnet-4-5@20250929",
        "name": "Claude Sonnet 4.5 (Vertex)",
        "api": "anthropic-vertex",
        "provider": "anthropic-vertex",
        "base_url": f"{llm.url}/v1",
        "reasoning": False,
    }
    fields.update(overrides)
    return Model(**fields)


def write_adc(tmp_path: Path, llm: FakeLLM, project: str = "adc-project") -> Path:
    """A service-account key file (a fresh RSA key) whose token endpoint is the fake server."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path = tmp_path / "adc.json"
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": project,
                "private_key_id": "fake-key-id",
                "private_key": pem,
                "client_email": "caddie-test@adc-project.iam.gserviceaccount.com",
                "client_id": "1234567890",
                "token_uri": f"{llm.url}/token",
            }
        )
    )
    return path


@pytest.mark.extra("vertex")
async def test_vertex_authenticates_with_application_default_credentials(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(write_adc(tmp_path, llm)))
    monkeypatch.delenv("ANTHROPIC_VERTEX_PROJECT_ID", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.setenv("CLOUD_ML_REGION", "us-east5")
    llm.push(fl.text("Hello from Vertex."), fl.text("Again."))
    result = await run(vertex.PROVIDER, vertex_model(llm), context(), api_key=None)
    assert result.message.text() == "Hello from Vertex." and result.message.api == "anthropic-vertex"
    req = llm.last_request
    assert (
        req.path
        == "/v1/projects/adc-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"
    )
    assert req.headers["authorization"] == f"Bearer {llm.access_token}"
    assert req.body["anthropic_version"] == "vertex-2023-10-16" and req.body["stream"] is True
    assert "model" not in req.body
    await run(vertex.PROVIDER, vertex_model(llm), context(), api_key=None)
    assert llm.token_requests == 1  # the token is reused until it expires


@pytest.mark.extra("vertex")
async def test_vertex_without_credentials_says_what_to_do(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "my-project")
    result = await run(vertex.PROVIDER, vertex_model(llm), context(), api_key=None)
    text = result.message.error_message or ""
    assert "gcloud auth application-default login" in text
    assert llm.llm_requests == []
