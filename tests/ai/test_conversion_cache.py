"""A request built with a conversion cache is byte for byte the request built without one, request after
request, while the history grows, a message in it is replaced (a mulligan shrink), its start is replaced by a
summary (compaction), the branch changes (tree navigation) or the model changes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal, cast

import pytest

from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AssistantMessage,
    ImageContent,
    LlmMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from caddie.ai.model import Api, Context, Model, ModelCompat, StreamOptions
from caddie.ai.providers import anthropic_messages, google_generative_ai, openai_completions, openai_responses
from caddie.ai.providers.request import encode_body
from tests.ai.helpers import READ_TOOL

PNG = "iVBORw0KGgo="
Build = Callable[[Model, Context, StreamOptions], dict[str, Any]]
APIS: dict[str, tuple[Build, str]] = {
    "anthropic-messages": (anthropic_messages.build_params, "anthropic"),
    "openai-completions": (openai_completions.build_params, "openai"),
    "openai-responses": (openai_responses.build_params, "openai"),
    "google-generative-ai": (google_generative_ai.build_params, "google"),
}


def turn(i: int, api: str, provider: str, model_id: str, *, images: bool = False) -> list[LlmMessage]:
    """A user question, a thinking + tool-call turn (two calls), their results, an answer."""
    calls = [f"call_{i}_{n}|fc_{i}_{n}" if api == "openai-responses" else f"call.{i}.{n}" for n in (1, 2)]
    user: list[TextContent | ImageContent] = [TextContent(f"question {i} — ünïcode")]
    if images:
        user.append(ImageContent(PNG, "image/png"))
    result_content: list[TextContent | ImageContent] = [TextContent(f"contents {i}\n" * 5)]
    if images and i % 2:
        result_content.append(ImageContent(PNG, "image/png"))
    return [
        UserMessage(user, i),
        AssistantMessage(
            [
                ThinkingContent(f"thinking {i}", f"sig-{i}" if i % 3 else None),
                ToolCall(calls[0], "read", {"path": f"f{i}.py"}),
                ToolCall(calls[1], "read", {"path": f"g{i}.py"}),
            ],
            api, provider, model_id, Usage(), "toolUse", timestamp=i,
        ),
        ToolResultMessage(calls[0], "read", result_content, False, timestamp=i),
        ToolResultMessage(calls[1], "read", [TextContent("no such file")], True, timestamp=i),
        AssistantMessage([TextContent(f"answer {i}")], api, provider, model_id, Usage(), "stop", timestamp=i),
    ]  # fmt: skip


def same_bytes(build: Build, model: Model, messages: list[LlmMessage], cache: ConversionCache) -> None:
    options = StreamOptions(session_id="s")
    cached = encode_body(build(model, Context("Be terse.", messages, [READ_TOOL], cache), options))
    fresh = encode_body(build(model, Context("Be terse.", messages, [READ_TOOL]), options))
    assert cached == fresh


@pytest.mark.parametrize("images", [False, True])
@pytest.mark.parametrize("name", list(APIS))
def test_cached_requests_are_the_uncached_bytes_through_a_session(name: str, images: bool) -> None:
    build, provider = APIS[name]
    api = cast(Api, name)
    model = Model("model-a", "A", api, provider, "http://127.0.0.1:9", reasoning=True,
                  input=["text", "image"] if images else ["text"])  # fmt: skip
    other = Model("model-b", "B", api, "elsewhere", "http://127.0.0.1:9", input=model.input)
    session(build, model, other, images)


COMPLETIONS_COMPAT = {
    "assistant-after-results": ModelCompat(requires_assistant_after_tool_result=True),
    "thinking-as-text": ModelCompat(requires_thinking_as_text=True, requires_tool_result_name=True),
    "reasoning-content": ModelCompat(requires_reasoning_content_on_assistant_messages=True),
}


@pytest.mark.parametrize("images", [False, True])
@pytest.mark.parametrize("flags", list(COMPLETIONS_COMPAT))
def test_chat_completions_compat_flags_keep_the_uncached_bytes_through_a_session(
    flags: str, images: bool
) -> None:
    """The flags that change how messages merge or what an assistant turn says, through the same session;
    the other model differs from the first only by its flags (the same id and provider)."""
    model = Model("model-a", "A", "openai-completions", "openai", "http://127.0.0.1:9", reasoning=True,
                  input=["text", "image"] if images else ["text"], compat=COMPLETIONS_COMPAT[flags])  # fmt: skip
    session(openai_completions.build_params, model, dataclasses.replace(model, compat=None), images)


def session(build: Build, model: Model, other: Model, images: bool) -> None:
    """Requests for ``model`` (and one for ``other``) through growth, a shrink, unanswered and failed turns,
    compaction and tree navigation, each checked against the request built without a cache."""
    api, provider = model.api, model.provider
    foreign = turn(90, "openai-completions", "someone", "their-model")  # another model's turn: repaired
    cache = ConversionCache()
    history: list[LlmMessage] = [*foreign, *turn(0, api, provider, model.id, images=images)]
    same_bytes(build, model, history, cache)

    for i in range(1, 4):  # the session grows; the last user turn moves on (Anthropic's cache marker)
        history = [*history, *turn(i, api, provider, model.id, images=images)]
        same_bytes(build, model, history, cache)
        same_bytes(build, model, history, cache)  # the same request again: all from the cache

    shrunk = history[7]
    assert isinstance(shrunk, ToolResultMessage)
    history[7] = ToolResultMessage(shrunk.tool_call_id, "read", [TextContent("[shrunk]")], False)
    same_bytes(build, model, history, cache)

    unanswered = AssistantMessage([ToolCall("late", "read", {"path": "x"})], api, provider, model.id,
                                  Usage(), "toolUse")  # fmt: skip
    failed = AssistantMessage([TextContent("half")], api, provider, model.id, Usage(), "error")
    history = [*history, unanswered, failed, UserMessage("go on", 99), UserMessage("   ", 100)]
    same_bytes(build, model, history, cache)

    compacted: list[LlmMessage] = [UserMessage("summary of everything so far", 1), *history[-9:]]
    same_bytes(build, model, compacted, cache)
    same_bytes(build, model, history, cache)  # back on the full branch

    same_bytes(build, other, history, cache)  # another model: other repairs, other conversions
    same_bytes(build, model, history, cache)


def test_anthropic_cache_marker_never_sticks_to_a_cached_turn() -> None:
    model = Model("claude-a", "A", "anthropic-messages", "anthropic", "http://127.0.0.1:9")
    cache = ConversionCache()
    history: list[LlmMessage] = [UserMessage([TextContent("first")], 1)]
    body = anthropic_messages.build_params(model, Context(None, history, None, cache), StreamOptions())
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    history += [
        AssistantMessage([TextContent("ok")], model.api, model.provider, model.id),
        UserMessage("next", 2),
    ]
    body = anthropic_messages.build_params(model, Context(None, history, None, cache), StreamOptions())
    assert body["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "first"}]}


def test_openrouter_cache_markers_are_added_to_fresh_messages_not_cached_ones() -> None:
    model = Model(
        "anthropic/claude-x", "X", "openai-completions", "openrouter", "https://openrouter.ai/api/v1"
    )
    cache = ConversionCache()
    history: list[LlmMessage] = [UserMessage("first", 1)]
    for n in range(3):
        same_bytes(openai_completions.build_params, model, history, cache)
        history = [*history, AssistantMessage([TextContent(f"a{n}")], model.api, model.provider, model.id),
                   UserMessage(f"u{n}", n)]  # fmt: skip


@pytest.mark.parametrize("retention", ["short", "none"])  # with and without Anthropic's cache marker
@pytest.mark.parametrize("name", list(APIS))
def test_a_request_resumed_from_the_last_one_never_changes_the_last_ones_body(
    name: str, retention: Literal["short", "none"]
) -> None:
    """The next request reuses the last one's converted prefix (a checkpoint): extending the open user
    turn of tool results, or answering a call the last request had to close, works on copies."""
    build, provider = APIS[name]
    api = cast(Api, name)
    model = Model("model-a", "A", api, provider, "http://127.0.0.1:9")
    calls = AssistantMessage([ToolCall("a", "read", {"path": "a"}), ToolCall("b", "read", {"path": "b"})],
                             api, provider, model.id, Usage(), "toolUse")  # fmt: skip
    cache = ConversionCache()
    options = StreamOptions(session_id="s", cache_retention=retention)
    history: list[LlmMessage] = [
        UserMessage("go", 1),
        calls,
        ToolResultMessage("a", "read", [TextContent("A")]),
    ]
    steps: list[list[LlmMessage]] = [
        [ToolResultMessage("b", "read", [TextContent("B")])],  # answers the call the last request closed
        [ToolResultMessage("c", "read", [TextContent("C")])],  # extends the open turn of results
        [AssistantMessage([TextContent("done")], api, provider, model.id), UserMessage("next", 2)],
    ]
    bodies: list[tuple[dict[str, Any], bytes]] = []
    for step in [[], *steps]:
        history = [*history, *step]
        params = build(model, Context("Be terse.", history, [READ_TOOL], cache), options)
        assert encode_body(params) == encode_body(
            build(model, Context("Be terse.", history, [READ_TOOL]), options)
        )
        bodies.append((params, encode_body(params)))
    for params, sent in bodies:
        assert encode_body(params) == sent  # no later request changed an earlier one's body


@pytest.mark.parametrize("flags", ["default", "assistant-after-results"])
def test_chat_completions_resumes_whole_turns_never_an_open_run_of_tool_results(flags: str) -> None:
    """A request resumes the last one's converted messages (the checkpoint), but not the run of tool
    results it ended with: the user turn carrying their images follows the whole run, and (with
    ``requiresAssistantAfterToolResult``) what follows a run depends on whether it had images. A request
    whose first messages are not the last request's very objects is converted afresh."""
    compat = COMPLETIONS_COMPAT.get(flags, ModelCompat())
    model = Model("model-a", "A", "openai-completions", "openai", "http://127.0.0.1:9",
                  input=["text", "image"], compat=compat)  # fmt: skip
    api, provider = model.api, model.provider
    cache = ConversionCache()
    options = StreamOptions(session_id="s")

    def request(messages: list[LlmMessage]) -> list[dict[str, Any]]:
        params = openai_completions.build_params(
            model, Context("Be terse.", messages, [READ_TOOL], cache), options
        )
        fresh = openai_completions.build_params(model, Context("Be terse.", messages, [READ_TOOL]), options)
        assert encode_body(params) == encode_body(fresh)
        sent: list[dict[str, Any]] = params["messages"]
        return sent

    def image_turns(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in sent if m["role"] == "user" and isinstance(m["content"], list)]

    def result(call_id: str, image: bool) -> ToolResultMessage:
        content: list[TextContent | ImageContent] = [TextContent(f"result {call_id}")]
        return ToolResultMessage(
            call_id, "read", [*content, ImageContent(PNG, "image/png")] if image else content
        )

    calls = AssistantMessage([ToolCall("a", "read", {"path": "a"}), ToolCall("b", "read", {"path": "b"})],
                             api, provider, model.id, Usage(), "toolUse")  # fmt: skip
    history: list[LlmMessage] = [UserMessage("go", 1), calls, result("a", True)]
    request(history)
    history = [*history, result("b", True)]  # answers the call the last request closed
    (turn_of_images,) = image_turns(request(history))
    assert len(turn_of_images["content"]) == 3
    history = [*history, result("c", True)]  # the run goes on: one image turn after all its results
    (turn_of_images,) = image_turns(request(history))
    assert len(turn_of_images["content"]) == 4
    history = [*history, UserMessage("and then?", 2)]  # a user turn right after the run
    sent = request(history)
    (turn_of_images,) = image_turns(sent)
    history = [
        *history,
        AssistantMessage([TextContent("done")], api, provider, model.id),
        UserMessage("ok", 3),
    ]
    resumed = request(history)
    assert resumed[: len(sent)] == sent
    assert image_turns(resumed)[0] is turn_of_images  # the last request's converted messages, resumed

    # Result b replaced by one without an image (a shrink): its request must not resume the checkpoint.
    shrunk = [*history[:3], result("b", False), *history[4:]]
    (turn_of_images,) = image_turns(request(shrunk))
    assert len(turn_of_images["content"]) == 3
    # The same objects again, then a run without images that a user turn follows (no checkpoint inside it).
    request(shrunk)
    more = AssistantMessage(
        [ToolCall("d", "read", {"path": "d"})], api, provider, model.id, Usage(), "toolUse"
    )
    history = [*shrunk, more, result("d", False)]
    request(history)
    history = [*history, UserMessage("next", 4)]
    sent = request(history)
    if compat.requires_assistant_after_tool_result:
        assert sent[-2:] == [
            {"role": "assistant", "content": "I have processed the tool results."},
            {"role": "user", "content": "next"},
        ]
    # The same messages for a model that differs only by its flags: not the first model's checkpoint.
    model = dataclasses.replace(
        model,
        compat=ModelCompat(
            requires_assistant_after_tool_result=not compat.requires_assistant_after_tool_result
        ),
    )
    request(history)
