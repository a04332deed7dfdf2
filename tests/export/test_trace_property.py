"""The trace mulligan's filter keeps for views (``FilterTrace``) is exact: dropping the messages it says were
hidden and substituting those it says were shrunk gives, message for message, the view the model is sent."""

from __future__ import annotations

from hypothesis import given

from caddie.extensions.bundled.mulligan.transforms import FilterTrace, filter_pipeline
from tests.mulligan.helpers import PROTECT
from tests.mulligan.test_properties import build, plans


@given(plans)
def test_applying_the_trace_reproduces_the_filtered_view(plan: list[tuple[str, int | str]]) -> None:
    s = build(plan)
    trace = FilterTrace()
    view = filter_pipeline(s.messages, s.rewinds, s.shrinks, PROTECT, s.branch, trace=trace)
    assert view == filter_pipeline(
        s.messages, s.rewinds, s.shrinks, PROTECT, s.branch
    )  # tracing changes nothing
    assert not set(trace.hidden) & set(trace.shrunk)
    rebuilt = [
        trace.shrunk[i][1] if i in trace.shrunk else message
        for i, message in enumerate(s.messages)
        if i not in trace.hidden
    ]
    assert len(rebuilt) == len(view)
    assert all(a is b for a, b in zip(rebuilt, view, strict=True))
    assert set(trace.hidden) <= set(range(len(s.messages)))
    assert all(marker in s.rewinds for marker in trace.hidden.values())
    assert all(marker in s.shrinks for marker, _ in trace.shrunk.values())
