"""The compaction engine in a live session, with scripted faux models (no network)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    replace,
    text_of,
)
from caddie.ai.providers.faux import PacedStep, faux_tool_call
from caddie.extensions.api import (
    CompactionSpec,
    ContextEvent,
    ContextResult,
    EntryVisibility,
    EntryVisibilityEvent,
    ExtensionAPI,
    SessionBeforeCompactEvent,
    SessionBeforeCompactResult,
    SessionCompactEvent,
    SessionTreeEvent,
)
from caddie.runtime.auto_compaction import OVERFLOW_RECOVERY_FAILED, CompactionError
from caddie.runtime.session_events import CompactionEndEvent, CompactionStartEvent
from caddie.session.compaction import CompactionPreparation, CompactionResult
from caddie.session.entries import BranchSummaryEntry, CompactionEntry, MessageEntry
from caddie.session.store import SessionStore
from tests.compaction.harness import inline_extension, make_harness, reply, request_text

OVERFLOW = "prompt is too long: 213462 tokens > 200000 maximum"


def compactions(store: SessionStore) -> list[CompactionEntry]:
    return [e for e in store.entries() if isinstance(e, CompactionEntry)]


def message_entry_id(store: SessionStore, predicate: Any) -> str:
    return next(e.id for e in store.entries() if isinstance(e, MessageEntry) and predicate(e.message))


# --------------------------------------------------------------------------------------------------
# Triggering


async def test_a_run_that_ends_past_the_threshold_is_compacted_with_pis_fields(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    h = await make_harness(tmp_path, window=10_000, reserve=2_000, keep=120)
    h.script(
        reply([faux_tool_call("read", {"path": "notes.txt"})], tokens=900),
        reply("first answer " + "a" * 400, tokens=1_000),
        reply("second answer " + "b" * 400, tokens=8_500),  # past 10,000 - 2,000
    )
    h.summaries("## Goal\nRead the notes.\n\n## Next Steps\n1. Continue")
    await h.prompt("task one")
    assert compactions(h.session.store) == []
    await h.prompt("task two " + "t" * 200)

    [entry] = compactions(h.session.store)
    kept = h.session.store.get_entry(entry.first_kept_entry_id)
    assert isinstance(kept, MessageEntry) and isinstance(kept.message, UserMessage)
    assert text_of(kept.message.content).startswith("task two")
    assert entry.summary.startswith("## Goal\nRead the notes.")
    assert entry.summary.endswith("<read-files>\nnotes.txt\n</read-files>")
    assert entry.details == {"readFiles": ["notes.txt"], "modifiedFiles": []}
    assert entry.tokens_before >= 8_500 and entry.from_hook is False
    # the summariser got Pi's structured prompt over the serialised history
    prompt = h.summary_prompt()
    assert "[User]: task one" in prompt and '[Assistant tool calls]: read(path="notes.txt")' in prompt
    for section in ("## Goal", "## Constraints & Preferences", "## Progress", "## Key Decisions"):
        assert section in prompt
    assert "## Next Steps" in prompt and "## Critical Context" in prompt
    assert "task two" not in prompt
    # the transcript was rebuilt from the file: summary first, then the kept turn
    messages = h.session.core.agent.state.messages
    assert isinstance(messages[0], CompactionSummaryMessage) and messages[0].summary == entry.summary
    assert [m.role for m in messages[1:]] == ["user", "assistant"]
    start, end = h.compaction_events()
    assert isinstance(start, CompactionStartEvent) and start.reason == "threshold"
    assert isinstance(end, CompactionEndEvent) and end.error_message is None and not end.aborted
    assert isinstance(end.result, CompactionResult) and end.result.first_kept_entry_id == kept.id


async def test_compaction_runs_between_turns_and_the_run_continues_from_the_summary(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"{name} " * 800)
    h = await make_harness(tmp_path, window=10_000, reserve=2_000, keep=1_500)
    h.script(
        reply([faux_tool_call("read", {"path": "a.txt"})], tokens=2_000),
        reply([faux_tool_call("read", {"path": "b.txt"})], tokens=8_200),  # crosses the line mid-run
        reply("all done", tokens=3_000),
    )
    h.summaries("## Goal\nPrefix of the long turn")
    await h.prompt("read both files")

    [entry] = compactions(h.session.store)
    assert len(h.turn_requests) == 3
    third = h.turn_requests[2].messages
    assert text_of(third[0].content).startswith("The conversation history before this point was compacted")
    assert "a.txt a.txt" not in request_text(h.turn_requests[2])  # the first result is summarised away
    assert [m.role for m in third[1:]] == ["assistant", "toolResult"]  # the kept call and its result
    last = h.session.core.agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text() == "all done"
    # the cut split the turn: the prefix went to the turn-prefix prompt, history was empty
    assert entry.summary.startswith("No prior history.\n\n---\n\n**Turn Context (split turn):**\n\n")
    assert "This is the PREFIX of a turn that was too large to keep" in h.summary_prompt()
    kept = h.session.store.get_entry(entry.first_kept_entry_id)
    assert isinstance(kept, MessageEntry) and isinstance(kept.message, AssistantMessage)
    assert kept.message.tool_calls()[0].arguments == {"path": "b.txt"}


# --------------------------------------------------------------------------------------------------
# Overflow


async def test_a_context_overflow_error_compacts_and_retries_once(tmp_path: Path) -> None:
    h = await make_harness(tmp_path, keep=50)
    h.script(
        reply("early answer " + "e" * 400, tokens=1_000),
        reply(stop_reason="error", error_message=OVERFLOW),
        reply("recovered"),
    )
    h.summaries("## Goal\nEarlier work")
    await h.prompt("early question")
    await h.prompt("big question")

    assert len(compactions(h.session.store)) == 1
    assert len(h.turn_requests) == 3
    retry = h.turn_requests[2]
    assert isinstance(retry.messages[0], UserMessage)
    assert "Earlier work" in text_of(retry.messages[0].content)
    assert text_of(retry.messages[-1].content) == "big question"  # the failed reply is not resent
    last = h.session.core.agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text() == "recovered"
    [end] = h.ends()
    assert end.reason == "overflow" and end.will_retry and end.error_message is None
    # the failed reply stays in the file
    assert any(
        isinstance(e, MessageEntry)
        and isinstance(e.message, AssistantMessage)
        and e.message.error_message == OVERFLOW
        for e in h.session.store.entries()
    )


async def test_a_second_overflow_after_the_retry_ends_with_a_clear_error(tmp_path: Path) -> None:
    h = await make_harness(tmp_path, keep=50)
    h.script(
        reply("early answer " + "e" * 400, tokens=1_000),
        reply(stop_reason="error", error_message=OVERFLOW),
        reply(stop_reason="error", error_message=OVERFLOW),
        reply("never sent"),
    )
    h.summaries("## Goal\nEarlier work", "## Goal\nnever asked")
    await h.prompt("early question")
    await h.prompt("big question")

    assert len(h.turn_requests) == 3
    assert len(compactions(h.session.store)) == 1
    assert h.summarizer.pending_count == 1
    assert h.ends()[-1].error_message == OVERFLOW_RECOVERY_FAILED
    assert h.ends()[-1].reason == "overflow" and not h.ends()[-1].will_retry

    # a new user message arms the recovery again
    h.turns.set_responses([reply(stop_reason="error", error_message=OVERFLOW), reply("fine now")])
    h.summarizer.set_responses([])
    h.summaries("## Goal\nSecond recovery")
    failures = len(h.ends())
    await h.prompt("another question " + "q" * 400)
    last = h.session.core.agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text() == "fine now"
    assert all(e.error_message is None for e in h.ends()[failures:])
    assert len(compactions(h.session.store)) == 2
    assert "Second recovery" in compactions(h.session.store)[-1].summary


# --------------------------------------------------------------------------------------------------
# Manual compaction and extensions


async def test_manual_compaction_aborts_the_running_turn_and_uses_the_instructions(tmp_path: Path) -> None:
    h = await make_harness(tmp_path, keep=100)
    h.script(reply("first " + "f" * 400), PacedStep(reply("slow " * 400), delay_ms=5))
    h.summaries("## Goal\nManual")
    await h.prompt("first question")
    running = asyncio.create_task(h.session.prompt("second question " + "s" * 400, source="print"))
    while not h.session.core.agent.state.is_streaming or h.session.core.agent.state.streaming_message is None:
        await asyncio.sleep(0.005)

    done = await h.engine.compact("Focus on the database schema")
    entry = done.entry if done is not None else None
    await running

    assert isinstance(entry, CompactionEntry) and entry.summary.startswith("## Goal\nManual")
    assert h.summary_prompt().endswith("Additional focus: Focus on the database schema")
    aborted = [
        e.message
        for e in h.session.store.entries()
        if isinstance(e, MessageEntry)
        and isinstance(e.message, AssistantMessage)
        and e.message.stop_reason == "aborted"
    ]
    assert len(aborted) == 1
    assert [type(e).__name__ for e in h.compaction_events()] == ["CompactionStartEvent", "CompactionEndEvent"]


async def test_manual_compaction_of_a_tiny_session_says_there_is_nothing_to_compact(tmp_path: Path) -> None:
    h = await make_harness(tmp_path, keep=20_000)
    h.script(reply("hi"))
    await h.prompt("hello")
    with pytest.raises(CompactionError, match="Nothing to compact"):
        await h.engine.compact(None)
    assert (h.ends()[-1].error_message or "").startswith("Compaction failed")


async def test_an_extension_can_cancel_or_replace_a_compaction_and_observes_it(tmp_path: Path) -> None:
    seen: list[SessionCompactEvent] = []
    preparations: list[CompactionPreparation] = []
    mode = {"cancel": True}

    def register(api: ExtensionAPI) -> None:
        def before(event: SessionBeforeCompactEvent, ctx: Any) -> SessionBeforeCompactResult:
            preparations.append(event.preparation)
            if mode["cancel"]:
                return SessionBeforeCompactResult(cancel=True)
            prep = event.preparation
            return SessionBeforeCompactResult(
                compaction=CompactionSpec("EXTENSION SUMMARY", prep.first_kept_entry_id, 42, {"mine": True})
            )

        api.on("session_before_compact", before)
        api.on("session_compact", lambda event, ctx: seen.append(event))

    h = await make_harness(tmp_path, keep=50, extensions=[inline_extension(register)])
    h.script(reply("one " + "o" * 400), reply("two " + "t" * 400))
    await h.prompt("first")
    await h.prompt("second")

    assert await h.engine.compact("why not") is None
    assert compactions(h.session.store) == [] and seen == []
    assert h.ends()[-1].aborted
    assert preparations[0].messages_to_summarize[0].role == "user"

    mode["cancel"] = False
    done = await h.engine.compact(None)
    entry = done.entry if done is not None else None
    assert entry is not None and entry.summary == "EXTENSION SUMMARY" and entry.from_hook is True
    assert entry.tokens_before == 42 and entry.details == {"mine": True}
    assert h.summary_requests == []  # the model was never asked
    assert len(seen) == 1 and seen[0].from_extension and seen[0].compaction_entry.id == entry.id
    assert seen[0].reason == "manual" and not seen[0].will_retry


# --------------------------------------------------------------------------------------------------
# No resurrection (mulligan's E7 leak)


def _hidden_or_shrunk(m: AgentMessage) -> AgentMessage | None:
    """The hider's one rule: None drops the message; otherwise what the model is sent."""
    if isinstance(m, AssistantMessage) and "SECRET-HIDDEN" in m.text():
        return None
    if isinstance(m, ToolResultMessage) and "SECRET-BLOAT" in text_of(m.content):
        return replace(m, content=[TextContent("<context-shrunk>\nconfig file, 3 keys\n</context-shrunk>")])
    return m


def hider(api: ExtensionAPI) -> None:
    """Hides like mulligan: drops one message and replaces a tool result's content — in its ``context``
    handler, and says so when asked (``entry_visibility``), from the same rule."""

    def on_context(event: ContextEvent, ctx: Any) -> ContextResult:
        return ContextResult([s for m in event.messages if (s := _hidden_or_shrunk(m)) is not None])

    def on_visibility(event: EntryVisibilityEvent, ctx: Any) -> None:
        for m, entry_id in zip(event.messages, event.entry_ids, strict=True):
            sent = _hidden_or_shrunk(m)
            if sent is None:
                event.mark(entry_id, EntryVisibility("hidden", "hidden by the test hider"))
            elif sent is not m:
                event.mark(entry_id, EntryVisibility("replaced", "shrunk by the test hider", sent))

    api.on("context", on_context)
    api.on("entry_visibility", on_visibility)


@pytest.mark.parametrize("with_hider", [True, False])
async def test_the_summariser_sees_the_context_as_the_model_sees_it(tmp_path: Path, with_hider: bool) -> None:
    (tmp_path / "config.ini").write_text("SECRET-BLOAT\n" * 50)
    extensions = [inline_extension(hider)] if with_hider else []
    h = await make_harness(tmp_path, keep=150, extensions=extensions)
    h.script(
        reply("A wrong idea: SECRET-HIDDEN. " + "w" * 200),
        reply([faux_tool_call("read", {"path": "config.ini"})]),
        reply("read it " + "r" * 400),
        reply("final " + "f" * 400, tokens=9_000),
    )
    h.summaries("## Goal\nsummary")
    await h.prompt("first")
    await h.prompt("second")
    await h.prompt("third " + "3" * 400)

    assert len(compactions(h.session.store)) == 1
    prompt = h.summary_prompt()
    assert "[User]: first" in prompt and "[User]: second" in prompt
    if with_hider:
        assert "SECRET-HIDDEN" not in prompt and "SECRET-BLOAT" not in prompt
        assert "config file, 3 keys" in prompt
        # what the model saw in the last request is what the summariser saw
        assert "SECRET" not in request_text(h.turn_requests[-1])
    else:
        assert "SECRET-HIDDEN" in prompt and "SECRET-BLOAT" in prompt
    # the transcript and the file keep their own timestamps
    assert all(m.timestamp > 0 for m in h.session.core.agent.state.messages)
    assert all(e.message.timestamp > 0 for e in h.session.store.entries() if isinstance(e, MessageEntry))


# --------------------------------------------------------------------------------------------------
# Twice, then reloaded


async def test_a_session_compacted_twice_reloads_to_the_same_context(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('a')\n")
    sessions = tmp_path / "sessions"
    h = await make_harness(tmp_path, keep=150, session_dir=sessions)
    h.script(
        reply([faux_tool_call("read", {"path": "a.py"})]),
        reply("read a " + "a" * 400),
        reply("second " + "s" * 400, tokens=9_000),
        reply([faux_tool_call("edit", {"path": "a.py", "edits": [{"oldText": "'a'", "newText": "'b'"}]})]),
        reply("edited " + "e" * 400),
        reply("fourth " + "4" * 400, tokens=9_000),
    )
    h.summaries("## Goal\nFIRST SUMMARY", "## Goal\nSECOND SUMMARY")
    await h.prompt("look at a.py")
    await h.prompt("second prompt " + "p" * 200)
    await h.prompt("change a.py")
    await h.prompt("fourth prompt " + "p" * 200)

    first, second = compactions(h.session.store)
    assert "<previous-summary>\n" + first.summary + "\n</previous-summary>" in h.summary_prompt(1)
    assert second.details == {"readFiles": [], "modifiedFiles": ["a.py"]}
    assert first.details == {"readFiles": ["a.py"], "modifiedFiles": []}
    assert second.summary.startswith("## Goal\nSECOND SUMMARY")

    path = h.session.store.path
    assert path is not None
    reopened = SessionStore.open(path)
    before = [m.role for m in h.session.core.agent.state.messages]
    after = reopened.build_context().messages
    assert [m.role for m in after] == before
    assert isinstance(after[0], CompactionSummaryMessage) and after[0].summary == second.summary
    assert "FIRST SUMMARY" not in "".join(text_of(getattr(m, "content", "")) for m in after[1:])

    # a new session on that file resumes from the second compaction without compacting again
    h2 = await make_harness(tmp_path, keep=150, session_file=path)
    assert [m.role for m in h2.session.core.agent.state.messages] == before
    h2.script(reply("resumed"))
    await h2.prompt("go on")
    assert len(compactions(h2.session.store)) == 2
    assert text_of(h2.turn_requests[0].messages[0].content).count("SECOND SUMMARY") == 1


# --------------------------------------------------------------------------------------------------
# Branch summaries


async def test_leaving_a_branch_attaches_a_summary_where_the_navigation_lands(tmp_path: Path) -> None:
    trees: list[SessionTreeEvent] = []
    ext = inline_extension(lambda api: api.on("session_tree", lambda e, ctx: trees.append(e)))
    h = await make_harness(tmp_path, keep=20_000, extensions=[ext])
    h.script(
        reply("alpha answer"),
        reply([faux_tool_call("write", {"path": "x.py", "content": "1"})]),
        reply("beta done"),
    )
    h.summaries("## Goal\nTried beta")
    await h.prompt("alpha")
    await h.prompt("beta")
    store = h.session.store
    old_leaf = store.leaf_id
    beta = message_entry_id(store, lambda m: isinstance(m, UserMessage) and text_of(m.content) == "beta")
    alpha_answer = message_entry_id(
        store, lambda m: isinstance(m, AssistantMessage) and m.text() == "alpha answer"
    )

    assert await h.session.navigate_tree(beta, summarize=True)

    leaf = store.leaf_entry()
    assert isinstance(leaf, BranchSummaryEntry)
    assert leaf.parent_id == alpha_answer and leaf.from_id == old_leaf
    assert leaf.summary.startswith("The user explored a different conversation branch before returning here.")
    assert "## Goal\nTried beta" in leaf.summary and leaf.summary.endswith(
        "<modified-files>\nx.py\n</modified-files>"
    )
    assert leaf.details == {"readFiles": [], "modifiedFiles": ["x.py"]}
    prompt = h.summary_prompt()
    assert "Create a structured summary of this conversation branch" in prompt
    assert 'write(path="x.py", content="1")' in prompt and "[Assistant]: beta done" in prompt
    assert "[User]" not in prompt  # the target prompt itself goes back to the editor, it is not left behind
    assert [m.role for m in h.session.core.agent.state.messages] == ["user", "assistant", "branchSummary"]
    assert trees[-1].summary_entry is not None and trees[-1].summary_entry.id == leaf.id

    h.script(reply("gamma answer"))
    await h.prompt("gamma")
    sent = h.turn_requests[-1].messages
    assert "Tried beta" in text_of(sent[2].content)
    assert isinstance(h.session.core.agent.state.messages[2], BranchSummaryMessage)


async def test_navigating_without_a_summary_leaves_no_summary(tmp_path: Path) -> None:
    h = await make_harness(tmp_path)
    h.script(reply("alpha answer"), reply("beta answer"))
    await h.prompt("alpha")
    await h.prompt("beta")
    beta = message_entry_id(
        h.session.store, lambda m: isinstance(m, UserMessage) and text_of(m.content) == "beta"
    )
    await h.session.navigate_tree(beta)
    assert not any(isinstance(e, BranchSummaryEntry) for e in h.session.store.entries())
    assert h.summary_requests == []


async def test_nothing_mulligan_hid_or_shrank_reaches_the_summary(tmp_path: Path) -> None:
    (tmp_path / "wrong.txt").write_text("WRONG-PATH-CONTENT\n" * 40)
    (tmp_path / "config.ini").write_text("SECRET-BLOAT\n" * 40)
    h = await make_harness(tmp_path, keep=150, bundled=True)
    note = {
        "what_happened": "Read the wrong file.",
        "true_current_state": "Nothing changed yet.",
        "next": "Read config.ini.",
    }
    h.script(
        reply([faux_tool_call("read", {"path": "wrong.txt"})]),
        reply([faux_tool_call("mulligan_rewind", {"granularity": "last_tool_call_group", "note": note})]),
        reply([faux_tool_call("read", {"path": "config.ini"}, id="call_cfg")]),
        reply(
            [
                faux_tool_call(
                    "mulligan_shrink",
                    {
                        "target": {"by_tool_call_id": "call_cfg"},
                        "replacement": "config.ini: three keys, all fine",
                    },
                )
            ]
        ),
        reply("done " + "d" * 400),
        reply("final " + "f" * 400, tokens=9_000),
    )
    h.summaries("## Goal\nsummary")
    await h.prompt("fix the config")
    # mulligan is at work: the last request no longer carries what it hid or shrank
    assert "WRONG-PATH-CONTENT" not in request_text(h.turn_requests[-1])
    assert "SECRET-BLOAT" not in request_text(h.turn_requests[-1])
    await h.prompt("and now? " + "n" * 400)

    assert len(compactions(h.session.store)) == 1
    prompt = h.summary_prompt()
    assert "WRONG-PATH-CONTENT" not in prompt and "SECRET-BLOAT" not in prompt
    assert "config.ini: three keys, all fine" in prompt
    assert "Read the wrong file." in prompt  # the note mulligan left is part of what the model saw
