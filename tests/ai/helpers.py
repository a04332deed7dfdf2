"""Small builders shared by the provider tests: models aimed at the fake server, and stream collection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caddie.ai.messages import AssistantMessage, LlmMessage, UserMessage
from caddie.ai.model import Context, Model, StreamOptions, Tool
from caddie.ai.stream import ApiProvider
from caddie.ai.stream_events import AssistantMessageEvent, final_message
from tests.support.fake_llm import FakeLLM

READ_TOOL = Tool(
    "read",
    "Read a file",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
TEST_KEY = "sk-test-0123456789abcdefghij"


def openai_model(llm: FakeLLM | None, **overrides: Any) -> Model:
    """A Chat Completions model aimed at ``llm`` (or at nothing, for conversion-only tests)."""
    fields: dict[str, Any] = {
        "id": "gpt-test",
        "name": "GPT Test",
        "api": "openai-completions",
        "provider": "openai",
        "base_url": llm.openai_base_url if llm is not None else "http://127.0.0.1:9/v1",
    }
    fields.update(overrides)
    return Model(**fields)


def anthropic_model(llm: FakeLLM | None, **overrides: Any) -> Model:
    """A Messages model aimed at ``llm`` (or at nothing, for conversion-only tests)."""
    fields: dict[str, Any] = {
        "id": "claude-test",
        "name": "Claude Test",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "base_url": llm.anthropic_base_url if llm is not None else "http://127.0.0.1:9",
    }
    fields.update(overrides)
    return Model(**fields)


def context(
    *messages: LlmMessage, system: str | None = "You are terse.", tools: list[Tool] | None = None
) -> Context:
    return Context(system, list(messages) or [UserMessage("hi")], tools)


@dataclass
class Run:
    events: list[AssistantMessageEvent]
    message: AssistantMessage

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]


async def run(provider: ApiProvider, model: Model, ctx: Context, **options: Any) -> Run:
    options.setdefault("api_key", TEST_KEY)
    events: list[AssistantMessageEvent] = []
    async for event in provider.stream(model, ctx, StreamOptions(**options)):
        events.append(event)
    final = final_message(events[-1])
    assert final is not None, f"stream ended without done/error: {[e.type for e in events]}"
    return Run(events, final)
