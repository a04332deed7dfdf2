"""Extensions' components on screen: widgets, the footer, the header, ``ui.custom`` in place of the editor or
floating over the conversation, and the theme as extensions see it.

A component (ui_components.py) draws lines with ANSI colours; ``ComponentView`` shows one as a Textual
widget (and hands it the keys while it has the focus), ``ComponentBlock`` as a block of the transcript.
A component that raises is shown as one error line, never a crash.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.app import App, SuspendNotSupported
from textual.theme import Theme
from textual.widget import Widget
from textual.widgets import Static

from caddie.extensions.ui_components import KeyInput, TerminalNotSuspendable, ThemeView
from caddie.modes.interactive.overlays import OverlayScreen as OverlayScreen  # its home is overlays.py
from caddie.modes.interactive.transcript_view import Block, TranscriptView

PI_TOKENS = {
    "accent": "primary", "borderAccent": "accent", "muted": "secondary", "success": "success",
    "error": "error", "warning": "warning", "text": "foreground", "selectedBg": "surface",
    "toolPendingBg": "panel", "customMessageBg": "panel", "userMessageBg": "boost",
}  # fmt: skip
"""Pi's colour tokens → the Textual theme's colours (the inverse of themes.PI_TO_TEXTUAL)."""


def theme_view(theme: Theme) -> ThemeView:
    """A Textual theme as extensions draw with it (``theme.fg("accent", text)``)."""
    colors: dict[str, str] = {}
    for token, attribute in PI_TOKENS.items():
        value = getattr(theme, attribute, None)
        if isinstance(value, str) and value.startswith("#") and len(value) == 7:
            colors[token] = value.lower()
    return ThemeView(theme.name, colors, bool(theme.dark))


class TerminalView:
    """The ``tui`` argument of component factories: the screen's size and a way to ask for a redraw."""

    def __init__(self, app: App[Any], redraw: Callable[[], object]) -> None:
        self._app = app
        self._redraw = redraw

    @property
    def width(self) -> int:
        return self._app.size.width

    @property
    def height(self) -> int:
        return self._app.size.height

    def request_render(self) -> None:
        self._redraw()

    @contextmanager
    def suspend(self) -> Iterator[None]:
        """The terminal for another program meanwhile (Textual's ``App.suspend``): the screen is put away and
        restored afterwards; ``TerminalNotSuspendable`` where the terminal cannot be handed over."""
        with ExitStack() as stack:
            try:
                stack.enter_context(self._app.suspend())
            except (SuspendNotSupported, RuntimeError) as e:  # RuntimeError: no terminal any more (closing)
                raise TerminalNotSuspendable(
                    "This terminal cannot be handed to another program (caddie runs without a real terminal here)"
                ) from e
            yield


def redraw_components(app: App[Any]) -> None:
    """``tui.request_render()``: every extension component on screen draws again (widgets, ``ui.custom``,
    overlays, the footer, the header and an editor component's border labels)."""
    for screen in app.screen_stack:
        for view in screen.query(ComponentView):
            view.redraw()
        for transcript in screen.query(TranscriptView):
            for block in transcript.blocks:
                if isinstance(block, ComponentBlock):
                    block.changed()
    refresh_footer = getattr(app, "refresh_footer", None)
    if callable(refresh_footer):
        refresh_footer()
    show_labels = getattr(getattr(app, "editor", None), "show_labels", None)
    if callable(show_labels):  # an editor component's border labels
        show_labels()


def component_lines(component: Any, width: int) -> Text:
    """What a component draws at ``width`` (its ANSI colours kept), or the error it raised, in one line."""
    try:
        lines = component.render(width)
        return Text("\n").join(Text.from_ansi(str(line)) for line in lines)
    except Exception as e:  # an extension's component must never break the screen
        return Text(f"[component failed: {type(e).__name__}: {e}]", style="red")


def as_renderable(drawn: Any, width: int) -> RenderableType:
    """A renderer's answer for Rich: a component (``render(width)``), a string (ANSI colours kept) or a Rich
    renderable as it is."""
    if isinstance(drawn, str):
        return Text.from_ansi(drawn)
    if hasattr(drawn, "render") and callable(drawn.render) and not hasattr(drawn, "__rich_console__"):
        return component_lines(drawn, width)
    return drawn if drawn is not None else Text("")


class _Failed:
    """What a factory that raised leaves in its place: one red line."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def render(self, width: int) -> list[str]:
        return [f"\x1b[31m[component failed: {type(self.error).__name__}: {self.error}]\x1b[39m"]


def made_by(factory: Callable[..., Any], *args: Any) -> Any:
    """The component ``factory(*args)`` makes, or one that shows the error it raised."""
    try:
        return factory(*args)
    except Exception as e:  # an extension's factory must never break the screen
        return _Failed(e)


class ComponentView(Static):
    """A component as a widget (a widget area, the footer, ``ui.custom``); keys go to its
    ``handle_input`` while it has the focus."""

    DEFAULT_CSS = "ComponentView { height: auto; padding: 0 1; }"

    def __init__(
        self, component: Any, *, focusable: bool = False, id: str | None = None, name: str | None = None
    ) -> None:
        super().__init__("", id=id, name=name)
        self.component = component
        self.can_focus = focusable
        self.made_with: tuple[Any, Any] | None = None
        """The factory and theme name that made the component (a widget area keeps it while they are the
        same)."""

    def on_mount(self) -> None:
        self.redraw()

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        self.update(component_lines(self.component, max(1, self.size.width - 2 or 78)))

    async def _on_key(self, event: events.Key) -> None:
        handle = getattr(self.component, "handle_input", None)
        if not self.can_focus or handle is None:
            return
        event.stop()
        event.prevent_default()
        try:
            result = handle(KeyInput(event.key, event.character))
            if asyncio.iscoroutine(result):
                await result
        except Exception as e:  # reported in the component's place
            self.update(Text(f"[component failed: {type(e).__name__}: {e}]", style="red"))
            return
        self.redraw()


class ComponentBlock(Block):
    """A component as a block of the transcript (``ui.set_header``)."""

    def __init__(self, component: Any) -> None:
        super().__init__()
        self.drawn = component
        """The extension's component (``Block.component`` is the block's CSS class)."""

    def content(self) -> RenderableType:
        width = self.measured_width if self.measured_width > 0 else 80
        return component_lines(self.drawn, width)


def mount_in_place_of(widget: Widget, replacement: Widget) -> None:
    """Show ``replacement`` where ``widget`` is (which is hidden meanwhile)."""
    parent = widget.parent
    assert isinstance(parent, Widget)
    widget.display = False
    parent.mount(replacement, after=widget)
