"""Where an extension's overlay (``ui.custom(..., overlay=True)``) floats: Pi's ``OverlayOptions`` placement
(anchor, width and minimum width, maximum height, row/column, offsets, margins, ``visible``), and the
overlays that leave the keys to the editor (``non_capturing``).

``overlay_placement`` decides the box's size and position for a screen size, as Pi's layout does; an
``OverlayBox`` applies it again whenever the screen, the box's content or (for options given as a
function) the options change.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.screen import ModalScreen
from textual.widget import Widget

from caddie.extensions.ui_components import OverlayMargin, OverlayOptions

OptionsSource = OverlayOptions | Callable[[], OverlayOptions]
"""Options, or a function that gives them each time the overlay is laid out (Pi's dynamic options)."""

DEFAULT_WIDTH = 80
"""Pi's overlay width when none is given (at most the screen's)."""

_PERCENT = re.compile(r"^(\d+(?:\.\d+)?)%$")


@dataclass(frozen=True, slots=True)
class Placement:
    width: int
    row: int
    col: int
    max_height: int | None


def size_value(value: int | str | None, total: int) -> int | None:
    """Cells, or a percentage of ``total`` (``"50%"``); None for None or a malformed percentage."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    match = _PERCENT.match(value.strip())
    return int(total * float(match.group(1)) / 100) if match else None


def _percent(value: str) -> float | None:
    match = _PERCENT.match(value.strip())
    return float(match.group(1)) / 100 if match else None


def _margins(margin: int | OverlayMargin) -> tuple[int, int, int, int]:
    if isinstance(margin, int):
        return (max(0, margin),) * 4
    return max(0, margin.top), max(0, margin.right), max(0, margin.bottom), max(0, margin.left)


def _along(anchor: str, axis: str) -> str:
    """``start``, ``middle`` or ``end`` of ``anchor`` along ``axis`` (``row`` or ``col``)."""
    if axis == "row":
        if anchor.startswith("top"):
            return "start"
        return "end" if anchor.startswith("bottom") else "middle"
    if anchor.endswith("left") or anchor == "left-center":
        return "start"
    return "end" if anchor.endswith("right") or anchor == "right-center" else "middle"


def overlay_placement(
    options: OverlayOptions, height: int, screen_width: int, screen_height: int
) -> Placement:
    """The box's width, top row, left column and maximum height for a box ``height`` rows high (what its
    content draws), on a screen of ``screen_width`` × ``screen_height`` cells. Kept inside the margins."""
    top, right, bottom, left = _margins(options.margin)
    room_width = max(1, screen_width - left - right)
    room_height = max(1, screen_height - top - bottom)
    width = size_value(options.width, screen_width) or min(DEFAULT_WIDTH, room_width)
    if options.min_width is not None:
        width = max(width, options.min_width)
    width = max(1, min(width, room_width))
    max_height = size_value(options.max_height, screen_height)
    if max_height is not None:
        max_height = max(1, min(max_height, room_height))
    shown = min(height, max_height) if max_height is not None else height

    def position(value: int | str | None, axis: str, size: int, room: int, start: int) -> int:
        if isinstance(value, int):
            return value
        percent = _percent(value) if isinstance(value, str) else None
        if percent is not None:
            return start + int(max(0, room - size) * percent)
        where = _along(options.anchor, axis) if value is None else "middle"  # a bad percentage: centred
        return start + {"start": 0, "middle": (room - size) // 2, "end": room - size}[where]

    row = position(options.row, "row", shown, room_height, top) + options.offset_y
    col = position(options.col, "col", width, room_width, left) + options.offset_x
    row = max(top, min(row, screen_height - bottom - shown))
    col = max(left, min(col, screen_width - right - width))
    return Placement(width, row, col, max_height)


def resolve(options: OptionsSource) -> OverlayOptions:
    return options() if callable(options) else options


class OverlayBox(Container):
    """The frame an overlay's component floats in, placed by its options (see the module docstring)."""

    DEFAULT_CSS = """
    OverlayBox { position: absolute; height: auto; border: round $accent; background: $surface; }
    """

    def __init__(self, view: Widget, options: OptionsSource, *, id: str | None = None) -> None:
        super().__init__(view, id=id)
        self.options = options
        self.hidden_by_handle = False
        """``handle.set_hidden(True)``: hidden until shown again (``visible`` decides besides)."""

    def on_mount(self) -> None:
        self.screen.screen_layout_refresh_signal.subscribe(self, lambda _screen: self.place())
        self.place()

    def place(self) -> None:
        """Apply the options for the screen as it is now (again after every layout of the screen: a resize,
        the component drawing more lines)."""
        options = resolve(self.options)
        screen = self.screen.size
        visible = options.visible(screen.width, screen.height) if options.visible is not None else True
        shown = visible and not self.hidden_by_handle
        if shown and not self.display and isinstance(self.screen, OverlayScreen):
            self.call_after_refresh(self.screen.view.focus)  # shown again: it has the keys again
        self.display = shown
        placement = overlay_placement(options, self.outer_size.height, screen.width, screen.height)
        self.styles.margin = 0
        self.styles.width = placement.width
        self.styles.max_height = placement.max_height
        self.styles.offset = (placement.col, placement.row)


class OverlayControl:
    """The ``on_handle`` argument of an overlay (Pi's ``OverlayHandle``)."""

    def __init__(
        self, box: OverlayBox, view: Widget, close: Callable[[], Any], refocus: Callable[[], Any]
    ) -> None:
        self.box = box
        self.view = view
        self._close = close
        self._refocus = refocus
        """Give the keys back to where they went before (the editor, for a non-capturing overlay)."""

    def focus(self) -> None:
        self.view.focus()

    def unfocus(self) -> None:
        self._refocus()

    def is_focused(self) -> bool:
        return self.view.has_focus

    def set_hidden(self, hidden: bool) -> None:
        self.box.hidden_by_handle = hidden
        self.box.place()

    def is_hidden(self) -> bool:
        return not self.box.display

    def hide(self) -> None:
        self._close()


class OverlayScreen(ModalScreen[Any]):
    """``ui.custom(..., overlay=True)``: the component floating over the conversation, which stays visible;
    it has the keys until it closes (Ctrl+C closes it too)."""

    DEFAULT_CSS = "OverlayScreen { background: $background 0%; align: left top; }"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+c", "dismiss_overlay", show=False, priority=True)]

    def __init__(self, view: Widget, options: OptionsSource) -> None:
        super().__init__()
        self.view = view
        self.box = OverlayBox(view, options, id="overlay")

    def compose(self) -> Any:
        yield self.box

    def on_mount(self) -> None:
        self.view.focus()

    def action_dismiss_overlay(self) -> None:
        self.dismiss(None)
