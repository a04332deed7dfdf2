"""Messages are frozen values: no field of a stored message or block can be reassigned, a change is a new
message (``replace``), a provider's streamed draft is frozen when it is done; and the per-message conversion
cache that this makes sound answers only for the very object it converted."""

from __future__ import annotations

import copy

import msgspec
import pytest

from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    DraftAssistantMessage,
    DraftTextContent,
    DraftToolCall,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    freeze,
    message_to_json,
    replace,
)


def conversation() -> list[AgentMessage]:
    return [
        UserMessage([TextContent("read a.py")], 1),
        AssistantMessage([ToolCall("c1", "read", {"path": "a.py"})], "anthropic-messages", "p", "m", Usage(), "toolUse", timestamp=2),
        ToolResultMessage("c1", "read", [TextContent("print('a')")], False, timestamp=3),
        AssistantMessage([TextContent("It prints a.")], "anthropic-messages", "p", "m", Usage(), "stop", timestamp=4),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(4))
def test_no_field_of_a_message_can_be_reassigned(index: int) -> None:
    message = conversation()[index]
    with pytest.raises(AttributeError):
        message.timestamp = 99  # type: ignore[misc]
    if isinstance(message, AssistantMessage | ToolResultMessage):
        block = message.content[0]
        with pytest.raises(AttributeError):
            setattr(block, "text" if isinstance(block, TextContent) else "arguments", "changed")
    usage = Usage(1, 2)
    with pytest.raises(AttributeError):
        usage.input = 3  # type: ignore[misc]


def test_a_change_is_a_new_message_and_the_original_stays() -> None:
    original = conversation()[2]
    assert isinstance(original, ToolResultMessage)
    changed = replace(original, content=[TextContent("[pruned]")])
    assert changed is not original and changed.tool_call_id == original.tool_call_id
    assert original.content == [TextContent("print('a')")]


def test_a_finished_draft_freezes_into_an_equal_plain_message() -> None:
    draft = DraftAssistantMessage([], "anthropic-messages", "p", "m", stop_reason="pending", timestamp=4)
    text = DraftTextContent("")
    call = DraftToolCall("c2", "read", {})
    draft.content += [text, call]
    text.text, call.arguments, draft.stop_reason = "Reading b.", {"path": "b.py"}, "toolUse"
    done = freeze(draft)
    assert type(done) is AssistantMessage and [type(b) for b in done.content] == [TextContent, ToolCall]
    assert done == AssistantMessage(
        [TextContent("Reading b."), ToolCall("c2", "read", {"path": "b.py"})], "anthropic-messages", "p", "m",
        stop_reason="toolUse", timestamp=4,
    )  # fmt: skip
    assert message_to_json(done) == message_to_json(draft)
    assert msgspec.json.encode(done) == msgspec.json.encode(draft)
    assert freeze(done) is done
    with pytest.raises(AttributeError):
        done.content[0].text = "x"  # type: ignore[misc, union-attr]


def test_the_conversion_cache_answers_only_for_the_very_object_and_the_same_key() -> None:
    cache = ConversionCache()
    a, b = UserMessage("x", 1), UserMessage("x", 1)
    scope = cache.scope("k")
    assert scope.get(a) is None
    scope.put(a, "converted a")
    scope = cache.scope("k")
    assert scope.get(a) == "converted a" and scope.get(b) is None  # equal but another object
    assert cache.scope("other").get(a) is None
    scope = cache.scope("k")  # the last "k" request used a: still there
    assert scope.get(a) == "converted a"
    assert cache.scope("k").get(a) == "converted a"
    cache.scope("k")  # a request that did not use a ...
    assert cache.scope("k").get(a) is None  # ... drops it


def test_the_conversion_cache_keeps_a_few_keys_only() -> None:
    cache = ConversionCache()
    m = UserMessage("x", 1)
    for key in range(ConversionCache.MAX_KEYS + 1):
        cache.scope(key).put(m, key)
    assert cache.scope(0).get(m) is None  # the oldest key went
    assert cache.scope(ConversionCache.MAX_KEYS).get(m) == ConversionCache.MAX_KEYS


def test_a_checkpoint_resumes_for_the_very_same_messages_only() -> None:
    cache = ConversionCache()
    history = conversation()
    cache.scope("fold")
    cache.checkpoint("fold", history, "state after four")
    grown = [*history, UserMessage([TextContent("more")], 5)]
    assert cache.resume("fold", grown) == (4, "state after four")
    equal = [copy.deepcopy(m) for m in history]  # equal objects are not the very objects
    assert cache.resume("fold", equal) is None
    changed = [*history]
    changed[2] = ToolResultMessage("c1", "read", [TextContent("print('b')")], False, timestamp=3)
    assert cache.resume("fold", changed) is None
    assert cache.resume("fold", history[:3]) is None  # shorter than the checkpoint
    assert cache.resume("other", grown) is None
