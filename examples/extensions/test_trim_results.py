"""Testing an extension with ``caddie.testing``: the trim-results example, driven event by event.

    uv run pytest examples/extensions/test_trim_results.py

``Harness(register)`` runs the extension's ``register`` on a real ``ExtensionAPI`` bound to an in-memory host:
no model, no terminal, no files. The session is built with the message builders; events are fired as the host
fires them; what the extension did is read back from the host, the session and the UI.
"""

from __future__ import annotations

from examples.extensions.trim_results import register

from caddie.extensions.api import EntryVisibilityEvent, SavingsEvent, ToolResultMessage
from caddie.testing import Harness, assistant, assistant_text, call, result, text_of, user

BIG = "\n".join(f"line {i}: " + "x" * 40 for i in range(300))  # 14,000 characters


def a_session_with_three_big_results(h: Harness) -> None:
    h.add(user("look at the logs"))
    for n in range(3):
        h.add(assistant(call(f"c{n}", "bash", command=f"cat log{n}")), result(f"c{n}", BIG, "bash"))
    h.add(assistant_text("The logs say nothing new."))


def test_old_results_are_sent_trimmed_and_the_newest_whole() -> None:
    h = Harness(register)
    a_session_with_three_big_results(h)
    sent = h.view()  # what the model would be sent now (the context handler applied)
    results = [m for m in sent if isinstance(m, ToolResultMessage)]
    assert text_of(results[0]).endswith("left out of this old result]")
    assert len(text_of(results[0])) < 1_200  # 20 lines and the note
    assert [text_of(r) for r in results[1:]] == [BIG, BIG]
    assert h.session.context_messages()[2].content == results[1].content  # the session keeps everything
    assert len(text_of(h.session.context_messages()[2])) == len(BIG)


def test_views_learn_what_is_trimmed_and_what_it_saved() -> None:
    h = Harness(register)
    a_session_with_three_big_results(h)
    branch = h.session.branch()
    messages = h.session.context_messages()
    ids = [e.id for e in branch]  # one message per entry in this session
    visibility = EntryVisibilityEvent(branch, messages, ids)
    h.emit("entry_visibility", visibility)
    assert list(visibility.answers) == [ids[2]] and visibility.answers[ids[2]].state == "replaced"

    savings = SavingsEvent(branch)
    h.emit("savings", savings)
    [report] = savings.reports
    assert report.source == "trim-results" and report.requests_total == 4
    assert report.requests == 1 and report.tokens == report.gross_tokens > 3_000  # the last request only
    assert report.status == f"trim-results \u2212{report.tokens:,} tok"
    assert h.host.writes == []  # answering changed nothing
