"""AgentSession behaviour: retries, queues, persistence, model and tree operations."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from caddie.ai.messages import AssistantMessage, UserMessage
from caddie.ai.providers.faux import PacedStep, faux_message, faux_model, faux_text
from caddie.errors import UsageError
from caddie.runtime.session_events import AutoRetryEndEvent, AutoRetryStartEvent, QueueUpdateEvent
from caddie.session.entries import MessageEntry, ModelChangeEntry
from caddie.session.store import SessionStore
from tests.runtime.harness import start_session

FAST_RETRY = {"retry": {"baseDelayMs": 5, "maxRetries": 2}}


async def test_a_retryable_error_is_retried_with_backoff_and_hidden_from_the_model(tmp_path: Path) -> None:
    run = await start_session(tmp_path, settings=FAST_RETRY, session="new")
    run.faux.set_responses(
        [
            faux_message("", error_message="429 rate limited", error_status=429, retry_after_ms=30),
            faux_message("done"),
        ]
    )
    await run.session.prompt("hello")
    starts = [e for e in run.events if isinstance(e, AutoRetryStartEvent)]
    ends = [e for e in run.events if isinstance(e, AutoRetryEndEvent)]
    assert [(s.attempt, s.max_attempts, s.delay_ms) for s in starts] == [(1, 2, 30)]  # Retry-After wins
    assert [(e.success, e.attempt) for e in ends] == [(True, 1)]
    assert [m.role for m in run.session.messages] == ["user", "assistant"]
    assert run.faux.requests[1].messages == run.faux.requests[0].messages  # the failed reply was not resent
    stored = [e.message for e in run.session.store.entries() if isinstance(e, MessageEntry)]
    assert [getattr(m, "stop_reason", None) for m in stored] == [None, "error", "stop"]  # but it is on disk


async def test_retries_stop_at_the_limit_with_the_last_error(tmp_path: Path) -> None:
    run = await start_session(tmp_path, settings=FAST_RETRY)
    run.faux.set_responses([faux_message("", error_message="503 overloaded", error_status=503)] * 3)
    await run.session.prompt("hello")
    assert [e.attempt for e in run.events if isinstance(e, AutoRetryStartEvent)] == [1, 2]
    end = [e for e in run.events if isinstance(e, AutoRetryEndEvent)][-1]
    assert not end.success and end.final_error == "503 overloaded"
    assert run.faux.call_count == 3


async def test_a_permanent_error_is_not_retried(tmp_path: Path) -> None:
    run = await start_session(tmp_path, settings=FAST_RETRY)
    run.faux.set_responses([faux_message("", error_message="401 invalid api key", error_status=401)])
    await run.session.prompt("hello")
    assert run.faux.call_count == 1
    assert not any(isinstance(e, AutoRetryStartEvent) for e in run.events)


async def test_abort_cancels_a_pending_retry(tmp_path: Path) -> None:
    run = await start_session(tmp_path, settings={"retry": {"baseDelayMs": 60_000}})
    run.faux.set_responses(
        [faux_message("", error_message="529 overloaded", error_status=529), faux_message("x")]
    )
    task = asyncio.ensure_future(run.session.prompt("hello"))
    while not any(isinstance(e, AutoRetryStartEvent) for e in run.events):
        await asyncio.sleep(0.01)
    run.session.abort()
    await asyncio.wait_for(task, 2)
    assert run.faux.call_count == 1
    assert not run.session.is_streaming


async def test_messages_typed_while_busy_need_a_delivery_mode_and_are_shown_as_pending(
    tmp_path: Path,
) -> None:
    run = await start_session(tmp_path)
    run.faux.set_responses(
        [PacedStep(faux_message("a slow answer " * 10), delay_ms=10), faux_message("steered")]
    )
    task = asyncio.ensure_future(run.session.prompt("first"))
    while not run.session.is_streaming:
        await asyncio.sleep(0.005)
    with pytest.raises(UsageError, match="steer or a follow-up"):
        await run.session.prompt("second")
    await run.session.prompt("second", streaming_behavior="steer")
    assert run.session.state().pending_message_count == 1
    assert run.session.extensions.context().has_pending_messages()
    await task
    assert [m.role for m in run.session.messages] == ["user", "assistant", "user", "assistant"]
    updates = [e for e in run.events if isinstance(e, QueueUpdateEvent)]
    assert updates[0].steering == ["second"] and updates[-1].steering == []
    assert run.session.state().pending_message_count == 0


async def test_escape_restores_queued_text(tmp_path: Path) -> None:
    run = await start_session(tmp_path)
    run.session.steer("one")
    run.session.follow_up("two")
    assert run.session.clear_queues() == (["one"], ["two"])
    assert not run.session.core.agent.has_queued_messages()


async def test_context_usage_follows_reported_usage_then_estimates(tmp_path: Path) -> None:
    run = await start_session(tmp_path)
    usage = run.session.context_usage()
    assert usage is not None and usage.tokens == 0 and usage.context_window == 128_000
    run.faux.set_responses([faux_message("x" * 400)])
    await run.session.prompt("hello")
    last = run.session.messages[-1]
    assert isinstance(last, AssistantMessage)
    usage = run.session.context_usage()
    assert usage is not None and usage.tokens == last.usage.total_tokens
    assert usage.percent == pytest.approx(usage.tokens / 128_000 * 100)


async def test_set_model_records_a_model_change(tmp_path: Path) -> None:
    run = await start_session(tmp_path)
    await run.session.set_model(faux_model("other", reasoning=False))
    entry = run.session.store.entries()[-1]
    assert isinstance(entry, ModelChangeEntry) and entry.model_id == "other"
    assert run.session.thinking_level == "off"  # clamped: the new model does not reason


async def test_navigating_to_a_user_message_puts_its_text_back_in_the_editor(tmp_path: Path) -> None:
    run = await start_session(tmp_path)
    run.faux.set_responses([faux_message("a1"), faux_message("a2")])
    await run.session.prompt("first question")
    await run.session.prompt("second question")
    second = [
        e
        for e in run.session.store.entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
    ][1]
    await run.session.navigate_tree(second.id)
    assert run.ui.editor_text == "second question"
    assert [m.role for m in run.session.messages] == ["user", "assistant"]
    run.faux.set_responses([faux_message("other branch")])
    await run.session.prompt("another second question")
    first_answer = next(
        e
        for e in run.session.store.entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    )
    assert len(run.session.store.children(first_answer.id)) == 2  # the tree now forks after the first answer


async def test_new_session_and_fork_switch_files(tmp_path: Path) -> None:
    run = await start_session(tmp_path, session="new")
    run.faux.set_responses([faux_message("answer"), faux_message("answer 2")])
    await run.session.prompt("question")
    first_file = run.session.store.session_file
    user_entry = next(
        e for e in run.session.store.entries() if isinstance(e, MessageEntry) and e.message.role == "user"
    )
    await run.session.fork(user_entry.id)
    assert run.session.store.session_file != first_file
    assert run.session.store.header.parent_session == first_file
    assert run.session.messages == []  # forked before the user message
    run.session.steer("left over")  # queued in the old session: must not leak into the new one
    await run.session.new_session()
    assert run.session.messages == [] and run.session.state().pending_message_count == 0
    assert [e.type for e in run.session.store.entries()] == [
        "model_change",
        "thinking_level_change",
    ]  # the new session records its model and thinking level (as Pi)
    assert first_file is not None and SessionStore.open(first_file).session_id != run.session.store.session_id


async def test_a_resumed_session_restores_transcript_model_and_thinking(tmp_path: Path) -> None:
    run = await start_session(tmp_path, session="new")
    run.session.set_thinking_level("high")
    run.faux.set_responses([faux_message([faux_text("remembered")])])
    await run.session.prompt("remember this")
    path = run.session.store.session_file
    assert path is not None
    again = await start_session(tmp_path, session="file", session_file=path)
    assert [m.role for m in again.session.messages] == ["user", "assistant"]
    assert again.session.store.build_context().thinking_level == "high"
