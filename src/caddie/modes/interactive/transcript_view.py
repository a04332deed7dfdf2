"""The transcript as lines: one scroll view that draws only the lines on screen, as Pi's renderer does.

A conversation is a list of ``Block`` s (a message, a tool call, a notice …). A block knows how to draw
itself as a Rich renderable; the view renders it to lines at the current width only when it comes near
the screen, keeps those lines until the block changes or the width does, and uses a cheap estimate of the
height of every block it has not drawn yet. So opening a session of thousands of messages costs the
handful on screen, the whole conversation is reachable at once (the scrollbar spans all of it), and a
streaming answer re-renders only its own block. When blocks above the screen turn out taller or shorter
than estimated, the view moves by the difference, so what is on screen stays put.

The view follows new output while it is at the bottom; scrolling up pauses that, scrolling back to the
end (or ``follow()``) resumes it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from rich.console import RenderableType
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

LOOKAHEAD_SCREENS = 1
"""How many screens above and below the visible one are measured before painting."""


class Block:
    """One item of the transcript (subclasses say what it shows)."""

    component: str = "transcript--text"
    """The view's component class that styles it (background, colour)."""
    padding: int = 0
    """Cells of padding left and right (in the component's background; a tool drawn by itself has none)."""
    gap: ClassVar[int] = 1
    """Blank lines after it."""

    def __init__(self) -> None:
        self.view: TranscriptView | None = None
        self._lines: list[Strip] | None = None
        self._width = -1

    # -- what it shows (subclasses) ------------------------------------------------------------------
    def content(self) -> RenderableType:
        raise NotImplementedError

    def search_text(self) -> str:
        """Its plain text, for transcript search (and height estimates)."""
        return ""

    def estimate(self, width: int) -> int:
        """A guess at its height before it is drawn (lines of text, wrapped at ``width``)."""
        text = self.search_text()
        inner = max(1, width - 2 * self.padding)
        return max(1, sum(1 + len(line) // inner for line in text.split("\n"))) if text else 1

    # -- drawing ------------------------------------------------------------------------------------
    def changed(self) -> None:
        """What it shows changed: draw it again (the view re-measures it and what follows)."""
        self._lines = None
        if self.view is not None:
            self.view.block_changed(self)

    def lines(self, view: TranscriptView, width: int) -> list[Strip]:
        if self._lines is None or self._width != width:
            self._lines = view.render_renderable(self.content(), self, width)
            self._width = width
        return self._lines

    def attached(self) -> None:
        """Called once it is in a view (blocks that tick or stream register there)."""

    def restyle(self) -> None:
        """The theme changed: its lines are drawn again in the new colours (its height stays)."""
        self._lines = None

    @property
    def measured_width(self) -> int:
        """The width its lines were drawn at (-1: not drawn)."""
        return self._width if self._lines is not None else -1


class TranscriptView(ScrollView, can_focus=False):
    """See the module docstring."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "transcript--text", "transcript--user", "transcript--tool", "transcript--tool-error",
        "transcript--muted", "transcript--warning", "transcript--error", "transcript--notice",
        "transcript--thinking", "transcript--custom", "transcript--summary", "transcript--status",
        "transcript--hit",
    }  # fmt: skip
    DEFAULT_CSS = """
    TranscriptView { height: 1fr; padding: 0 1; scrollbar-size-vertical: 1; overflow-x: hidden; }
    TranscriptView > .transcript--user { background: $boost; }
    TranscriptView > .transcript--tool { background: $panel 40%; }
    TranscriptView > .transcript--tool-error { background: $error 15%; }
    TranscriptView > .transcript--muted { color: $text-muted; }
    TranscriptView > .transcript--notice { color: $text-muted; text-style: dim; }
    TranscriptView > .transcript--status { color: $text-muted; text-style: dim; }
    TranscriptView > .transcript--warning { color: $text-warning; }
    TranscriptView > .transcript--error { color: $text-error; }
    TranscriptView > .transcript--thinking { color: $text-muted; text-style: italic; }
    TranscriptView > .transcript--custom { color: $text; }
    TranscriptView > .transcript--summary { color: $text-muted; }
    TranscriptView > .transcript--hit { background: $accent 30%; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.blocks: list[Block] = []
        self._heights: list[int] = []
        self._measured: list[bool] = []
        self._offsets: list[int] = [0]
        """``_offsets[i]``: the first line of block ``i``; the last entry is the total height."""
        self._width = 0
        self.highlighted: Block | None = None
        """A search hit, drawn with the highlight background."""

    # -- following new output -----------------------------------------------------------------------
    def on_mount(self) -> None:
        self.follow()
        self.app.theme_changed_signal.subscribe(self, self._restyle)

    def _restyle(self, _theme: object) -> None:
        """Another theme (or the same one with new colours, theme_book's hot reload): blocks drawn in the
        old colours are drawn again as they come on screen."""
        for block in self.blocks:
            block.restyle()
        self.refresh()

    @property
    def following(self) -> bool:
        """Whether new output scrolls into view (true at the bottom; scrolling up pauses it)."""
        return self._anchored and not self._anchor_released

    def follow(self) -> None:
        """Jump to the end and follow new output again (sending a message, End)."""
        self._anchor_released = False
        self.anchor()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if self._anchor_released and new_value >= self.max_scroll_y:
            self._anchor_released = False  # back at the bottom: follow again
        self._measure_near_screen()

    def _scroll_to(self, x: float | None = None, y: float | None = None, **kwargs: Any) -> bool:
        # Textual releases the anchor on every scroll, even one that stays at the bottom (PageDown
        # there): following must resume whenever the scroll ends at the bottom.
        changed = super()._scroll_to(x, y, **kwargs)
        if self._anchor_released and y is not None and y >= self.max_scroll_y:
            self._anchor_released = False
        return changed

    # -- the blocks ---------------------------------------------------------------------------------
    def add(self, *blocks: Block) -> None:
        self.insert(len(self.blocks), blocks)

    def insert(self, index: int, blocks: Sequence[Block]) -> None:
        width = self._content_width()
        for offset, block in enumerate(blocks):
            block.view = self
            block.attached()
            self.blocks.insert(index + offset, block)
            self._heights.insert(index + offset, block.estimate(width) + block.gap)
            self._measured.insert(index + offset, False)
        self._relayout(index)

    def insert_after(self, anchor: Block, blocks: Sequence[Block]) -> None:
        """Put ``blocks`` right after ``anchor`` (at the end when ``anchor`` is not in the view)."""
        index = self._index_of(anchor)
        self.insert(len(self.blocks) if index is None else index + 1, blocks)

    def remove_block(self, block: Block) -> None:
        index = self._index_of(block)
        if index is None:
            return
        block.view = None
        del self.blocks[index], self._heights[index], self._measured[index]
        self._relayout(index)

    def clear(self) -> None:
        for block in self.blocks:
            block.view = None
        self.blocks, self._heights, self._measured = [], [], []
        self.highlighted = None
        self._relayout(0)

    def block_changed(self, block: Block) -> None:
        index = self._index_of(block)
        if index is None:
            return
        if self._measured[index] or self._offsets[index] < self.scroll_y + self.size.height * 2:
            self._measure(index)
            self._relayout(index)
        else:
            self.refresh()

    def _index_of(self, block: Block) -> int | None:
        # Blocks change most often at the end (the streaming answer): look there first.
        for index in range(len(self.blocks) - 1, -1, -1):
            if self.blocks[index] is block:
                return index
        return None

    def index_at(self, y: int) -> int:
        """The index of the block that holds line ``y`` of the transcript."""
        return max(0, min(len(self.blocks) - 1, bisect_right(self._offsets, y) - 1))

    def offset_of(self, block: Block) -> int | None:
        """The first line of ``block`` in the transcript (its exact place once everything above is drawn)."""
        index = self._index_of(block)
        return None if index is None else self._offsets[index]

    def scroll_to_block(self, block: Block, *, top: bool = True) -> None:
        """Bring ``block`` on screen (at the top), drawing what is above it first so that it lands right."""
        index = self._index_of(block)
        if index is None:
            return
        start = max(0, index - 3)
        for i in range(start, min(len(self.blocks), index + 3)):
            self._measure(i)
        self._relayout(start)
        self._anchor_released = True
        self.scroll_to(y=self._offsets[index], animate=False, immediate=True)

    def visible_blocks(self) -> list[Block]:
        if not self.blocks:
            return []
        top = int(self.scroll_y)
        first, last = self.index_at(top), self.index_at(top + self.size.height)
        return self.blocks[first : last + 1]

    # -- measuring ----------------------------------------------------------------------------------
    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width or self.size.width or 80)

    def _measure(self, index: int) -> bool:
        """Draw block ``index`` at the current width; True when its height changed."""
        block = self.blocks[index]
        height = len(block.lines(self, self._content_width())) + block.gap
        self._measured[index] = True
        if height != self._heights[index]:
            self._heights[index] = height
            return True
        return False

    def _relayout(self, start: int) -> None:
        offsets = self._offsets[: start + 1] if start < len(self._offsets) else [0]
        if len(offsets) < start + 1:
            offsets = [0]
            start = 0
        total = offsets[-1]
        for height in self._heights[start:]:
            total += height
            offsets.append(total)
        self._offsets = offsets
        self.virtual_size = Size(self._content_width(), total)
        self._measure_near_screen()
        self.refresh()
        if self.following:
            self.scroll_end(animate=False, immediate=True)

    def _measure_near_screen(self) -> None:
        """Draw the blocks on and near the screen; keep what is on screen in place when blocks above it
        turn out to have another height than estimated."""
        if not self.blocks or not self.is_mounted:
            return
        height = self.size.height or 24
        top = int(self.scroll_y)
        first = self.index_at(max(0, top - height * LOOKAHEAD_SCREENS))
        last = self.index_at(top + height * (1 + LOOKAHEAD_SCREENS))
        shift = 0
        changed_from: int | None = None
        for index in range(first, last + 1):
            if self._measured[index]:
                continue
            before = self._heights[index]
            if self._measure(index):
                changed_from = index if changed_from is None else changed_from
                if self._offsets[index] + before <= top:
                    shift += self._heights[index] - before
        if changed_from is None:
            return
        total = self._offsets[changed_from]
        offsets = self._offsets[: changed_from + 1]
        for h in self._heights[changed_from:]:
            total += h
            offsets.append(total)
        self._offsets = offsets
        self.virtual_size = Size(self._content_width(), total)
        if shift and not self.following:
            self.set_scroll(None, top + shift)

    def on_resize(self) -> None:
        width = self._content_width()
        if width == self._width:
            return
        self._width = width
        # Scrolled up, the line at the top stays at the top: note its block and its line in that block.
        keep = not self.following and bool(self.blocks)
        top = int(self.scroll_y)
        anchor = self.index_at(top) if keep else 0
        inside = top - self._offsets[anchor] if keep else 0
        for index, block in enumerate(self.blocks):
            self._measured[index] = False
            self._heights[index] = block.estimate(width) + block.gap
        if keep:
            self._measure(anchor)
        self._relayout(0)
        if keep:
            self.set_scroll(None, self._offsets[anchor] + min(inside, max(0, self._heights[anchor] - 1)))

    # -- painting -----------------------------------------------------------------------------------
    def render_renderable(self, renderable: RenderableType, block: Block, width: int) -> list[Strip]:
        """``renderable`` drawn for ``block`` at ``width``: in its component's style, padded to the full width."""
        style = self.rich_style + self.get_component_rich_style(block.component, partial=True)
        if block is self.highlighted:
            style += self.get_component_rich_style("transcript--hit", partial=True)
        inner = max(1, width - 2 * block.padding)
        console = self.app.console
        options = console.options.update(width=inner, height=None, highlight=False)
        rendered = console.render_lines(renderable, options, style=style, pad=True)  # `style` applied here
        if not block.padding:
            return [Strip(line, width) for line in rendered]
        pad = [Segment(" " * block.padding, style)]
        return [Strip([*pad, *line, *pad], width) for line in rendered]

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        line = y + scroll_y
        width = self._content_width()
        blank = Strip.blank(width, self.rich_style)
        if not self.blocks or line >= self._offsets[-1]:
            return blank
        index = self.index_at(line)
        block = self.blocks[index]
        lines = block.lines(self, width)
        inside = line - self._offsets[index]
        if inside >= len(lines):
            return blank
        return lines[inside].crop(scroll_x, scroll_x + width)


def plain_lines(blocks: Iterable[Block], view: TranscriptView, width: int) -> list[str]:
    """The text of ``blocks`` as drawn at ``width`` (tests and search use it)."""
    out: list[str] = []
    for block in blocks:
        out.extend(strip.text.rstrip() for strip in block.lines(view, width))
    return out
