"""``session_before_switch`` / ``session_before_fork`` (cancellable, Pi's shapes) and what a switch announces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caddie.ai.providers.faux import faux_message
from caddie.extensions.api import (
    ExtensionAPI,
    SessionBeforeForkEvent,
    SessionBeforeForkResult,
    SessionBeforeSwitchEvent,
    SessionBeforeSwitchResult,
)
from caddie.session.entries import MessageEntry
from tests.runtime.harness import inline_extension, start_session


def recorder(seen: list[Any], answers: dict[str, Any]) -> Any:
    def register(api: ExtensionAPI) -> None:
        def before_switch(event: SessionBeforeSwitchEvent, ctx: Any) -> Any:
            seen.append(event)
            return answers.get("switch")

        def before_fork(event: SessionBeforeForkEvent, ctx: Any) -> Any:
            seen.append(event)
            return answers.get("fork")

        api.on("session_before_switch", before_switch)
        api.on("session_before_fork", before_fork)
        api.on("session_shutdown", lambda e, ctx: seen.append(("shutdown", e.reason)))
        api.on("session_start", lambda e, ctx: seen.append(("start", e.reason, e.previous_session_file)))

    return register


async def test_switch_and_new_can_be_cancelled_and_carry_pis_fields(tmp_path: Path) -> None:
    seen: list[Any] = []
    answers: dict[str, Any] = {"switch": SessionBeforeSwitchResult(cancel=True)}
    run = await start_session(tmp_path, extensions=[inline_extension(recorder(seen, answers))], session="new")
    session = run.session
    first = session.store.session_id
    seen.clear()

    assert await session.core.command_context().new_session() is False
    target = tmp_path / "other.jsonl"
    assert await session.switch_session(str(target)) is False
    assert session.store.session_id == first
    assert seen == [SessionBeforeSwitchEvent("new", None), SessionBeforeSwitchEvent("resume", str(target))]

    seen.clear()
    answers["switch"] = {"cancel": False}
    previous = session.store.session_file
    assert await session.new_session() is True
    assert session.store.session_id != first
    assert seen == [SessionBeforeSwitchEvent("new", None), ("shutdown", "new"), ("start", "new", previous)]


async def test_the_first_cancelling_handler_wins(tmp_path: Path) -> None:
    later: list[str] = []

    def first(api: ExtensionAPI) -> None:
        api.on("session_before_switch", lambda e, ctx: {"cancel": True})

    def second(api: ExtensionAPI) -> None:
        api.on("session_before_switch", lambda e, ctx: later.append("asked"))

    run = await start_session(
        tmp_path, extensions=[inline_extension(first, "a"), inline_extension(second, "b")]
    )
    assert await run.session.new_session() is False
    assert later == []


async def test_fork_and_clone_can_be_cancelled(tmp_path: Path) -> None:
    seen: list[Any] = []
    answers: dict[str, Any] = {"fork": SessionBeforeForkResult(cancel=True, skip_conversation_restore=True)}
    run = await start_session(tmp_path, extensions=[inline_extension(recorder(seen, answers))], session="new")
    session = run.session
    run.faux.set_responses([faux_message("answer")])
    await session.prompt("question")
    await session.wait_for_idle()
    user_id = next(
        e.id for e in session.store.entries() if isinstance(e, MessageEntry) and e.message.role == "user"
    )
    assistant_id = session.store.leaf_id
    assert assistant_id is not None
    before = session.store.session_id
    seen.clear()

    assert await session.fork(user_id) is False
    assert await session.fork(user_id, position="at") is False
    assert await session.core.command_context().fork(assistant_id) is False
    assert session.store.session_id == before
    assert seen == [
        SessionBeforeForkEvent(user_id, "before"),
        SessionBeforeForkEvent(user_id, "at"),
        SessionBeforeForkEvent(assistant_id, "at"),
    ]

    seen.clear()
    answers["fork"] = None
    previous = session.store.session_file
    assert await session.fork(user_id) is True
    assert session.store.session_id != before
    assert seen == [
        SessionBeforeForkEvent(user_id, "before"),
        ("shutdown", "fork"),
        ("start", "fork", previous),
    ]


async def test_forking_and_switching_read_and_write_session_files_off_the_event_loop(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A long session takes ~0.1 s per 5,000 entries to copy or rebuild: never on the UI's event loop."""
    import threading

    from caddie.session.store import SessionStore

    threads: dict[str, str] = {}
    fork, build = SessionStore.fork, SessionStore.build_context

    def spy_fork(self: SessionStore, *args: Any, **kwargs: Any) -> SessionStore:
        threads["fork"] = threading.current_thread().name
        return fork(self, *args, **kwargs)

    def spy_build(self: SessionStore) -> Any:
        threads.setdefault("build", threading.current_thread().name)
        return build(self)

    run = await start_session(tmp_path, session="new")
    run.faux.set_responses([faux_message("one"), faux_message("two")])
    await run.session.prompt("first")
    await run.session.prompt("second")
    session = run.session
    answer = [e for e in session.store.entries() if getattr(e, "message", None) is not None][-1]
    monkeypatch.setattr(SessionStore, "fork", spy_fork)
    monkeypatch.setattr(SessionStore, "build_context", spy_build)
    first = session.store.session_file
    assert await session.fork(answer.id) is True
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]
    main = threading.main_thread().name
    assert threads["fork"] != main and threads["build"] != main
    threads.clear()
    assert first is not None and await session.switch_session(first) is True
    assert threads["build"] != main and len(session.messages) == 4
