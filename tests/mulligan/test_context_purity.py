"""mulligan's ``context`` handler never changes what it is given: what it hides, shrinks or adds is built
anew (copy-on-write), as every handler must (messages are frozen values; the lists a handler is given and
the lists inside messages are not changed in place either — docs/extensions.md)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from caddie.extensions.api import AgentMessage, ContextEvent, ContextResult
from tests.mulligan.fakehost import NOTE, Harness, assistant, call, result, user


def conversation(h: Harness) -> None:
    h.add(user("task"), assistant(call("r1", "read", path="a")), result("r1", "FIRST " * 400, "read"))
    h.add(assistant(call("r2", "bash", command="grep -r x .")), result("r2", "match\n" * 3000, "bash"))
    h.add(assistant(call("r3", "read", path="b")), result("r3", "SECOND " * 50, "read"))


def nothing_hidden(h: Harness) -> None:
    conversation(h)


def a_rewind(h: Harness) -> None:
    conversation(h)
    h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_tool_call_group"}, "rw")
    h.add(user("go on"))


def a_shrink(h: Harness) -> None:
    conversation(h)
    h.execute("mulligan_shrink", {"target": {"by_tool_call_id": "r1"}, "replacement": "two lines"})
    h.add(user("go on"))


def a_rewind_and_a_shrink_and_metrics(h: Harness) -> None:
    a_shrink(h)
    h.call_tool("mulligan_rewind", {"note": NOTE, "granularity": "last_turn"}, "rw")
    for turn in range(1, 6):
        h.turn_end(turn)
    h.add(user("and now?"))


SCENARIOS: dict[str, Callable[[Harness], None]] = {
    "nothing hidden": nothing_hidden,
    "a rewind": a_rewind,
    "a shrink": a_shrink,
    "a rewind, a shrink and turn metrics": a_rewind_and_a_shrink_and_metrics,
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_context_handler_leaves_its_input_unchanged(scenario: str) -> None:
    h = Harness({})
    SCENARIOS[scenario](h)
    given: list[AgentMessage] = copy.deepcopy(h.session.context_messages())
    before = copy.deepcopy(given)
    ids = [id(m) for m in given]
    event = ContextEvent(given)
    results: list[ContextResult | None] = [handler(event, h.ctx) for handler in h.handlers("context")]
    assert results, "mulligan registers a context handler"
    assert [id(m) for m in event.messages] == ids
    assert event.messages == before
    if scenario != "nothing hidden":  # the scenarios do change the view: the check above is not vacuous
        view = results[-1].messages if results[-1] is not None else None
        assert view is not None and view != before
