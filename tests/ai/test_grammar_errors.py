"""A tool whose grammar cannot be used ends the reply with an error event, through ``caddie.ai.stream`` on
every API that sends grammars, as a strict-mode problem does: never an exception out of the stream."""

from __future__ import annotations

from typing import Any

import pytest

from caddie.ai.constrained_sampling import GrammarSampling
from caddie.ai.messages import UserMessage
from caddie.ai.model import Model, ModelCompat, StreamOptions, Tool
from caddie.ai.stream import stream
from tests.ai.helpers import TEST_KEY, context
from tests.support.fake_llm import FakeLLM

NO_VARIANT = Tool(
    "pick",
    "Pick one",
    {"type": "object", "properties": {"choice": {"type": "string"}}, "required": ["choice"]},
    constrained_sampling=GrammarSampling(),
)
TWO_STRINGS = Tool(
    "pair",
    "Two strings",
    {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    },
    constrained_sampling=GrammarSampling(openai_regex="[a-z]+"),
)


@pytest.mark.parametrize(
    "api", ["openai-completions", "openai-responses", "azure-openai-responses", "openai-codex-responses"]
)
@pytest.mark.parametrize(
    ("tool", "says"),
    [
        (NO_VARIANT, 'Tool "pick" cannot use grammar constrained sampling: no supported grammar variant'),
        (
            TWO_STRINGS,
            'Tool "pair" cannot use grammar constrained sampling: grammar constrained sampling requires',
        ),
    ],
)
async def test_an_unusable_grammar_is_an_error_event(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, api: Any, tool: Tool, says: str
) -> None:
    monkeypatch.setenv("AZURE_OPENAI_BASE_URL", f"{llm.url}/openai/v1")
    fields: dict[str, Any] = {"base_url": llm.openai_base_url} if api != "azure-openai-responses" else {}
    model = Model(
        "gpt-test",
        "GPT Test",
        api,
        "openai",
        **fields,
        compat=ModelCompat(supports_open_ai_grammar_tools=True),
    )
    events = [
        event
        async for event in stream(
            model, context(UserMessage("pick"), tools=[tool]), StreamOptions(api_key=TEST_KEY)
        )
    ]
    assert [event.type for event in events] == ["error"]
    assert events[0].error.stop_reason == "error"  # type: ignore[union-attr]
    assert (events[0].error.error_message or "").startswith(says)  # type: ignore[union-attr]
    assert llm.requests == []  # nothing was sent
