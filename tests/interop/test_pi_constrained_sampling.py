"""``constrainedSampling`` on tools, side by side with Pi 0.84.4's own pi-ai modules: the same tools sent by Pi
and by caddie (through the real SDK clients) to the same fake server give the same ``tools`` (strict schemas,
``strict`` flags, OpenAI custom tools with a grammar, Gemini's ``VALIDATED`` mode), and a tool that requires
strict mode where it cannot have it fails both requests with the same sentence. Skips (with the reason) where
Pi or an optional SDK is absent; fails under ``CI=1``."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from caddie.ai.constrained_sampling import (
    GrammarSampling,
    JsonSchemaSampling,
    constrained_sampling_json,
    make_strict_json_schema,
)
from caddie.ai.messages import TextContent, ToolCall, ToolResultMessage, UserMessage, message_to_json
from caddie.ai.model import Context, Model, ModelCompat, Tool
from caddie.ai.stream import get_api
from caddie.ai.stream_events import ToolCallDeltaEvent
from tests.ai.helpers import run
from tests.interop.pi import HERE, PI_DIR, require_pi
from tests.interop.test_pi_wire_apis import aws as aws  # the Bedrock credentials fixture
from tests.interop.test_pi_wire_apis import pi_model
from tests.support import fake_llm as fl

EDIT = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"],
            },
        },
        "dryRun": {"type": "boolean"},
        "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    },
    "required": ["path", "edits"],
}
LOOSE = {"type": "object", "properties": {"data": {"type": "object", "additionalProperties": True}}}
"""Outside the strict subset (open objects)."""
PATCH = {
    "type": "object",
    "properties": {"patch": {"type": "string", "description": "The patch"}},
    "required": ["patch"],
}
LARK = 'start: "*** Begin Patch" /(.|\\n)*/ "*** End Patch"'


def pi_tool(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.constrained_sampling is not None:
        out["constrainedSampling"] = constrained_sampling_json(tool.constrained_sampling)
    return out


def tools(strict: str = "prefer") -> list[Tool]:
    return [
        Tool("edit", "Edit a file", EDIT, constrained_sampling=JsonSchemaSampling(strict)),  # type: ignore[arg-type]
        Tool("loose", "Anything goes", LOOSE, constrained_sampling=JsonSchemaSampling("prefer")),
        Tool("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ]


@pytest.fixture
def llm() -> Iterator[fl.FakeLLM]:
    with fl.FakeLLM() as server:
        yield server


async def both(
    llm: fl.FakeLLM, model: Model, compat: dict[str, Any], sent: list[Tool], api_key: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pi's and caddie's outcome: ``{"error": …}`` or the recorded request body, for one turn with ``sent``."""
    node = require_pi()
    llm.push(fl.text("Done."), fl.text("Done."))
    payload = {
        "api": model.api,
        "model": {**pi_model(model), "compat": compat},
        "context": {
            "systemPrompt": "You are terse.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Go."}], "timestamp": 1}],
            "tools": [pi_tool(t) for t in sent],
        },
        "options": {"apiKey": api_key} if api_key else {},
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
    pi_outcome = json.loads(proc.stdout)
    theirs: dict[str, Any] = (
        {"error": pi_outcome["error"]} if pi_outcome["type"] == "error" else llm.llm_requests[-1].body
    )
    seen = len(llm.llm_requests)
    caddie_model = dataclasses.replace(model, compat=ModelCompat.from_json(compat)) if compat else model
    provider = get_api(model.api)
    assert provider is not None
    result = await run(
        provider, caddie_model, Context("You are terse.", [UserMessage("Go.")], sent), api_key=api_key
    )
    ours: dict[str, Any] = (
        {"error": result.message.error_message}
        if result.message.stop_reason == "error"
        else llm.llm_requests[-1].body
    )
    assert len(llm.llm_requests) == seen + (0 if "error" in ours else 1)
    return ours, theirs


def openai(llm: fl.FakeLLM, api: str = "openai-completions") -> Model:
    return Model("gpt-5", "GPT-5", api, "openai", llm.openai_base_url)  # type: ignore[arg-type]


@pytest.mark.parametrize("supports", [True, False], ids=["strict-server", "no-strict-field"])
async def test_openai_completions_sends_pis_strict_tools(llm: fl.FakeLLM, supports: bool) -> None:
    ours, theirs = await both(llm, openai(llm), {"supportsStrictMode": supports}, tools(), "sk-1")
    assert ours["tools"] == theirs["tools"]
    edit = ours["tools"][0]["function"]
    if supports:
        assert edit["strict"] is True and edit["parameters"] == make_strict_json_schema(EDIT)
        assert ours["tools"][1]["function"]["strict"] is False  # outside the subset: sent as usual
    else:
        assert "strict" not in edit and edit["parameters"] == EDIT


async def test_openai_responses_and_anthropic_send_pis_strict_tools(llm: fl.FakeLLM) -> None:
    ours, theirs = await both(
        llm, openai(llm, "openai-responses"), {"supportsStrictMode": True}, tools(), "sk-1"
    )
    assert ours["tools"] == theirs["tools"] and ours["tools"][0]["strict"] is True
    claude = Model("claude-sonnet-4-5", "Claude", "anthropic-messages", "anthropic", llm.anthropic_base_url)
    ours, theirs = await both(llm, claude, {"supportsStrictTools": True}, tools(), "sk-ant-api03-key")
    assert ours["tools"] == theirs["tools"]
    assert (
        ours["tools"][0]["strict"] is True
        and ours["tools"][0]["input_schema"]["additionalProperties"] is False
    )
    assert "strict" not in ours["tools"][1]


@pytest.mark.parametrize(
    ("api", "provider", "model_id"),
    [
        ("google-generative-ai", "google", "gemini-3-pro-preview"),
        ("google-generative-ai", "google", "gemini-2.5-pro"),
        ("google-vertex", "google-vertex", "gemini-3-pro-preview"),
    ],
)
async def test_gemini_validates_strict_tools_from_gemini_3_on(
    llm: fl.FakeLLM, api: str, provider: str, model_id: str
) -> None:
    model = Model(model_id, model_id, api, provider, llm.url)  # type: ignore[arg-type]
    ours, theirs = await both(llm, model, {}, tools(), "gemini-key")
    assert ours["tools"] == theirs["tools"] and ours.get("toolConfig") == theirs.get("toolConfig")
    assert ("toolConfig" in ours) is model_id.startswith("gemini-3")


async def test_mistral_sends_pis_strict_tools(llm: fl.FakeLLM) -> None:
    model = Model("devstral-medium-latest", "Devstral", "mistral-conversations", "mistral", llm.url)
    ours, theirs = await both(llm, model, {}, tools(), "mistral-key")
    assert ours["tools"] == theirs["tools"] and ours["tools"][0]["function"]["strict"] is True


@pytest.mark.extra("bedrock")
async def test_bedrock_sends_pis_strict_tools(llm: fl.FakeLLM, aws: None) -> None:
    model = Model("amazon.nova-2-lite-v1:0", "Nova", "bedrock-converse-stream", "amazon-bedrock", llm.url)
    ours, theirs = await both(llm, model, {"supportsStrictMode": True}, tools(), None)
    assert ours["toolConfig"] == theirs["toolConfig"]
    assert ours["toolConfig"]["tools"][0]["toolSpec"]["strict"] is True


async def test_a_required_strict_tool_fails_as_pi_fails_where_it_cannot_be_strict(llm: fl.FakeLLM) -> None:
    ours, theirs = await both(llm, openai(llm), {"supportsStrictMode": False}, tools("require"), "sk-1")
    assert (
        ours
        == theirs
        == {
            "error": 'Tool "edit" requires JSON-schema constrained sampling, but strict tools are unsupported.'
        }
    )
    loose = [Tool("loose", "Anything goes", LOOSE, constrained_sampling=JsonSchemaSampling("require"))]
    ours, theirs = await both(llm, openai(llm), {"supportsStrictMode": True}, loose, "sk-1")
    assert ours == theirs
    assert "schema-valued or true additionalProperties is unsupported" in ours["error"]


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
async def test_a_grammar_tool_goes_as_an_openai_custom_tool(llm: fl.FakeLLM, api: str) -> None:
    patch = Tool(
        "apply_patch", "Apply a patch", PATCH, constrained_sampling=GrammarSampling(openai_lark=LARK)
    )
    compat = {"supportsOpenAIGrammarTools": True, "supportsStrictMode": True}
    ours, theirs = await both(llm, openai(llm, api), compat, [patch, *tools()], "sk-1")
    assert ours["tools"] == theirs["tools"]
    assert ours["tools"][0]["type"] == "custom"
    ours, theirs = await both(llm, openai(llm, api), {"supportsStrictMode": True}, [patch], "sk-1")
    assert (
        ours["tools"] == theirs["tools"] and ours["tools"][0]["type"] == "function"
    )  # no grammar tools here


def patch_tool() -> Tool:
    return Tool("apply_patch", "Apply a patch", PATCH, constrained_sampling=GrammarSampling(openai_lark=LARK))


@pytest.mark.parametrize("api", ["openai-completions", "openai-responses"])
async def test_a_custom_tool_call_reads_and_replays_as_pis(llm: fl.FakeLLM, api: str) -> None:
    """The server's custom tool call becomes a call with the input in the tool's one property (Pi's deltas:
    the JSON of ``{"patch": …}``); sent back, it is a custom tool call again, its result a custom output."""
    node = require_pi()
    patch = '*** Begin Patch\n+say "hi"\n*** End Patch'
    compat = {"supportsOpenAIGrammarTools": True, "supportsStrictMode": True}
    model = dataclasses.replace(openai(llm, api), compat=ModelCompat.from_json(compat))
    call = fl.ToolCallSpec("apply_patch", patch, id="call_7", custom=True)
    llm.push(fl.tool_calls(call), fl.tool_calls(call))
    payload = {
        "api": api,
        "model": {**pi_model(model), "compat": compat},
        "context": {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Go."}], "timestamp": 1}],
            "tools": [pi_tool(patch_tool())],
        },
        "options": {"apiKey": "sk-1"},
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
    pi_call = json.loads(proc.stdout)["content"][-1]
    provider = get_api(api)
    assert provider is not None
    result = await run(provider, model, Context(None, [UserMessage("Go.")], [patch_tool()]), api_key="sk-1")
    ours = result.message.content[-1]
    assert isinstance(ours, ToolCall)
    assert ours.arguments == pi_call["arguments"] == {"patch": patch}
    assert ours.id == pi_call["id"] and ours.name == "apply_patch"
    deltas = "".join(e.delta for e in result.events if isinstance(e, ToolCallDeltaEvent))
    assert json.loads(deltas) == {"patch": patch}  # the deltas spell the arguments' JSON, as Pi's

    replay = [
        UserMessage("Go."),
        result.message,
        ToolResultMessage(ours.id, "apply_patch", [TextContent("applied")]),
    ]
    ours_sent, theirs_sent = await replayed(llm, model, compat, replay)
    key = "messages" if api == "openai-completions" else "input"
    assert ours_sent[key] == theirs_sent[key]
    text = json.dumps(ours_sent[key])
    assert ("custom_tool_call_output" in text) is (api == "openai-responses")
    assert '"custom"' in text or '"custom_tool_call"' in text


async def replayed(
    llm: fl.FakeLLM, model: Model, compat: dict[str, Any], messages: list[Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bodies caddie and Pi send for ``messages`` with the patch tool."""
    node = require_pi()
    llm.push(fl.text("Done."), fl.text("Done."))
    payload = {
        "api": model.api,
        "model": {**pi_model(model), "compat": compat},
        "context": {"messages": [message_to_json(m) for m in messages], "tools": [pi_tool(patch_tool())]},
        "options": {"apiKey": "sk-1"},
    }
    proc = subprocess.run(
        [node, str(HERE / "pi_stream.mjs")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CADDIE_PI_DIR": str(PI_DIR)},
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["type"] == "done", (
        proc.stdout + proc.stderr[-2000:]
    )
    theirs = llm.llm_requests[-1].body
    provider = get_api(model.api)
    assert provider is not None
    await run(provider, model, Context(None, messages, [patch_tool()]), api_key="sk-1")
    return llm.llm_requests[-1].body, theirs
