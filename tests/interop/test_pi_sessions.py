"""A caddie-written session is accepted by the reference Pi's own loader, which builds the same context."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import message_to_json
from caddie.session.store import SessionStore
from tests.interop.pi import pi_session_context
from tests.session.test_store import full_session


def test_pi_opens_a_caddie_session_and_builds_the_same_context(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    assert store.path is not None
    pi = pi_session_context(store.path)
    ctx = store.build_context()

    assert pi["sessionId"] == store.session_id
    assert pi["leafId"] == store.leaf_id
    assert pi["entryCount"] == len(store)
    assert pi["branch"] == [e.id for e in store.branch()]
    assert pi["contextEntries"] == [e.id for e in store.context_entries()]
    assert pi["labels"] == store.labels()
    assert pi["name"] == store.session_name()
    assert pi["thinkingLevel"] == ctx.thinking_level
    assert pi["messages"] == [message_to_json(m) for m in ctx.messages]


def test_pi_opens_a_caddie_fork(tmp_path: Path) -> None:
    store = full_session(tmp_path)
    first = store.entries()[2].id
    forked = store.fork(first)
    forked.append_message(store.build_context().messages[-1])  # an assistant message: the file is written
    assert forked.path is not None
    pi = pi_session_context(forked.path)
    assert pi["messages"] == [
        message_to_json(m) for m in SessionStore.open(forked.path).build_context().messages
    ]
