"""The ``pi-messages`` API (Pi's own protocol, the Radius gateway's) against a fake gateway, and a Radius
login that loads the gateway's catalogue and sends requests with its token."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import TextContent, ToolCall, UserMessage
from caddie.ai.model import Model, StreamOptions, Tool
from caddie.ai.providers.pi_messages import PROVIDER, build_payload
from caddie.models.registry import ModelRegistry
from tests.ai.helpers import READ_TOOL, context, run
from tests.models.oauth_helpers import ScriptedUser
from tests.support.fake_oauth import FakeOAuthServer

USAGE = {
    "input": 11,
    "output": 7,
    "cacheRead": 3,
    "cacheWrite": 0,
    "totalTokens": 21,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
EVENTS: list[dict[str, Any]] = [
    {"type": "start"},
    {"type": "thinking_start", "contentIndex": 0},
    {"type": "thinking_delta", "contentIndex": 0, "delta": "Hmm."},
    {"type": "thinking_end", "contentIndex": 0, "content": "Hmm.", "contentSignature": "sig-1"},
    {"type": "text_start", "contentIndex": 1},
    {"type": "text_delta", "contentIndex": 1, "delta": "Read "},
    {"type": "text_delta", "contentIndex": 1, "delta": "it."},
    {"type": "text_end", "contentIndex": 1, "content": "Read it."},
    {"type": "toolcall_start", "contentIndex": 2, "id": "call_9", "toolName": "read"},
    {"type": "toolcall_delta", "contentIndex": 2, "delta": '{"path": "a'},
    {
        "type": "toolcall_end",
        "contentIndex": 2,
        "toolCall": {"type": "toolCall", "id": "call_9", "name": "read", "arguments": {"path": "a.txt"}},
    },
    {"type": "done", "reason": "toolUse", "usage": USAGE, "responseId": "resp-9"},
]


class Gateway:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.events = EVENTS
        self.replies: list[list[dict[str, Any]]] = []
        """Event lists answered in turn before falling back to ``events``."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                owner.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                events = owner.replies.pop(0) if owner.replies else owner.events
                data = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    fake = Gateway()
    yield fake
    fake.close()


async def test_pi_events_become_the_same_message(gateway: Gateway) -> None:
    model = Model("m1", "M1", "pi-messages", "radius", f"{gateway.url}/v1", reasoning=True)
    result = await run(
        PROVIDER,
        model,
        context(UserMessage("read a.txt"), tools=[READ_TOOL]),
        api_key="rad-token",
        reasoning="high",
        session_id="s1",
    )
    message = result.message
    assert message.stop_reason == "toolUse" and message.response_id == "resp-9"
    thinking, text, call = message.content
    assert thinking.thinking == "Hmm." and thinking.thinking_signature == "sig-1"  # type: ignore[union-attr]
    assert isinstance(text, TextContent) and text.text == "Read it."
    assert isinstance(call, ToolCall) and call.arguments == {"path": "a.txt"} and call.id == "call_9"
    assert message.usage.input == 11 and message.usage.cache_read == 3
    path, headers, body = gateway.requests[0]
    assert path == "/v1/messages" and headers["authorization"] == "Bearer rad-token"
    assert body["model"] == "m1" and body["options"] == {"reasoning": "high", "sessionId": "s1"}
    assert body["context"]["messages"][0] == {
        "role": "user",
        "content": "read a.txt",
        "timestamp": body["context"]["messages"][0]["timestamp"],
    }
    assert body["context"]["tools"][0]["name"] == "read"


async def test_an_error_event_ends_the_reply_with_its_text(gateway: Gateway) -> None:
    gateway.events = [
        {"type": "start"},
        {"type": "error", "reason": "error", "errorMessage": "quota exhausted", "usage": USAGE},
    ]
    model = Model("m1", "M1", "pi-messages", "radius", gateway.url)
    result = await run(PROVIDER, model, context(UserMessage("hi")), api_key="k")
    assert result.message.stop_reason == "error" and "quota exhausted" in (result.message.error_message or "")


def test_the_payload_leaves_out_what_is_not_set() -> None:
    model = Model("m1", "M1", "pi-messages", "radius", "https://g")
    payload = build_payload(model, context(UserMessage("hi")), StreamOptions())
    assert payload["options"] == {} and set(payload["context"]) == {"systemPrompt", "messages"}


async def test_a_radius_login_loads_the_gateways_models_and_requests_carry_its_token(
    tmp_path: Path, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded: list[float] = []

    async def sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr("caddie.ai.oauth.device.SLEEP", sleep)
    with FakeOAuthServer() as auth_server:
        auth_server.route(
            "POST",
            "/v1/oauth/device",
            (
                200,
                {
                    "device_code": "d",
                    "user_code": "U",
                    "verification_uri": "https://gw.example/device",
                    "expires_in": 600,
                    "interval": 1,
                },
            ),
        )
        auth_server.route(
            "POST",
            "/v1/oauth/token",
            (200, {"access_token": "rad-access-1", "refresh_token": "rad-refresh-1", "expires_in": 3600}),
        )
        model = {
            "id": "gw-model",
            "name": "Gateway model",
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 8000,
            "maxTokens": 1000,
        }
        auth_server.route("GET", "/v1/config", (200, {"baseUrl": gateway.url, "models": [model]}))
        (tmp_path / "models.json").write_text(
            json.dumps({"providers": {"corp": {"baseUrl": auth_server.url, "oauth": "radius"}}})
        )
        registry = ModelRegistry(tmp_path / "models.json", env={}, auth=tmp_path / "auth.json")
        assert [o.provider for o in registry.login_options() if o.kind == "oauth"][-1] == "corp"
        flow = registry.oauth_flow("corp")
        assert flow is not None and flow.name == "corp"
        credential = await flow.login(ScriptedUser(select="device-code"))
        registry.auth.put("corp", credential)
        assert await registry.refresh_models("corp") == []
    found = registry.find("corp", "gw-model")
    assert found is not None and found.api == "pi-messages" and found.base_url == gateway.url
    assert registry.has_auth(found)
    store = json.loads((tmp_path / "models-store.json").read_text())
    assert store["corp"]["models"][0]["provider"] == "corp" and "checkedAt" in store["corp"]
    auth = await registry.request_auth(found)
    assert auth is not None and auth.api_key == "rad-access-1", (
        registry.auth.stored(),
        registry.oauth.has_login("corp"),
        (tmp_path / "auth.json").read_text(),
        registry.auth.warnings,
    )
    result = await run(PROVIDER, found, context(UserMessage("hi")), api_key=auth.api_key)
    assert result.message.stop_reason == "toolUse"
    assert gateway.requests[-1][1]["authorization"] == "Bearer rad-access-1"
    # A new registry (another caddie, or Pi) reads the stored catalogue without the network.
    again = ModelRegistry(tmp_path / "models.json", env={}, auth=tmp_path / "auth.json")
    assert again.find("corp", "gw-model") is not None, (
        again.warnings,
        (tmp_path / "models-store.json").read_text(),
    )


def test_tools_go_as_pis_context_holds_them_label_and_execution_mode_included() -> None:
    from caddie.tools.bash import create_bash_tool

    model = Model("m1", "M1", "pi-messages", "radius", "https://g")
    bash = create_bash_tool(".").as_provider_tool()
    plain = Tool("t", "A tool", {"type": "object"})
    payload = build_payload(model, context(UserMessage("hi"), tools=[bash, plain]), StreamOptions())
    sent = payload["context"]["tools"]
    assert list(sent[0]) == ["name", "label", "description", "parameters"] and sent[0]["label"] == "bash"
    assert sent[1] == {"name": "t", "description": "A tool", "parameters": {"type": "object"}}
    sequential = Tool("s", "S", {}, execution_mode="sequential")
    payload = build_payload(model, context(UserMessage("hi"), tools=[sequential]), StreamOptions())
    assert payload["context"]["tools"][0]["executionMode"] == "sequential"


def test_a_tools_constrained_sampling_goes_in_pis_shape_before_its_execution_mode() -> None:
    from caddie.ai.constrained_sampling import GrammarSampling, JsonSchemaSampling

    model = Model("m1", "M1", "pi-messages", "radius", "https://g")
    strict = Tool("s", "S", {}, execution_mode="sequential", constrained_sampling=JsonSchemaSampling())
    grammar = Tool("g", "G", {}, constrained_sampling=GrammarSampling(openai_regex="[a-z]+"))
    sent = build_payload(model, context(UserMessage("hi"), tools=[strict, grammar]), StreamOptions())[
        "context"
    ]
    assert list(sent["tools"][0]) == [
        "name",
        "description",
        "parameters",
        "constrainedSampling",
        "executionMode",
    ]
    assert sent["tools"][0]["constrainedSampling"] == {"type": "json_schema", "strict": "prefer"}
    assert sent["tools"][1]["constrainedSampling"] == {
        "type": "grammar",
        "variants": {"openai_regex": "[a-z]+"},
    }
