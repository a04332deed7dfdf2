"""Copies of the stored messages kept across turns (``MessageCopies``), and the per-message conversion cache
they make sound (``ConversionCache``): nothing a copy's holder does reaches the stored messages, and no
cache returns a conversion for a message that has changed or been replaced."""

from __future__ import annotations

import copy

import pytest

from caddie.ai.message_copies import ConversionCache, MessageCopies
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def conversation() -> list[AgentMessage]:
    return [
        UserMessage([TextContent("read a.py")], 1),
        AssistantMessage([ToolCall("c1", "read", {"path": "a.py"})], "anthropic-messages", "p", "m", Usage(), "toolUse", timestamp=2),
        ToolResultMessage("c1", "read", [TextContent("print('a')")], False, timestamp=3),
        AssistantMessage([TextContent("It prints a.")], "anthropic-messages", "p", "m", Usage(), "stop", timestamp=4),
    ]  # fmt: skip


def test_copies_are_equal_never_the_stored_objects_and_are_reused_while_unchanged() -> None:
    stored = conversation()
    copies = MessageCopies()
    first = copies.copies(stored)
    assert first == stored and all(c is not s for c, s in zip(first, stored, strict=True))
    stored.append(UserMessage([TextContent("and b.py?")], 5))
    second = copies.copies(stored)
    assert second == stored
    assert all(a is b for a, b in zip(first, second[:4], strict=True))  # the same copies again
    assert second[4] is not stored[4]
    assert second is not first  # a new list each time: a holder may reorder or extend it


def test_a_copy_changed_in_place_is_replaced_and_the_stored_message_is_untouched() -> None:
    stored = conversation()
    copies = MessageCopies()
    first = copies.copies(stored)
    first[0].content[0].text = "vandalised"  # type: ignore[union-attr]
    assistant = first[1]
    assert isinstance(assistant, AssistantMessage)
    tool_call = assistant.content[0]
    assert isinstance(tool_call, ToolCall)
    tool_call.arguments["path"] = "/etc/passwd"
    assert stored == conversation()
    second = copies.copies(stored)
    assert second == stored == conversation()
    assert second[0] is not first[0] and second[1] is not first[1]  # fresh copies of the changed ones
    assert second[2] is first[2] and second[3] is first[3]


def test_a_stored_message_changed_in_place_gets_a_fresh_copy() -> None:
    stored = conversation()
    copies = MessageCopies()
    first = copies.copies(stored)
    stored[2].content[0].text = "print('changed')"  # type: ignore[union-attr]
    second = copies.copies(stored)
    assert second == stored and second[2] is not first[2]


def test_with_only_trusted_code_the_value_check_is_skipped_and_the_test_suite_verifies_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stored = conversation()
    copies = MessageCopies()
    first = copies.copies(stored, only_trusted_code=True)
    stored.append(UserMessage([TextContent("next")], 5))
    second = copies.copies(stored, only_trusted_code=True)  # verified (CADDIE_VERIFY_COPIES): unchanged
    assert second[:4] == first and all(a is b for a, b in zip(first, second, strict=False))

    stored[0].content[0].text = "changed in place"  # type: ignore[union-attr]  # what caddie never does
    with pytest.raises(AssertionError, match=r"changed in place .* indices \[0\]"):
        copies.copies(stored, only_trusted_code=True)

    monkeypatch.delenv("CADDIE_VERIFY_COPIES")
    trusted = copies.copies(stored, only_trusted_code=True)
    assert trusted[0] is first[0] and trusted[0] != stored[0]  # trusted, not looked at: the stale copy
    checked = copies.copies(stored)
    assert checked[0] == stored[0] and checked[0] is not first[0]  # without the trust: caught, copied anew

    stored[1].content[0].arguments["path"] = "b.py"  # type: ignore[union-attr]
    after_untrusted = copies.copies(stored, only_trusted_code=True)  # the last call was not trusted: checked
    assert after_untrusted[1] == stored[1] and after_untrusted[1] is not checked[1]


def test_a_replaced_history_compaction_or_tree_navigation_is_copied_anew() -> None:
    stored = conversation()
    copies = MessageCopies()
    first = copies.copies(stored)
    summary = UserMessage([TextContent("summary of a.py")], 9)
    compacted = [summary, stored[3]]
    second = copies.copies(compacted)
    assert second == compacted and second[1] is first[3] and second[0] is not summary
    # Back to the full branch (navigation): value-equal objects reuse nothing stale.
    third = copies.copies(conversation())
    assert third == conversation()


def test_seal_keeps_unchanged_copies_and_copies_everything_else() -> None:
    stored = conversation()
    copies = MessageCopies()
    current = copies.copies(stored)
    made = UserMessage([TextContent("a note a handler added")], 6)
    current[2].content[0].text = "shrunk"  # type: ignore[union-attr]
    out = copies.seal([current[0], current[2], made, current[3]])
    assert out[0] is current[0] and out[3] is current[3]
    assert out[1] == current[2] and out[1] is not current[2]  # changed in place: same value, new object
    assert out[2] == made and out[2] is not made  # made by a handler: a copy it cannot reach
    # Changing what the handler still holds now changes nothing that was passed on.
    made.content[0].text = "changed later"  # type: ignore[union-attr]
    current[2].content[0].text = "changed later"  # type: ignore[union-attr]
    assert out[2].content[0].text == "a note a handler added"  # type: ignore[union-attr]
    assert out[1].content[0].text == "shrunk"  # type: ignore[union-attr]
    assert stored == conversation()


def test_seal_of_an_unchanged_list_returns_the_same_objects() -> None:
    copies = MessageCopies()
    current = copies.copies(conversation())
    out = copies.seal(current)
    assert out == current and all(a is b for a, b in zip(out, current, strict=True))


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
    equal = [copy.deepcopy(m) for m in history]  # equal objects are not enough: the checkpoint may hold
    assert cache.resume("fold", equal) is None  # an object changed in place since, now passed on anew
    changed = [*history]
    changed[2] = ToolResultMessage("c1", "read", [TextContent("print('b')")], False, timestamp=3)
    assert cache.resume("fold", changed) is None
    assert cache.resume("fold", history[:3]) is None  # shorter than the checkpoint
    assert cache.resume("other", grown) is None
