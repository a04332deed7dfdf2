"""Native deferred tool loading on the Anthropic Messages API, side by side with Pi 0.84.4's own pi-ai module:
a tool that a tool result announced (``addedToolNames``) goes in ``tools`` with ``defer_loading: true``, and
that result carries a ``tool_reference`` block instead of its text (the text follows beside it) — with an API
key and, under Claude Code's names, with a Claude Pro/Max token. Both requests go to the same fake server and
their bodies must be equal. Skips (with the reason) where Pi is absent; fails under ``CI=1``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import message_from_json
from caddie.ai.model import Context, Model, Tool
from caddie.ai.providers.anthropic_messages import PROVIDER
from tests.ai.helpers import run
from tests.interop.pi import HERE, PI_DIR, require_pi
from tests.support import fake_llm as fl

TOOLS: list[dict[str, Any]] = [
    {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {}}},
    {"name": "activate", "description": "Turn on more tools", "parameters": {"type": "object"}},
    {
        "name": "docs_search",
        "description": "Search the docs",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
]
USAGE = {
    "input": 1,
    "output": 1,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 2,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Find the docs on locks.", "timestamp": 1},
    {
        "role": "assistant",
        "content": [{"type": "toolCall", "id": "toolu_01", "name": "activate", "arguments": {}}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": USAGE,
        "stopReason": "toolUse",
        "timestamp": 2,
    },
    {
        "role": "toolResult",
        "toolCallId": "toolu_01",
        "toolName": "activate",
        "content": [{"type": "text", "text": "docs_search is on."}],
        "isError": False,
        "addedToolNames": ["docs_search"],
        "timestamp": 3,
    },
]


def pi_request(node: str, model: dict[str, Any], api_key: str) -> None:
    payload = {
        "api": "anthropic-messages",
        "model": model,
        "context": {"systemPrompt": "You are terse.", "messages": MESSAGES, "tools": TOOLS},
        "options": {"apiKey": api_key},
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
    assert json.loads(proc.stdout)["type"] == "done", proc.stdout


@pytest.mark.parametrize("api_key", ["sk-ant-api03-deferred-0123", "sk-ant-oat01-deferred-0123"])
async def test_deferred_tools_go_as_pi_sends_them(api_key: str, tmp_path: Path) -> None:
    node = require_pi()
    with fl.FakeLLM() as llm:
        pi_model = {
            "id": "claude-sonnet-4-5",
            "name": "Claude Sonnet 4.5",
            "api": "anthropic-messages",
            "provider": "anthropic",
            "baseUrl": llm.url,
            "reasoning": False,
            "input": ["text"],
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
            "contextWindow": 200000,
            "maxTokens": 64000,
        }
        llm.push(fl.text("Found it."), fl.text("Found it."))
        pi_request(node, pi_model, api_key)
        model = Model(
            "claude-sonnet-4-5",
            "Claude Sonnet 4.5",
            "anthropic-messages",
            "anthropic",
            llm.url,
            max_tokens=64000,
            context_window=200000,
        )
        tools = [Tool(t["name"], t["description"], t["parameters"]) for t in TOOLS]
        messages: list[Any] = [message_from_json(m) for m in MESSAGES]
        await run(PROVIDER, model, Context("You are terse.", messages, tools), api_key=api_key)
        theirs, ours = llm.llm_requests
    assert ours.body == theirs.body
    deferred = [t["name"] for t in ours.body["tools"] if t.get("defer_loading")]
    assert len(deferred) == 1 and deferred[0].lower().replace("_", "") == "docssearch"
    result, beside = ours.body["messages"][-1]["content"]
    assert result["type"] == "tool_result"
    assert result["content"] == [{"type": "tool_reference", "tool_name": deferred[0]}]
    assert beside["type"] == "text" and beside["text"] == "docs_search is on."
