"""Chat markdown: Rich's Markdown with single newlines kept as line breaks, as Pi renders answers.

A model's answer is chat text, not a document: a list of ``Line 001: …`` lines separated by single
newlines is meant as lines. CommonMark joins them into one paragraph; Pi's renderer (marked with its
text tokens' newlines kept) and this one show them as written. ``rich.markdown`` and ``markdown_it`` are
imported on the first call (after the first frame: see app.AFTER_FIRST_FRAME).

A long streamed answer is drawn piece by piece (conversation.MarkdownText): finished blocks once, and a
paragraph that grows without end (no blank line for thousands of characters) cut where a drawn line
starts, when what is before the cut is plain prose (``paragraph_cut``): wrapping is greedy, so the lines
before such a cut never change as the paragraph grows — unless a later line turns the paragraph into a
heading or a table (``reinterprets_paragraph``), when the cut is undone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from rich.console import RenderableType

CODE_THEME = "monokai"


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt().enable("strikethrough").enable("table")


@cache
def _chat_markdown_class() -> type[Any]:
    from rich.markdown import Markdown

    class ChatMarkdown(Markdown):
        """``Markdown`` where a soft line break is a hard one."""

        def __init__(self, markup: str, *, hyperlinks: bool = False, **kwargs: Any) -> None:
            super().__init__("", code_theme=CODE_THEME, hyperlinks=hyperlinks, **kwargs)
            self.markup = markup
            self.parsed = _parser().parse(markup)
            for token in self.parsed:  # markdown-it's ``breaks`` option acts in its HTML renderer only
                for child in token.children or ():
                    if child.type == "softbreak":
                        child.type = "hardbreak"

    return ChatMarkdown


def chat_markdown(text: str, *, hyperlinks: bool = False) -> RenderableType:
    """``text`` as markdown with hard line breaks (``hyperlinks``: links as OSC 8 links, not ``text (url)``)."""
    renderable: RenderableType = _chat_markdown_class()(text, hyperlinks=hyperlinks)
    return renderable


MARKUP = re.compile(r"[*_`\[\]<>&\\~|!#]")
"""Characters that can start or end inline markup (or a block, at a line's start)."""
UNDERLINE = re.compile(r"[=\-|: \t]+")
"""A line that makes the lines above it a setext heading (``===``, ``---``) or a table's header row."""


def paragraph_cut(text: str, lines: Sequence[str], keep: int) -> tuple[int, int] | None:
    """Where ``text`` can be cut so that its drawn ``lines`` (their plain text) before the cut never change:
    ``(n, offset)`` — the first ``n`` lines (all but the last ``keep``) are exactly ``text[:offset]``, plain
    prose (no markup character, each line's words found in order with only whitespace between), so
    ``text[offset:]`` drawn alone is the rest. None when there is no such cut."""
    count = len(lines) - keep
    if count <= 0:
        return None
    markup = MARKUP.search(text)
    plain_until = markup.start() if markup is not None else len(text)
    position = 0
    for index, line in enumerate(lines[: count + 1]):
        shown = line.strip()
        found = text.find(shown, position) if shown else -1
        if found < 0 or found > plain_until or text[position:found].strip():
            return None
        if index == count:
            return count, found
        position = found + len(shown)
    return None


def reinterprets_paragraph(text: str) -> bool:
    """Whether a line of ``text`` (which continues a paragraph), before its first blank line, underlines
    the paragraph into a heading or a table's header row (conservatively: any line of ``=-|:`` and spaces)."""
    for line in text.split("\n")[1:]:
        if not line.strip():
            return False
        if UNDERLINE.fullmatch(line):
            return True
    return False
