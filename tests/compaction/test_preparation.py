"""Pure compaction logic: cut points, split turns, the summarised window, file lists, serialisation, views."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    replace,
)
from caddie.ai.tokens import estimate_message_tokens
from caddie.session.branch_summary import collect_entries_for_branch_summary, prepare_branch_entries
from caddie.session.compaction import (
    CompactionSettings,
    find_cut_point,
    prepare_compaction,
    serialize_conversation,
    summary_prompt,
)
from caddie.session.entries import MessageEntry, SessionEntry
from caddie.session.store import SessionStore


def assistant(*blocks: TextContent | ToolCall | ThinkingContent) -> AssistantMessage:
    calls = any(isinstance(b, ToolCall) for b in blocks)
    return AssistantMessage(
        list(blocks), "faux", "faux", "faux-1", stop_reason="toolUse" if calls else "stop"
    )


def tool_turns(
    store: SessionStore, sizes: list[int], prompt: str = "fix the bug", tool: str = "read"
) -> None:
    """One user prompt, then one tool call + result per size (result of ``size`` characters)."""
    store.append_message(UserMessage(prompt))
    for size in sizes:
        n = len(store)
        call = ToolCall(f"call{n}", tool, {"path": f"src/f{n}.py"})
        store.append_message(assistant(call))
        store.append_message(ToolResultMessage(call.id, tool, [TextContent("x" * size)]))
    store.append_message(assistant(TextContent("done")))


def role(entry: SessionEntry) -> str:
    return entry.message.role if isinstance(entry, MessageEntry) else entry.type


def kept_tokens(path: list[SessionEntry], start: int) -> int:
    return sum(estimate_message_tokens(e.message) for e in path[start:] if isinstance(e, MessageEntry))


# --------------------------------------------------------------------------------------------------
# Cut points


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(st.lists(st.integers(0, 6000), min_size=0, max_size=8), min_size=1, max_size=5),
    keep=st.integers(1, 12_000),
)
def test_a_cut_never_separates_a_tool_call_from_its_result(turns: list[list[int]], keep: int) -> None:
    store = SessionStore.in_memory()
    for n, sizes in enumerate(turns):
        tool_turns(store, sizes, prompt=f"prompt {n}")
    path = store.branch()
    cut = find_cut_point(path, 0, len(path), keep)
    first = path[cut.first_kept_index]
    assert role(first) != "toolResult"
    calls_kept = {
        c.id
        for e in path[cut.first_kept_index :]
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
        for c in e.message.tool_calls()
    }
    for e in path[cut.first_kept_index :]:
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage):
            assert e.message.tool_call_id in calls_kept


def test_the_cut_in_a_long_tool_chain_keeps_about_keep_recent_tokens_at_an_assistant_message() -> None:
    store = SessionStore.in_memory()
    tool_turns(store, [4000] * 30)  # each result ~1000 tokens
    path = store.branch()
    cut = find_cut_point(path, 0, len(path), 5000)
    kept = kept_tokens(path, cut.first_kept_index)
    assert role(path[cut.first_kept_index]) == "assistant"
    assert 5000 - 1100 < kept <= 5000  # the budget, less at most the call and result it fell in
    assert cut.is_split_turn and cut.turn_start_index == 0


def test_settings_entries_just_before_the_cut_stay_with_the_kept_part() -> None:
    store = SessionStore.in_memory()
    tool_turns(store, [4000] * 4)
    store.append_message(UserMessage("second prompt"))
    store.append_message(assistant(TextContent("y" * 4000)))
    path = store.branch()
    user_index = next(i for i, e in enumerate(path) if role(e) == "user" and i > 0)
    # put a label and a model change between the previous reply and the second prompt
    store2 = SessionStore.in_memory()
    for e in path[:user_index]:
        store2.append_entry(e)
    store2.append_label(path[1].id, "bookmark")
    store2.append_model_change("faux", "faux-2")
    for e in path[user_index:]:
        store2.append_entry(e)
    path2 = store2.branch()
    cut = find_cut_point(path2, 0, len(path2), 1002)
    assert [role(e) for e in path2[cut.first_kept_index : cut.first_kept_index + 3]] == [
        "label",
        "model_change",
        "user",
    ]
    assert not cut.is_split_turn


def test_a_split_turn_summarises_its_prefix_separately() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("earlier question"))
    store.append_message(assistant(TextContent("earlier answer")))
    tool_turns(store, [4000] * 6, prompt="the long task")
    path = store.branch()
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=2500))
    assert prep is not None and prep.is_split_turn
    assert [m.role for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert prep.turn_prefix_messages[0] == UserMessage(
        "the long task", prep.turn_prefix_messages[0].timestamp
    )
    assert prep.turn_prefix_messages[-1].role == "toolResult"
    first_kept = store.get_entry(prep.first_kept_entry_id)
    assert first_kept is not None and role(first_kept) == "assistant"
    assert prep.file_ops.read >= {f"src/f{n}.py" for n in (3, 5)}


def test_nothing_to_compact_right_after_a_compaction_or_in_a_tiny_session() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("hi"))
    store.append_message(assistant(TextContent("hello")))
    assert prepare_compaction(store.branch(), CompactionSettings(keep_recent_tokens=1000)) is None
    tool_turns(store, [4000] * 4)
    prep = prepare_compaction(store.branch(), CompactionSettings(keep_recent_tokens=1000))
    assert prep is not None
    store.append_compaction("summary", prep.first_kept_entry_id, prep.tokens_before)
    assert prepare_compaction(store.branch(), CompactionSettings(keep_recent_tokens=1000)) is None


def test_a_second_compaction_resummarises_from_the_previous_kept_boundary_with_the_previous_summary() -> None:
    store = SessionStore.in_memory()
    tool_turns(store, [4000] * 4, prompt="first task")
    settings_ = CompactionSettings(keep_recent_tokens=1500)
    prep1 = prepare_compaction(store.branch(), settings_)
    assert prep1 is not None
    store.append_compaction(
        "SUMMARY ONE",
        prep1.first_kept_entry_id,
        prep1.tokens_before,
        {"readFiles": ["old/read.py"], "modifiedFiles": ["old/changed.py"]},
    )
    tool_turns(store, [4000] * 4, prompt="second task", tool="edit")
    prep2 = prepare_compaction(store.branch(), settings_)
    assert prep2 is not None
    assert prep2.previous_summary == "SUMMARY ONE"
    assert prep2.summarized_entry_ids[0] == prep1.first_kept_entry_id
    assert "old/read.py" in prep2.file_ops.read and "old/changed.py" in prep2.file_ops.edited
    assert any(p.startswith("src/") for p in prep2.file_ops.edited)
    prompt = summary_prompt(prep2.messages_to_summarize, prep2.previous_summary, None)
    assert "<previous-summary>\nSUMMARY ONE\n</previous-summary>" in prompt
    assert "incorporate into the existing summary" in prompt


# --------------------------------------------------------------------------------------------------
# Views (what the model sees)


def test_with_a_view_hidden_entries_are_not_summarised_and_substitutes_are() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("plan the work"))
    secret = store.append_message(assistant(TextContent("a wrong idea: SECRET")))
    call = ToolCall("c1", "read", {"path": "big.txt"})
    store.append_message(assistant(call))
    result_id = store.append_message(ToolResultMessage("c1", "read", [TextContent("BLOAT " * 2000)]))
    store.append_message(UserMessage("next step " + "z" * 4000))
    store.append_message(assistant(TextContent("w" * 4000)))
    path = store.branch()
    view: dict[str, list[object]] = {}
    for e in path:
        if not isinstance(e, MessageEntry) or e.id == secret:
            continue
        m = e.message
        if e.id == result_id:
            assert isinstance(m, ToolResultMessage)
            m = replace(m, content=[TextContent("shrunk: a big text file")])
        view[e.id] = [m]
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=1500), view)  # type: ignore[arg-type]
    assert prep is not None
    text = serialize_conversation(prep.messages_to_summarize)  # type: ignore[arg-type]
    assert "SECRET" not in text and "BLOAT" not in text
    assert "[Tool result]: shrunk: a big text file" in text
    assert secret in prep.summarized_entry_ids  # the entry is compacted away, just not written back


# --------------------------------------------------------------------------------------------------
# Serialisation


def test_the_conversation_is_serialised_with_labels_and_long_tool_results_are_cut() -> None:
    messages = [
        UserMessage("Fix main.py"),
        assistant(
            ThinkingContent("look first"),
            TextContent("Reading."),
            ToolCall("1", "read", {"path": "m.py", "limit": 5}),
        ),
        ToolResultMessage("1", "read", [TextContent("a" * 2500)]),
    ]
    text = serialize_conversation(messages)  # type: ignore[arg-type]
    assert text.split("\n\n")[:4] == [
        "[User]: Fix main.py",
        "[Assistant thinking]: look first",
        "[Assistant]: Reading.",
        '[Assistant tool calls]: read(path="m.py", limit=5)',
    ]
    assert text.endswith("a" * 2000 + "\n\n[... 500 more characters truncated]")


# --------------------------------------------------------------------------------------------------
# Branch summaries


def test_a_branch_summary_collects_the_abandoned_entries_back_to_the_common_ancestor() -> None:
    store = SessionStore.in_memory()
    store.append_message(UserMessage("root question"))
    fork = store.append_message(assistant(TextContent("answer")))
    store.append_message(UserMessage("path A"))
    call = ToolCall("c", "write", {"path": "a.py", "content": "x"})
    store.append_message(assistant(call))
    store.append_message(ToolResultMessage("c", "write", [TextContent("ok")]))
    old_leaf = store.append_message(assistant(TextContent("A done")))
    store.move_leaf(fork)
    target = store.append_message(UserMessage("path B"))
    collected = collect_entries_for_branch_summary(store, old_leaf, target)
    assert collected.common_ancestor_id == fork
    assert [role(e) for e in collected.entries] == ["user", "assistant", "toolResult", "assistant"]
    prep = prepare_branch_entries(collected.entries)
    assert [m.role for m in prep.messages] == ["user", "assistant", "assistant"]  # results left out
    assert prep.file_ops.written == {"a.py"}
    budget = prepare_branch_entries(collected.entries, token_budget=3)
    assert [m.role for m in budget.messages] == ["assistant"]  # newest first within the budget
