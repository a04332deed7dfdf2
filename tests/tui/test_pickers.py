"""Pickers: /resume (and -r), /model (and Ctrl+L), /tree, /fork — all keyboard-driven."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import Input, Static

from caddie.ai.messages import UserMessage, replace
from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.conversation import UserBlock
from caddie.modes.interactive.dialogs import Choice, ConfirmScreen, InputScreen, SelectScreen
from caddie.modes.interactive.pickers import (
    SEARCHED_MESSAGE_CHARS,
    ForkPicker,
    ModelPicker,
    SessionPicker,
    TreePicker,
    age,
)
from caddie.session.entries import MessageEntry
from caddie.session.store import SessionStore
from tests.tui.harness import LARGE, SMALL, make_app, ready, settle, submit, type_text, until, widget_text

_clock = iter(range(1_700_000_000_000, 1_800_000_000_000, 60_000))


def saved_session(cwd: Path, prompt: str, name: str | None = None) -> str:
    """A session on disk; each one is a minute newer than the one saved before it."""
    store = SessionStore.create(cwd)
    store.append_model_change("faux", "faux-1")
    at = next(_clock)
    store.append_message(UserMessage(prompt, timestamp=at))
    answer = replace(faux_message(f"answer to {prompt}"), timestamp=at + 1)
    store.append_message(answer)
    if name:
        store.append_session_info(name)
    assert store.session_file is not None
    return store.session_file


def user_blocks(app: object) -> list[str]:
    return [b.text for b in app.conversation.blocks_of(UserBlock)]  # type: ignore[attr-defined]


async def test_resume_picks_a_session_by_filtering_and_enter(tmp_path: Path) -> None:
    saved_session(tmp_path, "fix the parser")
    wanted = saved_session(tmp_path, "write the docs", name="docs day")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        rows = len(app.screen.shown)  # type: ignore[attr-defined]
        await type_text(pilot, "docs")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.store.session_file == wanted)
        await pilot.pause()
        shown = user_blocks(app)
    assert rows == 2
    assert shown == ["write the docs"]


async def test_dash_r_opens_the_session_picker_before_the_session_starts(tmp_path: Path) -> None:
    first = saved_session(tmp_path, "older work")
    saved_session(tmp_path, "newer work")
    app, _ = make_app(tmp_path, resume_picker=True)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("down", "enter")
        await ready(app, pilot)
        assert app.session is not None
        opened = app.session.store.session_file
    assert opened == first


async def test_cancelling_the_dash_r_picker_quits(tmp_path: Path) -> None:
    saved_session(tmp_path, "something")
    app, _ = make_app(tmp_path, resume_picker=True)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("escape")
        await until(pilot, lambda: not app.is_running)
    assert app.session is None and app.return_code == 0


async def test_model_picker_switches_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+l")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker))
        highlighted = app.screen.highlighted_choice()  # type: ignore[attr-defined]
        await type_text(pilot, "gpt-5.5")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.model is not None
                    and app.session.model.provider == "openai")  # fmt: skip
        await pilot.pause()
        assert app.session is not None and app.session.model is not None
        ref = app.session.model.ref
        footer = widget_text(app.footer)
    assert highlighted is not None and highlighted.id == "faux/faux-1", (
        "the picker starts at the current model"
    )
    assert ref.startswith("openai/gpt-5.5")
    assert ref in footer


async def test_model_command_with_an_argument_switches_directly(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("hi")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/model faux/echo")
        await until(pilot, lambda: app.session is not None and app.session.model is not None
                    and app.session.model.id == "echo")  # fmt: skip


async def test_tree_moves_the_leaf_to_an_earlier_entry(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("first answer"), faux_message("second answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("first question", "second question"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        assert app.session is not None
        store = app.session.store
        first_answer = next(
            e.id for e in store.entries() if isinstance(e, MessageEntry) and e.message.role == "assistant"
        )
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        picker = app.screen
        assert isinstance(picker, TreePicker)
        start = picker.highlighted_choice()
        target = next(i for i, c in enumerate(picker.shown) if c.id == first_answer)
        for _ in range(picker.option_list.highlighted - target):  # type: ignore[operator]
            await pilot.press("up")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))  # summarize the branch left?
        await pilot.press("enter")  # "No summary"
        await until(pilot, lambda: store.leaf_id == first_answer)
        await pilot.pause()
        shown = user_blocks(app)
        context = [m.role for m in app.session.messages]
    assert start is not None and start.id != first_answer, "the tree opens at the current leaf"
    assert shown == ["first question"]
    assert context == ["user", "assistant"]


async def test_tree_on_a_user_message_puts_its_text_back_in_the_editor(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "redo me")
        await settle(app, pilot)
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        await pilot.press("ctrl+u")  # only user messages
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, SelectScreen))
        await pilot.press("enter")  # "No summary"
        await until(pilot, lambda: app.editor.text == "redo me")
        assert app.session is not None
        messages = app.session.messages
    assert messages == []


async def test_fork_starts_a_new_session_before_the_chosen_message(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("a1"), faux_message("a2")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        for prompt in ("keep this", "redo this"):
            await submit(pilot, app, prompt)
            await settle(app, pilot)
        assert app.session is not None
        original = app.session.store.session_file
        await submit(pilot, app, "/fork")
        await until(pilot, lambda: isinstance(app.screen, ForkPicker))
        await pilot.press("enter")  # newest user message first
        await until(pilot, lambda: app.session is not None and app.session.store.session_file != original)
        await pilot.pause()
        editor = app.editor.text
        shown = user_blocks(app)
    assert editor == "redo this"
    assert shown == ["keep this"]


def test_age_is_short_and_readable() -> None:
    assert [age(t, now=100_000) for t in (99_990, 99_000, 90_000, 1_000)] == [
        "just now",
        "16m ago",
        "2h ago",
        "1d ago",
    ]


async def test_resume_shows_ids_switches_to_all_projects_with_tab_and_searches(tmp_path: Path) -> None:
    here = tmp_path / "here"
    elsewhere = tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    saved_session(here, "local work")
    other = saved_session(elsewhere, "work in another project")
    other_id = Path(other).stem.split("_", 1)[1]  # <timestamp>_<session id>.jsonl
    app, _ = make_app(here)
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        local_rows = [c.search for c in picker.shown]
        local_text = widget_text(picker)
        await pilot.press("tab")
        await until(pilot, lambda: len(picker.shown) == 2)
        all_text = widget_text(picker)
        all_rows = [c.prompt.plain if not isinstance(c.prompt, str) else c.prompt for c in picker.shown]
        await type_text(pilot, other_id[-12:])  # ids are UUIDv7: their start is a timestamp
        await until(pilot, lambda: len(picker.shown) == 1)
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.store.session_file == other)
        await pilot.pause()
        shown = user_blocks(app)
    assert len(local_rows) == 1 and "local work" in local_rows[0]
    assert "(this project)" in local_text
    assert "(all projects)" in all_text
    other_row = next(r for r in all_rows if "another project" in r)
    assert other_id in other_row and "elsewhere" in other_row
    assert shown == ["work in another project"]


async def test_resume_and_tree_read_the_session_in_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Opening a session file and walking a session's tree take seconds for a large session: neither may
    # run on the event loop (the UI would freeze). Both run for real here; the thread is recorded.
    import threading

    from caddie.modes.interactive import pickers

    threads: dict[str, list[str]] = {"open": [], "tree": []}
    real_open, real_tree_view = SessionStore.open.__func__, pickers.tree_view  # type: ignore[attr-defined]

    def recording_open(cls: type[SessionStore], /, *args: object, **kwargs: object) -> SessionStore:
        threads["open"].append(threading.current_thread().name)
        return real_open(cls, *args, **kwargs)

    def recording_tree_view(*args: object) -> pickers.TreeView:
        threads["tree"].append(threading.current_thread().name)
        return real_tree_view(*args)  # type: ignore[arg-type]

    wanted = saved_session(tmp_path, "write the docs")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        monkeypatch.setattr(SessionStore, "open", classmethod(recording_open))
        monkeypatch.setattr(pickers, "tree_view", recording_tree_view)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.store.session_file == wanted)
        await pilot.pause()
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        await pilot.press("ctrl+u")  # another filter: computed again, off the loop
        await until(pilot, lambda: len(threads["tree"]) == 2 and not app.screen.rows_loading)  # type: ignore[attr-defined]
        shown = [c.search for c in app.screen.shown]  # type: ignore[attr-defined]
        await pilot.press("escape")
    main = threading.main_thread().name
    assert threads["open"] and main not in threads["open"]
    assert len(threads["tree"]) == 2 and main not in threads["tree"]
    assert len(shown) == 1 and "write the docs" in shown[0]


async def test_a_long_list_holds_a_window_of_rows_and_every_row_is_reachable() -> None:
    # Textual's list measures every row it holds on each change (seconds for a 20,000-entry session's
    # tree); a long list dialog holds a window of rows around the highlighted one and moves it.
    from textual.app import App

    from caddie.modes.interactive.dialogs import WINDOW, Choice, ListScreen

    choices = [Choice(f"id{i}", f"row number {i}") for i in range(WINDOW * 3)]
    picked: list[object] = []

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(ListScreen("Pick", choices, initial="id700"), picked.append)

    app = Host()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ListScreen)
        held = len(screen.option_list.options)
        start = screen.highlighted_choice()
        for _ in range(60):  # down past the window's edge, ten rows a key
            await pilot.press("pagedown")
        after_paging = screen.highlighted_choice()
        await type_text(pilot, "number 3")  # the filter searches every row, not only the window
        filtered = [c.id for c in screen.shown]
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace")
        await type_text(pilot, "ber 1199")
        await pilot.press("enter")
        await pilot.pause()
    assert held == WINDOW
    assert start is not None and start.id == "id700"
    assert after_paging is not None and after_paging.id == "id1199"  # the last row, beyond the first window
    assert "id3" in filtered and "id1023" in filtered and "id1100" not in filtered
    assert picked == ["id1199"]


async def test_tree_filters_cycle_both_ways(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, [faux_message("an answer")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "a question")
        await settle(app, pilot)
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        picker = app.screen
        assert isinstance(picker, TreePicker)
        await pilot.press("ctrl+o")
        forward = picker.mode
        await pilot.press("ctrl+shift+o", "ctrl+shift+o")
        backward = picker.mode
    assert forward == "no-tools"
    assert backward == "all", "Shift+Ctrl+O goes back past the default to the last filter"


async def test_resume_shows_only_named_sessions_and_their_paths_on_request(tmp_path: Path) -> None:
    saved_session(tmp_path, "fix the parser")
    named = saved_session(tmp_path, "write the docs", name="docs day")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        await pilot.press("ctrl+n")
        named_rows = [c.id for c in picker.shown]
        await pilot.press("ctrl+n", "ctrl+p")
        all_rows = [c.id for c in picker.shown]
        with_path = [str(c.prompt) for c in picker.shown]
    assert named_rows == [named]
    assert len(all_rows) == 2
    assert any(Path(named).name in row for row in with_path)


async def test_resume_deletes_a_session_after_a_yes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `trash` command: the file is deleted
    doomed = saved_session(tmp_path, "throwaway work")
    kept = saved_session(tmp_path, "keep this")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        picker.highlight(next(i for i, c in enumerate(picker.shown) if c.id == doomed))
        await pilot.press("ctrl+d")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: not Path(doomed).exists())
        await pilot.pause()
        rows = [c.id for c in picker.shown]
    assert rows == [kept]


async def test_resume_renames_sessions_with_ctrl_r(tmp_path: Path) -> None:
    other = saved_session(tmp_path, "fix the parser")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        assert app.session is not None
        app.session.store.save_now()
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        picker.highlight(next(i for i, c in enumerate(picker.shown) if c.id == other))
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, InputScreen))
        await type_text(pilot, "parser work")
        await pilot.press("enter")
        await until(pilot, lambda: any("parser work" in str(c.prompt) for c in picker.shown if c.id == other))
        current = app.session.store.session_file
        picker.highlight(next(i for i, c in enumerate(picker.shown) if c.id == current))
        await pilot.press("ctrl+r")  # the open session: renamed through it
        await until(pilot, lambda: isinstance(app.screen, InputScreen))
        await type_text(pilot, "today")
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.store.session_name() == "today")
        await pilot.press("escape")
    reopened = SessionStore.open(other, repair=False)
    assert reopened.session_name() == "parser work"


async def test_resume_sorts_threaded_recent_and_by_relevance(tmp_path: Path) -> None:
    parent_file = saved_session(tmp_path, "refactor the lexer")
    saved_session(tmp_path, "lexer notes and the parser")
    parent = SessionStore.open(parent_file)
    fork = parent.fork()
    fork.append_message(UserMessage("try again", timestamp=next(_clock)))
    fork.append_message(faux_message("again"))
    parent.close()
    assert fork.session_file is not None
    saved_session(tmp_path, "newest: parser")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        threaded_rows = [c.id for c in picker.shown]
        threaded_text = [str(c.prompt) for c in picker.shown]
        await pilot.press("ctrl+s")
        recent_rows = [c.id for c in picker.shown]
        await pilot.press("ctrl+s")
        await type_text(pilot, "lexer")
        await pilot.pause()
        relevance_rows = [str(c.prompt) for c in picker.shown]
        title = widget_text(picker.query_one("#title"))
    # threaded: the fork right under the session it came from, marked; recent: newest first, flat
    assert threaded_rows.index(fork.session_file) == threaded_rows.index(parent_file) + 1
    assert threaded_text[threaded_rows.index(fork.session_file)].startswith("└ ")
    assert recent_rows[0] == fork.session_file and recent_rows.index(parent_file) > 0
    assert relevance_rows[0].startswith("lexer notes") and "sort: relevance" in title


async def test_tree_folds_branch_segments_pages_and_shows_label_times(tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path)
    store.append_model_change("faux", "faux-1")
    root = store.append_message(UserMessage("start here", timestamp=next(_clock)))
    fork_point = store.append_message(faux_message("first answer"))
    first = store.append_message(UserMessage("one way", timestamp=next(_clock)))
    store.append_message(faux_message("went one way"))
    store.move_leaf(fork_point)
    second = store.append_message(UserMessage("other way", timestamp=next(_clock)))
    store.append_message(faux_message("went the other way"))
    store.append_label(root, "begin")
    path = store.session_file
    store.close()
    app, _ = make_app(tmp_path, session="file", session_file=path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/tree")
        await until(pilot, lambda: isinstance(app.screen, TreePicker))
        picker = app.screen
        assert isinstance(picker, TreePicker)
        rows = [c.id for c in picker.shown]
        picker.highlight(rows.index(first))
        await pilot.press("ctrl+left")  # a segment start with entries under it: folded
        await until(pilot, lambda: len(picker.shown) == len(rows) - 1)
        folded_prompt = str(next(c.prompt for c in picker.shown if c.id == first))
        await pilot.press("ctrl+left")  # already folded: to the start of the segment above
        up_from_fold = picker.highlighted_choice()
        picker.highlight([c.id for c in picker.shown].index(first))
        await pilot.press("ctrl+right")  # unfolds
        await until(pilot, lambda: len(picker.shown) == len(rows))
        picker.highlight(0)
        await pilot.press("ctrl+right")  # nothing folded: to the first entry after the branch point
        down = picker.highlighted_choice()
        await pilot.press("right")  # a page down: the last row of this short tree
        paged = picker.highlighted_choice()
        await pilot.press("left")
        paged_back = picker.highlighted_choice()
        await pilot.press("T")  # Shift+T: the labels' times
        await until(pilot, lambda: any(":" in str(c.prompt).split("[begin]")[-1] for c in picker.shown))
        timed = str(next(c.prompt for c in picker.shown if c.id == root))
        search = picker.query_one("#filter").value  # type: ignore[attr-defined]
        picker.highlight([c.id for c in picker.shown].index(root))
        await pilot.press("ctrl+x")  # the entry's text to the clipboard (OSC 52)
        await pilot.pause()
        copied = app.clipboard
    assert copied == "start here"
    assert folded_prompt.lstrip().startswith("⊞ ")
    assert up_from_fold is not None and up_from_fold.id == root
    assert down is not None and down.id == first
    assert paged is not None and paged.id == rows[-1] and paged_back is not None and paged_back.id == rows[0]
    assert second in rows
    assert re.search(r"\[begin\] \d\d:\d\d", timed), timed  # set today: the time of day, as Pi
    assert search == ""  # T was not typed into the search


async def test_ctrl_backspace_deletes_a_session_only_when_the_search_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no `trash` command: the file is deleted
    doomed = saved_session(tmp_path, "throwaway work")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        await type_text(pilot, "throwaway work")
        await pilot.press("ctrl+backspace")  # a word of the search, not the session
        await pilot.pause()
        search = picker.query_one("#filter").value  # type: ignore[attr-defined]
        assert isinstance(app.screen, SessionPicker) and Path(doomed).exists()
        picker.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.pause()
        picker.highlight(next(i for i, c in enumerate(picker.shown) if c.id == doomed))
        await pilot.press("ctrl+backspace")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await until(pilot, lambda: not Path(doomed).exists())
    assert search == "throwaway "


async def test_resume_searches_with_a_re_regex_over_every_message(tmp_path: Path) -> None:
    parser = saved_session(tmp_path, "fix the parser")
    docs = saved_session(tmp_path, "write the docs")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        search = picker.query_one("#filter", Input)
        assert isinstance(picker, SessionPicker)

        def shown() -> list[str]:
            return [c.id for c in picker.shown]

        def hint() -> str:
            return widget_text(picker.query_one("#hint", Static))

        search.value = "re:PARS(er|ing)"  # case-insensitive
        await pilot.pause()
        by_first = shown()
        search.value = "re:answer to w\\w+"  # the assistant's reply, not the first message
        await pilot.pause()
        by_reply = shown()
        search.value = "re:(unclosed"
        await pilot.pause()
        bad, bad_hint = shown(), hint()
        search.value = "re:  "
        await pilot.pause()
        empty, empty_hint = shown(), hint()
        search.value = "re:docs|parser"
        await pilot.pause()
        both, good_hint = shown(), hint()
        await pilot.press("enter")
        await until(pilot, lambda: app.session is not None and app.session.store.session_file == both[0])
    assert by_first == [parser]
    assert by_reply == [docs]
    assert bad == [] and bad_hint.startswith("Bad regex: missing )")
    assert empty == [] and empty_hint == "Empty regex: type a pattern after re:"
    assert sorted(both) == sorted([parser, docs]) and "resume" in good_hint


async def test_the_dash_r_picker_takes_re_queries_too(tmp_path: Path) -> None:
    saved_session(tmp_path, "older work")
    wanted = saved_session(tmp_path, "newer work on issue 42")
    app, _ = make_app(tmp_path, resume_picker=True)
    async with app.run_test(size=SMALL) as pilot:
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        await type_text(pilot, r"re:issue\s+\d+")
        await pilot.press("enter")
        await ready(app, pilot)
        assert app.session is not None
        opened = app.session.store.session_file
    assert opened == wanted


async def test_resume_search_text_is_lowercased_once_and_holds_the_first_20000_characters(
    tmp_path: Path,
) -> None:
    filler = "x" * (SEARCHED_MESSAGE_CHARS + 100)
    early = saved_session(tmp_path, f"Early NEEDLE {filler}")
    saved_session(tmp_path, f"{filler} late needle")  # past the searched part
    app, _ = make_app(tmp_path)
    async with app.run_test(size=LARGE) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/resume")
        await until(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        folded = [c.folded for c in picker.choices]
        search = picker.query_one("#filter", Input)
        search.value = "needle"
        await pilot.pause()
        found = [c.id for c in picker.shown]
        search.value = "re:needle"
        await pilot.pause()
        found_by_regex = [c.id for c in picker.shown]
    assert all(f == f.lower() for f in folded)
    assert all(len(f) < SEARCHED_MESSAGE_CHARS + 1000 for f in folded)
    assert found == [early] and found_by_regex == [early]
    choice = Choice("id", Text("Title"), "Some TEXT")
    assert choice.folded == "some text" and Choice("id", Text("Only A Title")).folded == "only a title"
