"""Searching the transcript (Pi's ``tui.altScreen.search``): a find bar above the editor, every block that
holds the query a match, Enter / Shift+Enter to the next / previous one (wrapping), Esc to close.

Matching runs over the blocks' text (the whole conversation, drawn or not); the selected match is scrolled
to the top of the view and highlighted. As in Pi, the first match selected is the first at or below the
top of the screen when the search began.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.text import Text
from textual import events
from textual.containers import Vertical
from textual.widgets import Input, Static

from caddie.modes.interactive.keymap import Keybindings
from caddie.modes.interactive.transcript_view import Block, TranscriptView


def find_matches(texts: Sequence[str], query: str) -> list[int]:
    """The indices of ``texts`` that contain ``query`` (case-insensitive; an empty query matches none)."""
    needle = query.strip().lower()
    if not needle:
        return []
    return [index for index, text in enumerate(texts) if needle in text.lower()]


def first_from(matches: Sequence[int], anchor: int) -> int:
    """The position in ``matches`` of the first match at or after block ``anchor`` (else the first)."""
    return next((position for position, index in enumerate(matches) if index >= anchor), 0)


class SearchInput(Input):
    """The query line; next, previous and close are bindings of their own (keybindings.json)."""

    def __init__(self, keys: Callable[[], Keybindings], act: Callable[[str], None]) -> None:
        super().__init__(placeholder="type to find in the transcript", id="search-query")
        self.keys = keys
        self.act = act

    async def _on_key(self, event: events.Key) -> None:
        keys = self.keys()
        for binding_id in (
            "tui.altScreen.searchNext",
            "tui.altScreen.searchPrevious",
            "tui.altScreen.searchClose",
        ):
            if keys.matches(event.key, binding_id):
                event.stop()
                event.prevent_default()
                self.act(binding_id)
                return
        await super()._on_key(event)


class SearchBar(Vertical):
    """`` Find transcript            3/17`` over the query line; hidden until search opens."""

    DEFAULT_CSS = """
    SearchBar { height: auto; display: none; }
    SearchBar.-open { display: block; }
    SearchBar > #search-title { background: $accent 40%; padding: 0 1; }
    SearchBar > Input { border: none; height: 1; padding: 0 1; }
    """

    def __init__(
        self, view: TranscriptView, keys: Callable[[], Keybindings], on_close: Callable[[], object]
    ) -> None:
        super().__init__(id="search")
        self.view = view
        self.on_close = on_close
        self.title_line = Static("", id="search-title")
        self.query_input = SearchInput(keys, self.act)
        self.matches: list[int] = []
        self.selected = -1
        self.anchor_index = 0

    def compose(self) -> Any:
        yield self.title_line
        yield self.query_input

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        top = self.view.visible_blocks()
        self.anchor_index = self.view.blocks.index(top[0]) if top else 0
        self.add_class("-open")
        self.query_input.focus()
        self._search(self.query_input.value)

    def close(self) -> None:
        self.remove_class("-open")
        self._highlight(None)
        self.on_close()

    def act(self, binding_id: str) -> None:
        if binding_id == "tui.altScreen.searchClose":
            self.close()
        elif self.matches:
            step = 1 if binding_id == "tui.altScreen.searchNext" else -1
            self.selected = (self.selected + step) % len(self.matches)
            self._show()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._search(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()  # Enter is searchNext (handled as a key); never a message to the agent

    def _search(self, query: str) -> None:
        self.matches = find_matches([b.search_text() for b in self.view.blocks], query)
        self.selected = first_from(self.matches, self.anchor_index) if self.matches else -1
        self._show()

    def _show(self) -> None:
        query = self.query_input.value
        status = (
            ""
            if not query
            else "No matches"
            if not self.matches
            else f"{self.selected + 1}/{len(self.matches)}"
        )
        title = Text(" Find transcript")
        title.append(" " * max(1, (self.size.width or 80) - 18 - len(status)))
        title.append(status)
        self.title_line.update(title)
        if self.matches:
            block = self.view.blocks[self.matches[self.selected]]
            self._highlight(block)
            self.view.scroll_to_block(block)
        else:
            self._highlight(None)

    def _highlight(self, block: Block | None) -> None:
        previous, self.view.highlighted = self.view.highlighted, block
        for changed in (previous, block):
            if changed is not None:
                changed.changed()
