"""Large pastes collapse to ``[paste #1 +120 lines]`` markers, as in Pi; the message sent holds the paste."""

from __future__ import annotations

from pathlib import Path

from textual import events

from caddie.ai.messages import UserMessage, text_of
from caddie.modes.interactive.pastes import PasteBook, clean_paste
from tests.tui.harness import SMALL, make_app, ready, settle


def test_only_large_pastes_become_markers_and_markers_expand_back() -> None:
    book = PasteBook()
    assert book.add("a few\nlines") is None
    lines = "\n".join(f"line {i}" for i in range(120))
    assert book.add(lines) == "[paste #1 +120 lines]"
    assert book.add("x" * 1532) == "[paste #2 1532 chars]"
    assert (
        book.expand("see [paste #1 +120 lines] and [paste #9 +3 lines]")
        == f"see {lines} and [paste #9 +3 lines]"
    )
    assert clean_paste("a\r\nb\x07c") == "a\nbc"
    assert clean_paste("/tmp/x.png", "look at") == " /tmp/x.png"


async def test_a_large_paste_shows_a_marker_and_sends_the_text(tmp_path: Path) -> None:
    pasted = "\n".join(f"row {i}" for i in range(40))
    app, _ = make_app(tmp_path, model="faux/echo")
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        app.editor.set_text("check this: ")
        app.editor.post_message(events.Paste(pasted))
        await pilot.pause()
        shown = app.editor.text
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session is not None
        sent = [text_of(m.content) for m in app.session.messages if isinstance(m, UserMessage)]
    assert shown == "check this: [paste #1 +40 lines]"
    assert sent == [f"check this: {pasted}"]
