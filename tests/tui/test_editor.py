"""The editor: newlines, history, steering and follow-ups while the agent works, Esc, Ctrl+C, ! and !!."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import AssistantMessage, BashExecutionMessage, UserMessage
from caddie.ai.providers.faux import PacedStep, faux_message
from caddie.modes.interactive.conversation import BashBlock, UserBlock
from caddie.modes.interactive.editor import History
from caddie.modes.interactive.render import content_text
from tests.tui.harness import SMALL, make_app, ready, settle, submit, type_text, until, widget_text

SLOW_REPLY = PacedStep(faux_message("thinking out loud " * 60), 40)
"""About 90 chunks 40 ms apart (~3.6 s): long enough to queue messages while the agent works, even on a
busy 2-core machine."""
ABORTED_REPLY = PacedStep(faux_message("thinking out loud " * 600), 40)
"""About 900 chunks 40 ms apart (~36 s): a reply that only ends by Esc, however slow the machine is."""


def user_texts(app: object) -> list[str]:
    session = app.session  # type: ignore[attr-defined]
    return [content_text(m.content) for m in session.messages if isinstance(m, UserMessage)]


async def test_enter_sends_and_shift_enter_or_ctrl_j_insert_newlines(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("ok")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("a", "shift+enter", "b", "ctrl+j", "c")
        await pilot.press("alt+enter")  # idle: a newline too
        await pilot.press("d")
        typed = app.editor.text
        await pilot.press("enter")
        await settle(app, pilot)
        sent = user_texts(app)
        left = app.editor.text
    assert typed == "a\nb\nc\nd"
    assert sent == ["a\nb\nc\nd"]
    assert left == ""


async def test_up_and_down_walk_the_prompt_history(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("a"), faux_message("b")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("first", "second"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        await type_text(pilot, "d")
        seen = []
        for key in ("up", "up", "up", "down", "down"):
            await pilot.press(key)
            seen.append(app.editor.text)
    assert seen == ["second", "first", "first", "second", "d"]


async def test_while_working_enter_steers_and_alt_enter_follows_up_both_shown_pending(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [SLOW_REPLY, faux_message("steered"), faux_message("followed")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "start")
        await until(pilot, lambda: app.busy)
        await submit(pilot, app, "steer this")
        await submit(pilot, app, "and then this", "alt+enter")
        await until(pilot, lambda: bool(app.pending.steering and app.pending.follow_up))
        pending = widget_text(app.pending)
        working = widget_text(app.working)
        await settle(app, pilot)
        sent = user_texts(app)
        pending_after = app.pending.display
    assert "Steering: steer this" in pending and "Follow-up: and then this" in pending
    assert "esc to interrupt" in working
    assert sent == ["start", "steer this", "and then this"]
    assert not pending_after


async def test_esc_aborts_and_puts_queued_messages_back_in_the_editor(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [ABORTED_REPLY])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "start")
        await until(pilot, lambda: app.busy)
        await submit(pilot, app, "queued one")
        await until(pilot, lambda: bool(app.pending.steering))
        await pilot.press("escape")
        await settle(app, pilot)
        assert app.session is not None
        last = app.session.messages[-1]
        editor = app.editor.text
        shown = widget_text(app.conversation)
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    assert editor == "queued one"
    assert "Aborted." in shown


async def test_alt_up_takes_queued_messages_back_without_aborting(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [SLOW_REPLY])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "start")
        await until(pilot, lambda: app.busy)
        await submit(pilot, app, "later", "alt+enter")
        await until(pilot, lambda: bool(app.pending.follow_up))
        await pilot.press("alt+up")
        await pilot.pause()
        editor, still_busy = app.editor.text, app.busy
        await settle(app, pilot)
        sent = user_texts(app)
    assert editor == "later" and still_busy
    assert sent == ["start"]


async def test_ctrl_c_clears_the_editor_and_twice_quits(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("x", "y")
        await pilot.press("ctrl+c")
        await pilot.pause()
        cleared, running = app.editor.text, app.is_running
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running)
    assert cleared == "" and running
    assert app.shutdown_done and app.return_code == 0


async def test_bang_runs_a_shell_command_into_the_context(tmp_path: Path) -> None:
    app, faux = make_app(tmp_path, [faux_message("seen")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "!echo hello-shell")
        await until(pilot, lambda: bool(app.conversation.blocks_of(BashBlock)))
        block = widget_text(app.conversation.blocks_of(BashBlock)[0])
        await submit(pilot, app, "what did it say")
        await settle(app, pilot)
        assert app.session is not None
        bash = [m for m in app.session.messages if isinstance(m, BashExecutionMessage)]
        sent_to_model = str(faux.payloads[-1]["messages"])
    assert "$ echo hello-shell  exit 0" in block and "hello-shell" in block
    assert bash[0].output == "hello-shell\n" and not bash[0].exclude_from_context  # as Pi stores it
    assert "hello-shell" in sent_to_model


async def test_double_bang_runs_a_shell_command_outside_the_context(tmp_path: Path) -> None:
    app, faux = make_app(tmp_path, [faux_message("seen")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "!!echo private-output")
        await until(pilot, lambda: bool(app.conversation.blocks_of(BashBlock)))
        block = widget_text(app.conversation.blocks_of(BashBlock)[0])
        await submit(pilot, app, "hi")
        await settle(app, pilot)
        sent_to_model = str(faux.payloads[-1]["messages"])
        users = [b.text for b in app.conversation.blocks_of(UserBlock)]
    assert "(not sent to the model)" in block
    assert "private-output" not in sent_to_model
    assert users == ["hi"]


def test_history_keeps_the_draft_and_skips_repeats() -> None:
    history = History(["a", "b"])
    history.add("b")
    assert history.entries == ["a", "b"]
    assert history.previous("draft") == "b"
    assert history.previous("b") == "a"
    assert history.previous("a") is None
    assert history.next() == "b"
    assert history.next() == "draft"
    assert not history.browsing


async def test_a_shell_command_typed_while_the_agent_works_waits_for_it(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [SLOW_REPLY])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "start")
        await until(pilot, lambda: app.busy)
        await submit(pilot, app, "!echo after")
        await until(pilot, lambda: bool(app.conversation.blocks_of(BashBlock)))
        assert app.session is not None
        roles = [m.role for m in app.session.messages]
    assert roles == ["user", "assistant", "bashExecution"]


async def test_ctrl_d_quits_only_when_the_editor_is_empty(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("a", "b", "left", "ctrl+d")
        kept_running, text = app.is_running, app.editor.text
        await pilot.press("backspace", "ctrl+d")
        await until(pilot, lambda: not app.is_running)
    assert kept_running and text == "a"
