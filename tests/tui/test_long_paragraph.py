"""A paragraph that streams for thousands of characters without a blank line is frozen where its drawn lines
start (markdown.paragraph_cut): only its last lines are drawn again per flush, and what is on screen is,
line for line and style for style, what drawing the whole text at once gives — at any width, and when a
later line turns the paragraph into a heading."""

from __future__ import annotations

from pathlib import Path

from textual.strip import Strip

from caddie.modes.interactive.conversation import FREEZE_AT, MarkdownText, markdown
from caddie.modes.interactive.markdown import paragraph_cut, reinterprets_paragraph
from caddie.modes.interactive.transcript_view import TranscriptView
from tests.tui.harness import SMALL, make_app, ready

WORDS = "Streaming a long answer quickly, line after line, to see every frame. "


def test_a_cut_is_where_a_plain_line_starts_and_never_after_markup() -> None:
    text = "one two three four five six seven"
    lines = ["one two   ", "three four", "five six  ", "seven     "]
    assert paragraph_cut(text, lines, keep=1) == (3, text.index("seven"))
    assert paragraph_cut(text, lines, keep=4) is None  # nothing to freeze
    assert paragraph_cut("one *two* three four five six seven", lines, keep=1) is None  # markup before
    assert paragraph_cut("- one two three four five six seven", [" • one two", *lines[1:]], keep=1) is None


def test_only_an_underline_reinterprets_the_paragraph_it_continues() -> None:
    assert reinterprets_paragraph("the paragraph's end\n---\n")
    assert reinterprets_paragraph("end\nmore of it\n=====")
    assert reinterprets_paragraph("end | b\n|---|---|")
    assert not reinterprets_paragraph("the paragraph's end\n\n---\n")  # a rule after it
    assert not reinterprets_paragraph("end\n- a list item")
    assert not reinterprets_paragraph("no newline yet ---")


def whole(view: TranscriptView, block: MarkdownText, width: int) -> list[object]:
    """The block's text drawn at once (blank lines by their text: a frozen block's blank line after it is
    drawn in the view's background, not in the text's style)."""
    return drawn(view.render_renderable(markdown(block.text), block, width))


def drawn(strips: list[Strip]) -> list[object]:
    return [strip if strip.text.strip() else strip.text for strip in strips]


async def test_a_long_paragraph_is_frozen_line_by_line_and_drawn_as_a_whole(tmp_path: Path) -> None:
    text = WORDS * 400  # 28,000 characters, no newline
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        view = app.conversation
        block = MarkdownText()
        view.add(block)
        await pilot.pause()
        for start in range(0, len(text), 2000):
            block.append(text[start : start + 2000])
            block.flush()
        width = block.measured_width
        cuts, live = len(block.frozen), len(block.text) - sum(map(len, block.frozen))
        assert drawn(block.lines(view, width)) == whole(view, block, width)
        block.set_text(text)  # the end of the stream: nothing changes
        assert drawn(block.lines(view, width)) == whole(view, block, width)
        await pilot.resize_terminal(SMALL[0] - 17, SMALL[1])
        await pilot.pause()
        narrower = block.measured_width
        assert narrower < width
        assert drawn(block.lines(view, narrower)) == whole(view, block, narrower)
    assert cuts >= 5, "the paragraph was not frozen as it grew"
    assert live <= FREEZE_AT + 2000


async def test_a_paragraph_that_becomes_a_heading_is_drawn_as_one(tmp_path: Path) -> None:
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        view = app.conversation
        block = MarkdownText()
        view.add(block)
        await pilot.pause()
        for _ in range(4):
            block.append(WORDS * 20)
            block.flush()
        cut = len(block.frozen)
        block.append("the end\n===\n\nAfter the heading.")
        block.flush()
        width = block.measured_width
        assert drawn(block.lines(view, width)) == whole(view, block, width)
        assert cut >= 1
        assert not any("===" in strip.text for strip in block.lines(view, width))


async def test_a_paragraph_with_markup_is_not_cut_and_still_drawn_as_a_whole(tmp_path: Path) -> None:
    text = "Some **bold** words, then " + WORDS * 100
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        view = app.conversation
        block = MarkdownText()
        view.add(block)
        await pilot.pause()
        for start in range(0, len(text), 1500):
            block.append(text[start : start + 1500])
            block.flush()
        width = block.measured_width
        assert block.frozen == []
        assert drawn(block.lines(view, width)) == whole(view, block, width)


def test_deltas_are_joined_once_when_the_text_is_read() -> None:
    block = MarkdownText("Hello")
    for delta in (", ", "wor", "ld", "!"):
        block.append(delta)  # between two flushes: kept as they came
    assert block._text == "Hello"
    assert block.text == block.search_text() == "Hello, world!"
    assert block._deltas == []
    block.append(" stale")
    block.set_text("The final text.")  # the message's own text replaces what streamed
    assert block.text == "The final text."
