"""Chat markdown: Rich's Markdown with single newlines kept as line breaks, as Pi renders answers.

A model's answer is chat text, not a document: a list of ``Line 001: …`` lines separated by single
newlines is meant as lines. CommonMark joins them into one paragraph; Pi's renderer (marked with its
text tokens' newlines kept) and this one show them as written. ``rich.markdown`` and ``markdown_it`` are
imported on the first call (after the first frame: see app.AFTER_FIRST_FRAME).
"""

from __future__ import annotations

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
