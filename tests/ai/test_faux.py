"""The scripted faux provider (caddie.ai.providers.faux)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from caddie.ai import stream as ai_stream
from caddie.ai.abort import AbortController
from caddie.ai.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, Usage, UserMessage
from caddie.ai.model import Context, Model, StreamOptions
from caddie.ai.providers import faux
from caddie.ai.providers.faux import (
    NO_MORE_RESPONSES,
    FauxProvider,
    FauxScriptError,
    faux_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
    load_script,
)
from caddie.ai.stream_events import TextDeltaEvent, ToolCallDeltaEvent
from tests.ai.helpers import run


def ctx(text: str = "hello") -> Context:
    return Context("sys", [UserMessage(text)])


async def test_steps_are_played_in_order_and_counted() -> None:
    provider = FauxProvider()
    provider.set_responses([faux_message("one"), faux_message("two")])
    model = provider.get_model()
    assert model is not None
    first = await run(provider, model, ctx("a"))
    assert (first.message.text(), provider.pending_count) == ("one", 1)
    provider.append_responses([faux_message("three")])
    assert [(await run(provider, model, ctx())).message.text() for _ in range(2)] == ["two", "three"]
    assert provider.call_count == 3
    first_request = provider.requests[0].messages[0]
    assert isinstance(first_request, UserMessage) and first_request.content == "a"


async def test_an_empty_queue_answers_with_an_error() -> None:
    provider = FauxProvider()
    result = await run(provider, provider.models[0], ctx())
    assert result.types == ["error"]
    assert (result.message.stop_reason, result.message.error_message) == ("error", NO_MORE_RESPONSES)


async def test_streaming_is_simulated_block_by_block() -> None:
    provider = FauxProvider(chunk_chars=3)
    call = faux_tool_call("read", {"path": "src/main.py"}, id="t1")
    provider.set_responses([faux_message([faux_thinking("plan it"), faux_text("reading now"), call])])
    result = await run(provider, provider.models[0], ctx())
    assert result.types[0] == "start" and result.types[-1] == "done"
    for kind in (
        "thinking_start",
        "thinking_end",
        "text_start",
        "text_end",
        "toolcall_start",
        "toolcall_end",
    ):
        assert kind in result.types
    pieces = "".join(e.delta for e in result.events if isinstance(e, ToolCallDeltaEvent))
    assert json.loads(pieces) == {"path": "src/main.py"}
    assert "".join(e.delta for e in result.events if isinstance(e, TextDeltaEvent)) == "reading now"
    assert result.message.stop_reason == "toolUse"
    assert result.message.content == [
        ThinkingContent("plan it"),
        TextContent("reading now"),
        ToolCall("t1", "read", {"path": "src/main.py"}),
    ]


async def test_the_message_is_stamped_with_the_requesting_model() -> None:
    provider = FauxProvider(models=[faux.faux_model("a"), faux.faux_model("b")])
    provider.set_responses([faux_message("x")])
    model_b = provider.get_model("b")
    assert model_b is not None
    msg = (await run(provider, model_b, ctx())).message
    assert (msg.api, msg.provider, msg.model) == ("faux", "faux", "b")


async def test_usage_is_estimated_from_the_context_unless_the_step_sets_it() -> None:
    provider = FauxProvider()
    provider.set_responses(
        [faux_message("abcd" * 10), faux_message("x", usage=Usage(input=7, output=3, total_tokens=10))]
    )
    context = Context("s" * 40, [UserMessage("u" * 400)])
    estimated = (await run(provider, provider.models[0], context)).message.usage
    serialized = faux.serialize_context(context)
    assert estimated.input == -(-len(serialized) // 4)
    assert estimated.output == 10
    explicit = (await run(provider, provider.models[0], context)).message.usage
    assert (explicit.input, explicit.output) == (7, 3)


async def test_prompt_cache_is_simulated_per_session() -> None:
    provider = FauxProvider()
    provider.set_responses([faux_message("a"), faux_message("b")])
    first_ctx = Context("system " * 50, [UserMessage("q1")])
    second_ctx = Context("system " * 50, [UserMessage("q1"), UserMessage("q2")])
    first = (await run(provider, provider.models[0], first_ctx, session_id="s1")).message.usage
    second = (await run(provider, provider.models[0], second_ctx, session_id="s1")).message.usage
    assert first.cache_read == 0 and first.cache_write > 0
    assert second.cache_read > 0 and second.input < second.cache_read


async def test_a_factory_step_sees_the_context_and_call_index() -> None:
    provider = FauxProvider()
    seen: list[int] = []

    def reply(context: Context, _options: StreamOptions, call_index: int, model: Model) -> AssistantMessage:
        seen.append(call_index)
        last = context.messages[-1]
        assert isinstance(last, UserMessage) and isinstance(last.content, str)
        return faux_message(last.content.upper())

    async def async_reply(context: Context, _o: StreamOptions, _i: int, _m: Model) -> AssistantMessage:
        return faux_message("async")

    provider.set_responses([reply, async_reply])
    assert (await run(provider, provider.models[0], ctx("shout"))).message.text() == "SHOUT"
    assert (await run(provider, provider.models[0], ctx())).message.text() == "async"
    assert seen == [1]


async def test_error_steps_end_with_an_error_event() -> None:
    provider = FauxProvider()
    provider.set_responses(
        [faux_message([], error_message="529 Overloaded", error_status=529, retry_after_ms=100)]
    )
    result = await run(provider, provider.models[0], ctx())
    assert result.types[-1] == "error"
    assert (result.message.stop_reason, result.message.error_status, result.message.retry_after_ms) == (
        "error",
        529,
        100,
    )


async def test_abort_mid_stream_gives_aborted() -> None:
    provider = FauxProvider(chunk_chars=2)
    provider.set_responses([faux_message("a long answer that streams slowly")])
    ctrl = AbortController()
    events = []
    async for event in provider.stream(provider.models[0], ctx(), StreamOptions(signal=ctrl.signal)):
        events.append(event)
        if isinstance(event, TextDeltaEvent):
            ctrl.abort()
    final = events[-1]
    assert final.type == "error" and final.reason == "aborted"
    assert final.error.error_message == "Request was aborted"
    assert final.error.text() == "a "


async def test_echo_model_repeats_the_last_user_message() -> None:
    provider = FauxProvider(models=[faux.faux_model("echo")])
    msg = (
        await run(
            provider, provider.models[0], Context(None, [UserMessage("first"), UserMessage("say this back")])
        )
    ).message
    assert msg.text() == "say this back"


async def test_hooks_see_the_payload_and_a_200_response() -> None:
    provider = FauxProvider()
    provider.set_responses([faux_message("ok")])
    statuses: list[int] = []

    async def on_payload(payload: dict[str, object]) -> None:
        assert payload["systemPrompt"] == "sys"

    async def on_response(response: object) -> None:
        statuses.append(getattr(response, "status", 0))

    await run(provider, provider.models[0], ctx(), on_payload=on_payload, on_response=on_response)
    assert statuses == [200]
    assert provider.payloads[0]["messages"][0]["role"] == "user"


# -- script files --------------------------------------------------------------------------------------


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


async def test_script_file_is_loaded_on_first_use(tmp_path: Path) -> None:
    script = write(
        tmp_path / "script.json",
        [
            {"toolCalls": [{"name": "bash", "arguments": {"command": "ls"}, "id": "c1"}]},
            {"thinking": "hm", "text": "Done.", "usage": {"input": 5, "output": 2}},
            {"error": "rate limited", "status": 429, "retryAfterMs": 10},
            "plain text step",
        ],
    )
    provider = FauxProvider(script_path=script)
    model = provider.models[0]
    first = (await run(provider, model, ctx())).message
    assert first.tool_calls() == [ToolCall("c1", "bash", {"command": "ls"})]
    second = (await run(provider, model, ctx())).message
    assert (second.text(), second.usage.input) == ("Done.", 5)
    third = (await run(provider, model, ctx())).message
    assert (third.stop_reason, third.error_message, third.error_status) == ("error", "rate limited", 429)
    assert (await run(provider, model, ctx())).message.text() == "plain text step"


async def test_the_shared_provider_reads_the_script_named_by_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write(tmp_path / "s.json", [{"text": "from env"}])
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("CADDIE_FAUX_SCRIPT", str(script))
    monkeypatch.setenv("CADDIE_FAUX_LOG", str(log))
    provider = FauxProvider(script_from_env=True)
    monkeypatch.setitem(ai_stream._registry, "faux", provider)
    model = faux.faux_model("anything")
    msg = await ai_stream.complete(model, ctx("logged question"))
    assert msg.text() == "from env"
    logged = json.loads(log.read_text().splitlines()[0])
    assert logged["messages"][0]["content"] == "logged question"


async def test_a_broken_script_is_reported_as_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    provider = FauxProvider(script_path=bad)
    msg = (await run(provider, provider.models[0], ctx())).message
    assert msg.stop_reason == "error"
    assert msg.error_message is not None and "\n" not in msg.error_message
    assert str(bad) in msg.error_message and "not valid JSON" in msg.error_message


def test_script_validation_names_the_step_and_field(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", [{"text": "ok"}, {"toolCalls": [{"arguments": {}}]}])
    with pytest.raises(FauxScriptError, match=r"step 2: toolCalls\[0\] needs a string name"):
        load_script(path)
    with pytest.raises(FauxScriptError, match="unknown field 'txt'"):
        load_script(write(tmp_path / "t.json", [{"txt": "typo"}]))


async def test_delay_ms_paces_the_stream(tmp_path: Path) -> None:
    provider = FauxProvider(
        script_path=write(tmp_path / "s.json", [{"text": "abcdefghijklmnopqrstuvwx", "delayMs": 20}])
    )

    started = time.monotonic()
    await run(provider, provider.models[0], ctx())
    assert time.monotonic() - started >= 0.04


async def test_the_registry_faux_api_is_the_shared_provider() -> None:
    assert ai_stream.get_api("faux") is faux.PROVIDER
    echo = await ai_stream.complete(faux.faux_model("echo"), ctx("ping"))
    assert echo.text() == "ping"


def test_the_script_example_in_the_docs_is_valid(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "providers.md"
    blocks = re.findall(r"```json\n(.*?)```", docs.read_text(encoding="utf-8"), flags=re.S)
    scripts = [b for b in blocks if b.lstrip().startswith("[")]
    assert scripts
    steps = load_script(write(tmp_path / "doc.json", json.loads(scripts[0])))
    assert len(steps) == 5
