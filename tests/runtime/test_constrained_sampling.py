"""An extension's tool with ``constrained_sampling`` (Pi's ``constrainedSampling``) through a real session and
the real openai SDK against the fake server: the request carries the strict tool; a tool requiring strict mode
on a server without it ends the turn with Pi's sentence; a bad setting is refused when the tool is made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import AssistantMessage
from caddie.config.paths import agent_dir
from caddie.extensions.api import ExtensionAPI, JsonSchemaSampling, ToolDefinition, text_result
from caddie.runtime.factory import SessionRequest, open_session
from tests.runtime.harness import RecordingUI, inline_extension
from tests.support import fake_llm as fl

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


async def ask(cwd: Path, llm: fl.FakeLLM, strict: str, server_strict: bool) -> AssistantMessage:
    path = agent_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": ["mulligan", "goal", "mcp"]}))

    async def forecast(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        return text_result("sunny")

    def register(api: ExtensionAPI) -> None:
        api.register_provider(
            "fake",
            {
                "baseUrl": llm.openai_base_url,
                "apiKey": "k-123",
                "api": "openai-completions",
                "compat": {"supportsStrictMode": server_strict},
                "models": [{"id": "fake-model"}],
            },
        )
        api.register_tool(
            ToolDefinition(
                "forecast",
                "The weather",
                SCHEMA,
                forecast,
                constrained_sampling=JsonSchemaSampling(strict),  # type: ignore[arg-type]
            )
        )

    build = await open_session(
        SessionRequest(
            cwd=str(cwd),
            mode="print",
            model="fake/fake-model",
            session="memory",
            ui=RecordingUI(),
            inline_extensions=[inline_extension(register, "weather")],
            no_extensions=True,
        )
    )
    session = build.session
    await session.start()
    llm.push(fl.text("It is sunny."))
    await session.prompt("Weather in Oslo?")
    await session.wait_for_idle()
    reply = next(m for m in reversed(session.messages) if isinstance(m, AssistantMessage))
    await session.shutdown("quit")
    return reply


async def test_a_strict_extension_tool_goes_strict(tmp_path: Path, isolated_caddie_dir: Path) -> None:
    with fl.FakeLLM() as llm:
        reply = await ask(tmp_path, llm, "prefer", True)
        tool = next(t for t in llm.llm_requests[-1].body["tools"] if t["function"]["name"] == "forecast")
    assert reply.stop_reason == "stop"
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    }


async def test_a_required_strict_tool_on_a_server_without_it_ends_the_turn_with_the_reason(
    tmp_path: Path, isolated_caddie_dir: Path
) -> None:
    with fl.FakeLLM() as llm:
        reply = await ask(tmp_path, llm, "require", False)
        sent = len(llm.llm_requests)
    assert reply.stop_reason == "error" and sent == 0
    assert reply.error_message == (
        'Tool "forecast" requires JSON-schema constrained sampling, but strict tools are unsupported.'
    )


def test_a_setting_caddie_cannot_use_is_refused_when_the_tool_is_made() -> None:
    with pytest.raises(ValueError, match="constrained_sampling"):
        ToolDefinition("t", "d", SCHEMA, None, constrained_sampling={"type": "json", "strict": "always"})  # type: ignore[arg-type]


@pytest.mark.parametrize("variable", ["CADDIE_EXPERIMENTAL", "PI_EXPERIMENTAL"])
async def test_experimental_makes_the_core_tools_prefer_strict_as_pi(
    tmp_path: Path, isolated_caddie_dir: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "1")
    with fl.FakeLLM() as llm:
        await ask(tmp_path, llm, "prefer", True)
        tools = {t["function"]["name"]: t["function"] for t in llm.llm_requests[-1].body["tools"]}
    assert {name for name, tool in tools.items() if tool.get("strict")} >= {"read", "bash", "edit", "write"}
    assert tools["read"]["parameters"]["additionalProperties"] is False


async def test_without_experimental_the_core_tools_are_not_strict(
    tmp_path: Path, isolated_caddie_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CADDIE_EXPERIMENTAL", raising=False)
    monkeypatch.delenv("PI_EXPERIMENTAL", raising=False)
    with fl.FakeLLM() as llm:
        await ask(tmp_path, llm, "prefer", True)
        tools = {t["function"]["name"]: t["function"] for t in llm.llm_requests[-1].body["tools"]}
    assert not any(tools[name].get("strict") for name in ("read", "bash", "edit", "write"))


def test_pi_experimental_says_what_is_honoured() -> None:
    from caddie.config.environment import pi_variable_notices

    [line] = pi_variable_notices({"PI_EXPERIMENTAL": "1"})
    assert line.startswith("PI_EXPERIMENTAL=1 is partly honoured: read, bash, edit and write prefer strict")
