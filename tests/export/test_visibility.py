"""What the page marks as not sent (or sent in another form) is what the model is sent: the extensions'
own answer through ``entry_visibility`` — mulligan's real filter, with its config — never a host re-guess."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from caddie.ai.messages import (
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    message_to_json,
    text_of,
)
from caddie.config.paths import agent_dir
from caddie.extensions.api import EntryVisibility, EntryVisibilityEvent
from caddie.runtime.factory import SessionRequest, open_session
from caddie.session.context import context_entries_of_path
from caddie.session.entries import entry_to_context_messages
from caddie.session.store import SessionStore
from tests.export.helpers import (
    Ids,
    Page,
    assistant,
    export,
    marker,
    write_settings,
)
from tests.export.helpers import (
    open_session as build_fixture,
)
from tests.tui.harness import make_app, ready, submit, until

NUDGES = ("mulligan:nudge", "mulligan:high-water")


async def _model_context(session_file: Path, cwd: Path) -> list[Any]:
    """What the next request from the session's leaf carries (every extension's ``context`` handler run)."""
    build = await open_session(
        SessionRequest(
            cwd=str(cwd),
            mode="print",
            session="file",
            session_file=str(session_file),
            require_model=False,
            read_only=True,
        )
    )
    session = build.session
    await session.start("resume")
    try:
        messages = await session.context_for_next_request()
    finally:
        await session.shutdown("quit")
    return [m for m in messages if not (isinstance(m, CustomMessage) and m.custom_type in NUDGES)]


def assert_page_agrees_with_the_model(store: SessionStore, page: Page) -> None:
    """Entry by entry along the active branch: hidden ones are absent from the request, replaced ones are sent
    as the page shows, every other one is sent exactly as stored."""
    assert store.path is not None
    sent = asyncio.run(_model_context(store.path, Path(store.cwd)))
    marked = page.marked()
    expected: list[tuple[str, Any]] = []
    for entry in context_entries_of_path(store.branch()):
        for message in entry_to_context_messages(entry):
            if marked.get(entry.id) != "hidden":
                expected.append((entry.id, message))
    assert len(sent) == len(expected)
    for model_message, (entry_id, original) in zip(sent, expected, strict=True):
        if marked.get(entry_id) == "replaced":
            [view] = page.article(entry_id).find("div", "model-view")
            assert text_of(model_message.content) in view.all_text()
            assert message_to_json(model_message) != message_to_json(original)
        else:
            assert message_to_json(model_message) == message_to_json(original)


def fixture_session(tmp_path: Path) -> tuple[SessionStore, Ids]:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    return store, build_fixture(store)


def test_mulligans_hides_and_shrinks_are_marked_as_it_answers(tmp_path: Path) -> None:
    store, ids = fixture_session(tmp_path)
    assert store.path is not None
    before = store.path.read_bytes()
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {
        ids.wrong_call: "hidden",
        ids.wrong_result: "hidden",
        ids.source_result: "replaced",
    }
    for hidden in (ids.wrong_call, ids.wrong_result):
        article = page.article(hidden)
        assert "model-hidden" in article.classes and article.attrs["data-cause"] == ids.rewind
        assert "not sent to the model: hidden by mulligan_rewind (last_tool_call_group)" in article.all_text()
    shrunk = page.article(ids.source_result)
    assert "model-replaced" in shrunk.classes and shrunk.attrs["data-cause"] == ids.shrink
    [view] = shrunk.find("div", "model-view")
    assert "<context-shrunk>\nparser.py: 40 functions\n</context-shrunk>" in view.all_text()
    [original] = shrunk.find("details", "original")
    assert "def f39(x):" in original.all_text() and "open" not in original.attrs
    assert "model-hidden" not in page.article(ids.prompt).classes  # its rewind was cancelled
    links = [a.attrs["href"] for a in page.article(ids.rewind).find("a", "entry-link")]
    assert links == [f"#e-{ids.wrong_call}", f"#e-{ids.wrong_result}"]  # the marker's data links its targets
    facts = [x.all_text() for x in page.all("dl", "facts")[0].children]
    assert facts[facts.index("Hidden from the model") + 1] == "2"
    assert facts[facts.index("Sent in another form") + 1] == "1"
    assert store.path.read_bytes() == before  # exporting never writes to the session
    assert_page_agrees_with_the_model(store, page)


def test_with_mulligan_disabled_nothing_is_marked(tmp_path: Path) -> None:
    write_settings({"mulligan": {"enabled": False}})
    store, _ = fixture_session(tmp_path)
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {}
    assert_page_agrees_with_the_model(store, page)


def protected_session(tmp_path: Path) -> tuple[SessionStore, str, str]:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    prompt = store.append_message(UserMessage("the task"))
    call = store.append_message(assistant(TextContent("on it"), ToolCall("c1", "read", {"path": "a"})))
    store.append_message(ToolResultMessage("c1", "read", [TextContent("A")]))
    store.append_custom(
        "mulligan:rewind", marker("rewind", 1, id="r1", granularity="last_turn", hideEntryIds=[prompt, call])
    )
    store.append_message(assistant(TextContent("done")))
    return store, prompt, call


def test_a_rewind_refused_by_the_protected_roles_is_not_marked(tmp_path: Path) -> None:
    store, _, _ = protected_session(tmp_path)  # it would remove the original task: mulligan refuses it
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {}
    assert_page_agrees_with_the_model(store, page)


def test_protected_roles_follow_the_users_mulligan_settings(tmp_path: Path) -> None:
    write_settings({"mulligan": {"rewind": {"protectedRoles": ["latest:user"]}}})
    store, prompt, call = protected_session(tmp_path)
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {prompt: "hidden", call: "hidden"}
    assert_page_agrees_with_the_model(store, page)


def unpinned_session(tmp_path: Path) -> tuple[SessionStore, str, str]:
    """An old-style rewind (no ``hideEntryIds``): it applies only until the turn moves past its own call."""
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    store.append_message(UserMessage("the task"))
    call = store.append_message(assistant(ToolCall("c1", "bash", {"command": "grep -r x ."})))
    result = store.append_message(ToolResultMessage("c1", "bash", [TextContent("10k lines")]))
    store.append_message(
        assistant(ToolCall("c2", "mulligan_rewind", {"granularity": "last_tool_call_group"}))
    )
    store.append_message(ToolResultMessage("c2", "mulligan_rewind", [TextContent("rewound")]))
    store.append_custom(
        "mulligan:rewind",
        marker("rewind", 1, id="r1", granularity="last_tool_call_group", excludeToolCallId="c2"),
    )
    return store, call, result


def test_an_unpinned_rewind_is_marked_only_while_it_applies(tmp_path: Path) -> None:
    store, call, result = unpinned_session(tmp_path)
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "now.html"))
    assert page.marked() == {call: "hidden", result: "hidden"}
    assert page.article(call).attrs.get("data-cause")  # the marker entry
    assert_page_agrees_with_the_model(store, page)

    store.append_message(
        assistant(TextContent("moving on"))
    )  # the turn advanced: the rewind no longer applies
    page = Page.of(export(store.path, tmp_path / "later.html"))
    assert page.marked() == {}
    assert_page_agrees_with_the_model(store, page)


def test_a_selector_shrink_after_a_rewind_marks_the_entry_it_really_replaces(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    store.append_message(UserMessage("the task"))
    call = store.append_message(assistant(ToolCall("c1", "read", {"path": "a.txt"})))
    result = store.append_message(ToolResultMessage("c1", "read", [TextContent("A " * 50)]))
    store.append_custom(
        "mulligan:rewind",
        marker("rewind", 1, id="r1", granularity="last_tool_call_group", hideEntryIds=[call, result]),
    )
    store.append_message(assistant(ToolCall("c2", "read", {"path": "b.txt"})))
    second = store.append_message(ToolResultMessage("c2", "read", [TextContent("B " * 50)]))
    store.append_message(assistant(ToolCall("c3", "read", {"path": "c.txt"})))
    third = store.append_message(ToolResultMessage("c3", "read", [TextContent("C " * 50)]))
    store.append_custom(  # an old-style shrink: found by its selector in the already-rewound list
        "mulligan:shrink",
        marker("shrink", 2, id="s1", target={"by_tool_call_id": "c3"}, replacement="C, summarised"),
    )
    store.append_message(assistant(TextContent("done")))
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {call: "hidden", result: "hidden", third: "replaced"}
    assert second not in page.marked()
    assert_page_agrees_with_the_model(store, page)


def test_entries_a_compaction_summarises_are_marked_by_the_host(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    old = store.append_message(UserMessage("old question"))
    old_reply = store.append_message(assistant(TextContent("old answer")))
    kept = store.append_message(UserMessage("kept question"))
    store.append_message(assistant(TextContent("kept answer")))
    compaction = store.append_compaction("## Goal\nanswer questions", kept, 5_000)
    store.append_message(UserMessage("new question"))
    store.append_message(assistant(TextContent("new answer")))
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {old: "hidden", old_reply: "hidden"}
    for entry_id in (old, old_reply):
        article = page.article(entry_id)
        assert {"model-hidden", "compacted"} <= article.classes
        assert article.attrs["data-cause"] == compaction
        assert "summarized by a compaction" in article.all_text()
    [summary] = page.article(compaction).find("details", "summary")
    assert [h.all_text() for h in summary.find("h2")] == ["Goal"]
    assert_page_agrees_with_the_model(store, page)


def test_every_branch_is_shown_and_asked_about(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    prompt = store.append_message(UserMessage("task"))
    fork_point = store.append_message(assistant(TextContent("plan")))
    side_call = store.append_message(assistant(ToolCall("s1", "read", {"path": "side.py"})))
    side_result = store.append_message(ToolResultMessage("s1", "read", [TextContent("SIDE")]))
    store.append_custom(
        "mulligan:rewind",
        marker(
            "rewind", 1, id="r1", granularity="last_tool_call_group", hideEntryIds=[side_call, side_result]
        ),
    )
    store.move_leaf(fork_point)
    active = store.append_message(UserMessage("another way"))
    reply = store.append_message(assistant(TextContent("done")))
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert {a.attrs["data-entry-id"] for a in page.all("article")} == {e.id for e in store.entries()}
    on_path = {e.id for e in store.branch()}
    assert on_path == {prompt, fork_point, active, reply}
    for a in page.all("article"):
        assert ("on-path" in a.classes) == (a.attrs["data-entry-id"] in on_path)
    [fork] = page.all("div", "fork")
    branches = [c for c in fork.children if c.tag == "details"]
    assert ["open" in b.attrs for b in branches] == [False, True]
    assert page.marked() == {side_call: "hidden", side_result: "hidden"}  # asked on the side branch too
    assert_page_agrees_with_the_model(store, page)


HIDER = """
from caddie.extensions.api import EntryVisibility, UserMessage

def register(api):
    def broken(event, ctx):
        raise RuntimeError("boom")

    def redact(event, ctx):
        for message, entry_id in zip(event.messages, event.entry_ids):
            if isinstance(message, UserMessage) and "secret" in str(message.content):
                event.mark(entry_id, EntryVisibility("replaced", "redacted by hider", UserMessage("[redacted]")))

    def context(event, ctx):
        from caddie.extensions.api import ContextResult
        out = [UserMessage("[redacted]") if isinstance(m, UserMessage) and "secret" in str(m.content) else m
               for m in event.messages]
        return ContextResult(out)

    api.on("entry_visibility", broken)
    api.on("entry_visibility", redact)
    api.on("context", context)
"""


def test_any_extension_answers_through_the_hook_and_a_failing_one_is_skipped(tmp_path: Path) -> None:
    (agent_dir() / "extensions").mkdir(parents=True)
    (agent_dir() / "extensions" / "hider.py").write_text(HIDER, encoding="utf-8")
    write_settings({"disabledExtensions": ["mulligan", "goal", "mcp"]})
    store = SessionStore.create(tmp_path, tmp_path / "sessions")
    secret = store.append_message(UserMessage("my secret is 42"))
    store.append_message(assistant(TextContent("noted")))
    assert store.path is not None
    page = Page.of(export(store.path, tmp_path / "page.html"))
    assert page.marked() == {secret: "replaced"}
    assert "[redacted]" in page.article(secret).find("div", "model-view")[0].all_text()
    assert_page_agrees_with_the_model(store, page)


def test_hidden_wins_over_replaced_whatever_the_order() -> None:
    event = EntryVisibilityEvent([], [], [])
    event.mark("a", EntryVisibility("replaced", "shrunk"))
    event.mark("a", EntryVisibility("hidden", "rewound"))
    event.mark("a", EntryVisibility("replaced", "again"))
    assert event.answers["a"].reason == "rewound"


async def test_slash_export_in_the_terminal_ui_asks_the_extensions_too(tmp_path: Path) -> None:
    write_settings({"disabledExtensions": ["goal"]})
    store, ids = fixture_session(tmp_path)
    assert store.path is not None
    app, _ = make_app(tmp_path, session="file", session_file=str(store.path))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/export out/page.html")
        target = tmp_path / "out" / "page.html"
        await until(pilot, lambda: target.exists() and target.read_text().endswith("</html>\n"))
    page = Page.of(target)
    assert page.marked() == {
        ids.wrong_call: "hidden",
        ids.wrong_result: "hidden",
        ids.source_result: "replaced",
    }
