"""The loop projects host roles to LLM messages (``convert_to_llm``) only for the messages it has not
projected before: with the runtime's conversion cache, a turn that starts with the very same objects as the
last one reuses their projections (same objects, so the provider's per-message caches hit), and anything
else is projected afresh. Either way the result equals a projection from nothing."""

from __future__ import annotations

from caddie.agent.loop import LoopConfig, _llm_messages
from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    LlmMessage,
    TextContent,
    UserMessage,
    convert_to_llm,
)
from caddie.ai.model import Model

MODEL = Model("m", "M", "openai-completions", "p", "http://127.0.0.1:9/v1")


def config(cache: ConversionCache | None) -> LoopConfig:
    async def no_stream(*_args: object) -> None:  # never called here
        raise AssertionError

    return LoopConfig(MODEL, no_stream, conversion_cache=cache)  # type: ignore[arg-type]


def history() -> list[AgentMessage]:
    return [
        CompactionSummaryMessage("what happened before", 10),
        UserMessage("task", 1),
        AssistantMessage([TextContent("on it")], "openai-completions", "p", "m"),
        CustomMessage("note", "a note from an extension", timestamp=2),
        BashExecutionMessage("ls", "a b", 0, timestamp=3),
        BashExecutionMessage("secret", "hidden", 0, exclude_from_context=True, timestamp=4),
        BranchSummaryMessage("the other branch", "e1", 5),
    ]


def test_each_turn_equals_a_projection_from_nothing_and_reuses_the_projected_objects() -> None:
    cache = ConversionCache()
    cfg = config(cache)
    messages = history()
    first = _llm_messages(cfg, messages)
    assert first == convert_to_llm(messages)
    assert len(first) == 6  # the `!!` run is dropped

    messages = [*messages, UserMessage("more", 6), CustomMessage("note", "another", timestamp=7)]
    second = _llm_messages(cfg, messages)
    assert second == convert_to_llm(messages)
    assert all(a is b for a, b in zip(first, second[: len(first)], strict=False))  # reused, not rebuilt
    assert second[-1] is not first[-1]


def test_a_changed_prefix_is_projected_afresh() -> None:
    cache = ConversionCache()
    cfg = config(cache)
    messages = history()
    first = _llm_messages(cfg, messages)
    replaced = [*messages]
    replaced[3] = CustomMessage("note", "a different note", timestamp=2)  # another object at index 3
    again = _llm_messages(cfg, replaced)
    assert again == convert_to_llm(replaced)
    assert again[3] != first[3] and again[3].content == [TextContent("a different note")]

    shorter = messages[:3]  # e.g. after navigating the tree
    assert _llm_messages(cfg, shorter) == convert_to_llm(shorter)


def test_without_the_cache_or_with_a_custom_projection_nothing_is_kept() -> None:
    messages = history()
    plain = config(None)
    assert _llm_messages(plain, messages) == convert_to_llm(messages)
    assert _llm_messages(plain, messages)[0] is not _llm_messages(plain, messages)[0]  # built each time

    calls: list[int] = []

    def custom(ms: list[AgentMessage]) -> list[LlmMessage]:
        calls.append(len(ms))
        return [UserMessage("only this")]

    cache = ConversionCache()
    cfg = config(cache)
    cfg.convert_to_llm = custom
    assert _llm_messages(cfg, messages) == [UserMessage("only this")]
    assert _llm_messages(cfg, messages) == [UserMessage("only this")]
    assert calls == [7, 7]
