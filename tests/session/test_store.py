"""The session store: Pi's JSONL v3 format, the tree, durability and crash safety."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caddie.ai.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_to_json,
    replace,
)
from caddie.session.entries import CompactionEntry, CustomEntry, LabelEntry, MessageEntry, entry_to_json
from caddie.session.store import (
    SessionFileError,
    SessionStore,
    default_session_dir,
    encode_cwd,
    latest_session_file,
    list_sessions,
)

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pi-sessions"


def assistant(text: str = "ok", *calls: ToolCall) -> AssistantMessage:
    blocks: list[TextContent | ThinkingContent | ToolCall] = [TextContent(text), *calls]
    return AssistantMessage(
        blocks,
        "openai-completions",
        "openai",
        "gpt-4.1",
        Usage(10, 5, 0, 0, 15),
        "toolUse" if calls else "stop",
    )


def full_session(tmp_path: Path) -> SessionStore:
    """A session using every entry type, written to ``tmp_path``."""
    store = SessionStore.create("/work/proj", tmp_path)
    store.append_model_change("openai", "gpt-4.1")
    store.append_thinking_level_change("high")
    first = store.append_message(UserMessage("hello", 1))
    store.append_message(
        AssistantMessage(
            [ThinkingContent("hmm", "sig"), TextContent("reading"), ToolCall("c1", "read", {"path": "a.py"})],
            "anthropic-messages",
            "anthropic",
            "claude",
            Usage(100, 20, 5, 7, 132),
            "toolUse",
            2,
        )
    )
    store.append_message(
        ToolResultMessage("c1", "read", [TextContent("x = 1")], False, {"lines": 1}, None, None, 3)
    )
    store.append_custom("ext:state", {"n": 1})
    store.append_custom_message(
        "ext:note", [TextContent("note"), ImageContent("aGk=", "image/png")], False, {"k": 2}
    )
    store.append_label(first, "start")
    store.append_session_info("demo\nname")
    store.append_message(BashExecutionMessage("ls", "a.py", 0, timestamp=4))
    store.append_compaction("summary", first, 999, {"readFiles": ["a.py"], "modifiedFiles": []})
    store.branch_with_summary(first, "left a branch", {"readFiles": [], "modifiedFiles": []})
    store.append_message(assistant("after"))
    return store


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- Pi → caddie ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["linear", "branched"])
def test_pi_written_session_opens_with_the_context_pi_builds(name: str) -> None:
    expected = json.loads((FIXTURES / f"{name}.pi-context.json").read_text())
    store = SessionStore.open(FIXTURES / f"{name}.jsonl")
    ctx = store.build_context()

    assert store.session_id == expected["sessionId"]
    assert store.leaf_id == expected["leafId"]
    assert len(store) == expected["entryCount"]
    assert [e.id for e in store.branch()] == expected["branch"]
    assert [e.id for e in store.context_entries()] == expected["contextEntries"]
    assert {e.id: store.get_label(e.id) for e in store.entries() if store.get_label(e.id)} == expected[
        "labels"
    ]
    assert store.session_name() == expected["name"]
    assert ctx.thinking_level == expected["thinkingLevel"]
    assert ctx.model == (expected["model"]["provider"], expected["model"]["modelId"])
    assert [message_to_json(m) for m in ctx.messages] == expected["messages"]
    assert store.warnings == []


def test_pi_fixture_lines_reencode_to_the_same_json() -> None:
    path = FIXTURES / "branched.jsonl"
    store = SessionStore.open(path)
    assert [entry_to_json(e) for e in store.entries()] == lines(path)[1:]


# -- caddie → caddie --------------------------------------------------------------------------------


def test_written_session_reads_back_identically(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    reopened = SessionStore.open(store.path)

    assert reopened.entries() == store.entries()
    assert reopened.header == store.header
    assert reopened.leaf_id == store.leaf_id
    assert reopened.labels() == store.labels()
    assert reopened.build_context() == store.build_context()
    assert [entry_to_json(e) for e in reopened.entries()] == lines(store.path)[1:]


def test_every_line_uses_pis_field_names_and_types(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    rows = lines(store.path)
    assert rows[0] == {
        "type": "session",
        "version": 3,
        "id": store.session_id,
        "timestamp": rows[0]["timestamp"],
        "cwd": "/work/proj",
    }
    kinds = [r["type"] for r in rows[1:]]
    assert set(kinds) == {
        "model_change",
        "thinking_level_change",
        "message",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "compaction",
        "branch_summary",
    }
    for row in rows[1:]:
        assert isinstance(row["id"], str) and len(row["id"]) == 8 and int(row["id"], 16) >= 0
        assert "parentId" in row and isinstance(row["timestamp"], str) and row["timestamp"].endswith("Z")
    tool_result = next(r for r in rows if r["type"] == "message" and r["message"]["role"] == "toolResult")
    assert tool_result["message"] == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x = 1"}],
        "details": {"lines": 1},
        "isError": False,
        "timestamp": 3,
    }
    info = next(r for r in rows if r["type"] == "session_info")
    assert info["name"] == "demo name"


def test_file_is_first_written_with_the_first_assistant_message(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "proj", tmp_path)
    store.append_model_change("openai", "gpt-4.1")
    store.append_message(UserMessage("hi"))
    assert store.path is not None and not store.path.exists()

    store.append_message(assistant())
    assert [r["type"] for r in lines(store.path)] == ["session", "model_change", "message", "message"]
    store.append_custom("x", {})
    assert len(lines(store.path)) == 5


def test_session_files_live_under_the_encoded_cwd(tmp_path: Path, isolated_caddie_dir: Path) -> None:
    store = SessionStore.create("/home/me/my proj")
    assert encode_cwd("/home/me/my proj") == "--home-me-my proj--"
    assert store.path is not None
    assert store.path.parent == isolated_caddie_dir / "agent" / "sessions" / "--home-me-my proj--"
    stem = store.path.name
    assert stem.endswith(f"_{store.session_id}.jsonl") and ":" not in stem


# -- the tree ---------------------------------------------------------------------------------------


def test_labels_latest_wins_and_can_be_cleared(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    target = store.append_message(UserMessage("a"))
    store.append_label(target, "one")
    store.append_label(target, "two")
    assert store.get_label(target) == "two"
    store.append_label(target, None)
    assert store.get_label(target) is None
    with pytest.raises(KeyError):
        store.append_label("nope", "x")


def test_moving_the_leaf_starts_a_new_branch_and_survives_reopen(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path)
    a = store.append_message(UserMessage("a"))
    store.append_message(assistant("b1"))
    store.move_leaf(a)
    b2 = store.append_message(assistant("b2"))
    assert [e.id for e in store.branch()] == [a, b2]
    tree = store.tree()
    assert len(tree) == 1 and [c.entry.id for c in tree[0].children][-1] == b2
    assert store.path is not None
    assert SessionStore.open(store.path).leaf_id == b2


def test_compaction_context_keeps_summary_kept_entries_and_later_ones(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    store.append_message(UserMessage("old"))
    store.append_message(assistant("old answer"))
    kept = store.append_message(UserMessage("kept"))
    store.append_message(assistant("kept answer"))
    store.append_compaction("S", kept, 500)
    store.append_message(UserMessage("new"))
    roles = [m.role for m in store.build_context().messages]
    assert roles == ["compactionSummary", "user", "assistant", "user"]


def test_custom_entries_stay_out_of_context_and_custom_messages_go_in(tmp_path: Path) -> None:
    store = SessionStore.in_memory(tmp_path)
    store.append_message(UserMessage("q"))
    store.append_custom("state", {"secret": 1})
    store.append_custom_message("note", "visible to the model", False)
    messages = store.build_context().messages
    assert [m.role for m in messages] == ["user", "custom"]
    assert isinstance(messages[1], CustomMessage) and messages[1].content == "visible to the model"


def test_fork_copies_only_the_path_with_its_labels(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path)
    a = store.append_message(UserMessage("a"))
    b = store.append_message(assistant("b"))
    store.append_label(a, "keep-me")
    store.move_leaf(a)
    store.append_message(assistant("other branch"))

    forked = store.fork(b)
    assert forked.path is not None and forked.path != store.path
    assert forked.header.parent_session == store.session_file
    kinds = [(e.type, getattr(e, "id", None)) for e in forked.entries()]
    assert [k for k, _ in kinds] == ["message", "message", "label"]
    assert forked.get_label(a) == "keep-me"
    reopened = SessionStore.open(forked.path)
    assert [m.role for m in reopened.build_context().messages] == ["user", "assistant"]


def test_sessions_are_listed_newest_first(tmp_path: Path) -> None:
    older = SessionStore.create(tmp_path)
    older.append_message(UserMessage("first prompt\n  of the old one", 1000))
    older.append_message(replace(assistant(), timestamp=2000))
    newer = SessionStore.create(tmp_path)
    newer.append_message(UserMessage("new prompt", 5000))
    newer.append_message(replace(assistant(), timestamp=6000))
    unfinished = SessionStore.create(tmp_path)  # never written: no assistant message
    unfinished.append_message(UserMessage("x"))

    rows = list_sessions(tmp_path)
    assert [r.id for r in rows] == [newer.session_id, older.session_id]
    assert rows[1].first_message == "first prompt of the old one"
    assert rows[1].message_count == 2 and rows[1].size > 0
    assert latest_session_file(tmp_path) in (newer.path, older.path)
    assert SessionStore.continue_recent(tmp_path).session_id in (newer.session_id, older.session_id)
    assert default_session_dir(tmp_path).is_dir()


def test_continue_recent_starts_fresh_when_there_is_nothing(tmp_path: Path) -> None:
    store = SessionStore.continue_recent(tmp_path / "empty-project")
    assert len(store) == 0 and store.path is not None and not store.path.exists()


# -- migration --------------------------------------------------------------------------------------


def test_version_1_and_2_files_migrate_to_version_3(tmp_path: Path) -> None:
    v1 = tmp_path / "v1.jsonl"
    v1.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
                {
                    "type": "message",
                    "timestamp": "2025-01-01T00:00:01.000Z",
                    "message": {"role": "user", "content": "a", "timestamp": 1},
                },
                {
                    "type": "message",
                    "timestamp": "2025-01-01T00:00:02.000Z",
                    "message": {
                        "role": "hookMessage",
                        "customType": "h",
                        "content": "x",
                        "display": True,
                        "timestamp": 2,
                    },
                },
                {
                    "type": "compaction",
                    "timestamp": "2025-01-01T00:00:03.000Z",
                    "summary": "s",
                    "firstKeptEntryIndex": 2,
                    "tokensBefore": 5,
                },
            ]
        )
        + "\n"
    )
    store = SessionStore.open(v1)
    entries = store.entries()
    assert store.header.version == 3
    assert entries[1].parent_id == entries[0].id and entries[0].parent_id is None
    assert isinstance(entries[1], MessageEntry) and isinstance(entries[1].message, CustomMessage)
    assert isinstance(entries[2], CompactionEntry) and entries[2].first_kept_entry_id == entries[1].id
    assert lines(v1)[0]["version"] == 3  # the file was rewritten


# -- crash safety -----------------------------------------------------------------------------------


def test_a_torn_last_line_is_skipped_at_every_byte_offset(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    data = store.path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    last_line_number = data.count(b"\n")
    all_entries = store.entries()
    probe = tmp_path / "probe.jsonl"
    for cut in range(last_start + 1, len(data)):
        probe.write_bytes(data[:cut])
        reopened = SessionStore.open(probe)
        complete = cut == len(data) - 1  # only the final newline is missing
        expected = all_entries if complete else all_entries[:-1]
        assert reopened.entries() == expected, cut
        assert bool(reopened.warnings) is not complete, cut
        if not complete:
            assert (
                "was cut off" in reopened.warnings[0] and f"line {last_line_number}" in reopened.warnings[0]
            )
        # The file was repaired: a new entry appends cleanly and everything reopens without warnings.
        reopened.append_custom("after-crash", {"cut": cut})
        again = SessionStore.open(probe)
        assert again.entries()[-1] == reopened.entries()[-1], cut
        assert again.warnings == [] or "was cut off" not in again.warnings[0]


def test_a_cut_at_a_line_boundary_loses_nothing(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    data = store.path.read_bytes()
    boundary = data.rstrip(b"\n").rfind(b"\n") + 1
    store.path.write_bytes(data[:boundary])
    reopened = SessionStore.open(store.path)
    assert reopened.entries() == store.entries()[:-1] and reopened.warnings == []


def test_a_corrupt_line_elsewhere_names_file_and_line(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    rows = store.path.read_text().splitlines()
    rows[3] = rows[3][: len(rows[3]) // 2]
    store.path.write_text("\n".join(rows) + "\n")
    with pytest.raises(SessionFileError) as err:
        SessionStore.open(store.path)
    assert str(err.value).startswith(f"{store.path}:4: not valid JSON")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (b'{"type":"message","id":"abc"}\n', "not a session file"),
        (b"hello\n", "not a session file"),
        (b'{"type":"session","id":"s","timestamp":"t","cwd":"/"}\n[1,2]\n', "line 2 is not valid"),
    ],
)
def test_files_that_are_not_sessions_give_one_clear_error(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(SessionFileError) as err:
        SessionStore.open(path)
    message = str(err.value)
    assert str(path) in message
    if problem == "line 2 is not valid":
        assert ":2:" in message
    else:
        assert problem in message


def test_an_entry_without_id_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n{"type":"custom","customType":"x"}\n'
    )
    with pytest.raises(
        SessionFileError, match=r":2: custom entry has no id|:2: entry of type 'custom' has no id"
    ):
        SessionStore.open(path)


def test_unknown_entry_types_are_kept_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    future = {"type": "future_thing", "id": "abcd1234", "parentId": None, "timestamp": "t", "payload": [1, 2]}
    path.write_text(
        json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"})
        + "\n"
        + json.dumps(future)
        + "\n"
    )
    store = SessionStore.open(path)
    assert entry_to_json(store.entries()[0]) == future
    assert store.build_context().messages == []


def test_appends_are_whole_lines(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    size = os.path.getsize(store.path)
    store.append_custom("big", {"blob": "x" * 200_000})
    data = store.path.read_bytes()
    assert data.endswith(b"\n") and data[size:].count(b"\n") == 1
    assert isinstance(SessionStore.open(store.path).entries()[-1], CustomEntry)


def test_label_entries_reference_existing_entries(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    labels = [e for e in store.entries() if isinstance(e, LabelEntry)]
    assert labels and all(store.get_entry(e.target_id) is not None for e in labels)


@given(
    st.lists(
        st.tuples(st.sampled_from(["append", "move", "summary", "reset"]), st.integers(0, 50)), max_size=60
    )
)
@settings(max_examples=60, deadline=None)
def test_the_cached_branch_always_equals_a_fresh_walk(ops: list[tuple[str, int]]) -> None:
    from caddie.session.context import branch_path

    store = SessionStore.in_memory("/tmp")
    for op, n in ops:
        ids = [e.id for e in store.entries()]
        if op == "append" or not ids:
            store.append_custom("x", n)
        elif op == "move":
            store.move_leaf(ids[n % len(ids)])
        elif op == "summary":
            store.branch_with_summary(ids[n % len(ids)], "s")
        else:
            store.move_leaf(None)
        fresh = branch_path({e.id: e for e in store.entries()}, store.leaf_id, store.entries())
        assert store.branch() == fresh
        assert store.branch() == fresh  # and again, from the cache


def test_a_failed_append_leaves_file_and_memory_in_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    store = full_session(tmp_path)
    assert store.path is not None
    before_bytes = store.path.read_bytes()
    before_entries = store.entries()
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 50:
            real_write(fd, bytes(data[:20]))  # part of the line reaches the disk, then it is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError):
        store.append_custom("big", {"blob": "x" * 500})
    monkeypatch.undo()
    assert store.path.read_bytes() == before_bytes
    assert store.entries() == before_entries
    store.append_custom("after", {"ok": True})
    reopened = SessionStore.open(store.path)
    assert reopened.entries() == store.entries() and reopened.warnings == []
