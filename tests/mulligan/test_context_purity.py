"""mulligan's ``context`` handler never changes the messages it is given: what it hides, shrinks or adds
is built anew (copy-on-write). The runtime relies on that (``PURE_CONTEXT_SOURCES`` in
``caddie.extensions.runner``): after a bundled handler it skips comparing every message copy with its
stored original, so a handler that edited its input in place would leak the edit into later requests.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest

from caddie.extensions.api import AgentMessage, ContextEvent, ContextResult
from caddie.extensions.loader import bundled_sources, load_extensions
from caddie.extensions.runner import PURE_CONTEXT_SOURCES
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


async def test_mulligan_is_the_only_bundled_extension_with_a_context_handler() -> None:
    """A new bundled ``context`` handler would be trusted the same way: it needs a test like the above."""
    loaded = await load_extensions(bundled_sources())
    assert not loaded.errors
    assert {ext.name for ext in loaded.extensions if ext.handlers.get("context")} == {"mulligan"}


def test_the_loader_names_mulligan_a_pure_context_source_and_nothing_else_is() -> None:
    names = {source.name: source.path for source in bundled_sources()}
    assert names["mulligan"].startswith(PURE_CONTEXT_SOURCES)
    assert not "/home/me/.caddie/agent/extensions/mine.py".startswith(PURE_CONTEXT_SOURCES)
    assert not "entry-point:someone.else".startswith(PURE_CONTEXT_SOURCES)
