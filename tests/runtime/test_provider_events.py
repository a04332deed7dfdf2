"""Pi's provider events — ``before_provider_headers``, ``before_provider_request``, ``after_provider_response``
— through the real openai SDK against the fake server: what the handlers see, and what their answers send."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caddie.config.paths import agent_dir
from caddie.extensions.api import (
    AfterProviderResponseEvent,
    BeforeProviderHeadersEvent,
    BeforeProviderRequestEvent,
    ExtensionAPI,
    ExtensionContext,
)
from caddie.runtime.factory import SessionRequest, open_session
from caddie.runtime.session import AgentSession
from tests.runtime.harness import RecordingUI, inline_extension
from tests.support import fake_llm as fl


async def _session(cwd: Path, llm: fl.FakeLLM, register: Any) -> AgentSession:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))

    def both(api: ExtensionAPI) -> None:
        api.register_provider(
            "fake",
            {
                "baseUrl": llm.openai_base_url,
                "apiKey": "k-123",
                "api": "openai-completions",
                "headers": {"X-Team": "core", "X-Drop-Me": "1"},
                "models": [{"id": "fake-model"}],
            },
        )
        register(api)

    build = await open_session(
        SessionRequest(
            cwd=str(cwd),
            mode="print",
            model="fake/fake-model",
            session="memory",
            ui=RecordingUI(),
            inline_extensions=[inline_extension(both, "hooks")],
            no_extensions=True,
        )
    )
    await build.session.start()
    return build.session


async def test_headers_payload_and_response_hooks_fire_in_pi_order_and_change_the_request(
    tmp_path: Path,
) -> None:
    order: list[str] = []
    seen: dict[str, Any] = {}

    def register(api: ExtensionAPI) -> None:
        def on_context(event: Any, ctx: ExtensionContext) -> None:
            order.append("context")

        def on_headers(event: BeforeProviderHeadersEvent, ctx: ExtensionContext) -> None:
            order.append("before_provider_headers")
            seen["headers"] = dict(event.headers)
            event.headers["x-session-id"] = ctx.session.session_id
            event.headers["X-Drop-Me"] = None

        def first_payload(event: BeforeProviderRequestEvent, ctx: ExtensionContext) -> dict[str, Any]:
            order.append("before_provider_request")
            seen["payload"] = event.payload
            return {**event.payload, "temperature": 0.25}

        def second_payload(event: BeforeProviderRequestEvent, ctx: ExtensionContext) -> None:
            seen["chained"] = event.payload.get("temperature")
            event.payload["user"] = "tracer"  # in place also counts

        def on_response(event: AfterProviderResponseEvent, ctx: ExtensionContext) -> None:
            order.append("after_provider_response")
            seen["status"] = event.status
            seen["response_headers"] = event.headers

        api.on("context", on_context)
        api.on("before_provider_headers", on_headers)
        api.on("before_provider_request", first_payload)
        api.on("before_provider_request", second_payload)
        api.on("after_provider_response", on_response)

    with fl.FakeLLM() as llm:
        llm.push(fl.text("hello", headers={"x-ratelimit-remaining": "41"}))
        session = await _session(tmp_path, llm, register)
        await session.prompt("hi")
        await session.wait_for_idle()
        sent = llm.llm_requests[0]
        await session.shutdown("quit")

    assert order == [
        "context",
        "before_provider_headers",
        "before_provider_request",
        "after_provider_response",
    ]
    assert seen["headers"]["X-Team"] == "core"
    assert seen["payload"]["messages"][-1]["content"] == [{"type": "text", "text": "hi"}]
    assert seen["chained"] == 0.25
    assert sent.body["temperature"] == 0.25 and sent.body["user"] == "tracer"
    assert sent.headers["x-session-id"] == session.store.session_id
    assert sent.headers["x-team"] == "core"
    assert "x-drop-me" not in sent.headers
    assert seen["status"] == 200
    assert seen["response_headers"]["x-ratelimit-remaining"] == "41"


async def test_a_failing_payload_handler_is_reported_and_the_request_still_goes_out(tmp_path: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        def broken(event: BeforeProviderRequestEvent, ctx: ExtensionContext) -> None:
            raise RuntimeError("payload hook broke")

        def not_a_payload(event: BeforeProviderRequestEvent, ctx: ExtensionContext) -> str:
            return "nonsense"

        api.on("before_provider_request", broken)
        api.on("before_provider_request", not_a_payload)

    with fl.FakeLLM() as llm:
        llm.push(fl.text("fine"))
        session = await _session(tmp_path, llm, register)
        events: list[Any] = []
        session.subscribe(events.append)
        await session.prompt("hi")
        await session.wait_for_idle()
        await session.shutdown("quit")
        assert len(llm.llm_requests) == 1
    errors = [e for e in events if e.type == "extension_error"]
    assert [e.error for e in errors][:1] == ["payload hook broke"]
    assert any("expected dict" in e.error for e in errors)
    assert session.messages[-1].content[0].text == "fine"  # type: ignore[union-attr]


@pytest.mark.parametrize("handlers", [False])
async def test_without_handlers_no_hook_is_installed(tmp_path: Path, handlers: bool) -> None:
    with fl.FakeLLM() as llm:
        llm.push(fl.text("ok"))
        session = await _session(tmp_path, llm, lambda api: None)
        options = session.core.hooks._stream_options(session.model)  # type: ignore[arg-type]
        assert (options.on_payload, options.on_headers, options.on_response) == (None, None, None)
        await session.shutdown("quit")
