"""The whole conversation is reachable: a long session opens with its first message a key away, the
transcript can be searched (Ctrl+Shift+F, Enter / Shift+Enter, Esc) and walked prompt by prompt."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import UserMessage
from caddie.ai.providers.faux import faux_message
from caddie.modes.interactive.conversation import UserBlock
from caddie.modes.interactive.transcript_search import find_matches, first_from
from caddie.session.store import SessionStore
from tests.tui.harness import SMALL, make_app, ready


def long_session(tmp_path: Path, turns: int) -> str:
    store = SessionStore.create(str(tmp_path), session_dir=str(tmp_path / "sessions"))
    for i in range(turns):
        store.append_message(UserMessage(f"question {i:04d}"))
        store.append_message(faux_message(f"answer {i:04d}" + (" needle" if i % 100 == 7 else "")))
    assert store.session_file is not None
    return store.session_file


def test_matches_are_blocks_holding_the_query_and_the_first_is_at_or_below_the_screen() -> None:
    texts = ["alpha", "Beta gamma", "gamma", "delta"]
    assert find_matches(texts, "GAMMA") == [1, 2]
    assert find_matches(texts, "  ") == []
    assert first_from([1, 2], 2) == 1
    assert first_from([1, 2], 3) == 0, "past the last match: wrap to the first"


async def test_a_long_session_opens_whole_and_home_reaches_its_first_message(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, session="file", session_file=long_session(tmp_path, 1000))
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        users = app.conversation.blocks_of(UserBlock)
        await pilot.press("home")
        await pilot.pause()
        first_on_screen = app.conversation.visible_blocks()
    assert len(users) == 1000, "every message is in the transcript"
    assert any(isinstance(b, UserBlock) and b.text == "question 0000" for b in first_on_screen)


async def test_search_finds_selects_and_cycles_then_escape_returns_to_the_editor(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, session="file", session_file=long_session(tmp_path, 300))
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+shift+f")
        await pilot.press(*"needle")
        await pilot.pause()
        first = app.conversation.highlighted
        title = str(app.search.title_line.render())
        await pilot.press("enter")
        await pilot.pause()
        second = app.conversation.highlighted
        await pilot.press("shift+enter")
        await pilot.pause()
        back = app.conversation.highlighted
        on_screen = app.conversation.visible_blocks()
        await pilot.press("escape")
        await pilot.pause()
        closed = not app.search.is_open and app.focused is app.editor
        sent = [m for m in app.session.messages if isinstance(m, UserMessage)]  # type: ignore[union-attr]
    assert first is not None and "answer 0007 needle" in first.search_text()
    assert "1/3" in title
    assert second is not None and "answer 0107 needle" in second.search_text()
    assert back is first and first in on_screen
    assert closed and app.conversation.highlighted is None
    assert len(sent) == 300, "Enter in the find bar sends nothing"


async def test_prompt_keys_walk_the_users_messages(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path, session="file", session_file=long_session(tmp_path, 50))
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await pilot.press("ctrl+shift+up")
        await pilot.pause()
        top = app.conversation.visible_blocks()[0]
        await pilot.press("ctrl+shift+up")
        await pilot.pause()
        above = app.conversation.visible_blocks()[0]
        await pilot.press("ctrl+shift+down")
        await pilot.pause()
        below = app.conversation.visible_blocks()[0]
    assert isinstance(top, UserBlock) and isinstance(above, UserBlock)
    assert int(above.text.split()[1]) == int(top.text.split()[1]) - 1
    assert below is top
