"""What extensions add to the interactive UI: keyboard shortcuts (``api.register_shortcut``) and their own
look for their custom messages (``api.register_message_renderer``).

Shortcuts are priority bindings on the main screen, so they work while the editor has focus and stay out
of the way of dialogs; keys caddie itself needs are reserved the way Pi reserves its own (see
``BUILTIN_KEYS``). A failing shortcut handler or renderer is reported in the conversation and never
breaks the UI; a renderer that fails falls back to the default look.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.console import RenderableType
from rich.protocol import is_renderable
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from caddie.ai.messages import CustomMessage
from caddie.extensions.api import MessageRenderOptions
from caddie.extensions.runner import ExtensionRunner, call_handler
from caddie.modes.interactive.conversation import CustomBlock, ExpandableBlock

if TYPE_CHECKING:
    from caddie.modes.interactive.base import AppBase

BUILTIN_KEYS: dict[str, tuple[str, bool]] = {
    # key: (what caddie does with it, reserved — an extension cannot take it over; as Pi's reserved list)
    "escape": ("app.interrupt", True),
    "ctrl+c": ("app.clear", True),
    "ctrl+d": ("app.exit", True),
    "ctrl+q": ("app.exit", True),
    "ctrl+z": ("app.suspend", True),
    "shift+tab": ("app.thinking.cycle", True),
    "ctrl+p": ("app.model.cycleForward", True),
    "ctrl+shift+p": ("app.model.cycleBackward", True),
    "ctrl+l": ("app.model.select", True),
    "ctrl+o": ("app.tools.expand", True),
    "ctrl+t": ("app.thinking.toggle", True),
    "ctrl+g": ("app.editor.external", True),
    "ctrl+x": ("app.message.copy", True),
    "alt+enter": ("app.message.followUp", True),
    "enter": ("tui.input.submit", True),
    "ctrl+k": ("tui.editor.deleteToLineEnd", True),
    "alt+up": ("app.message.dequeue", False),
    "tab": ("tui.input.tab", False),
    "ctrl+j": ("tui.input.newLine", False),
    "shift+enter": ("tui.input.newLine", False),
    "ctrl+w": ("tui.editor.deleteWordBackward", False),
    "alt+backspace": ("tui.editor.deleteWordBackward", False),
    "alt+d": ("tui.editor.deleteWordForward", False),
    "ctrl+u": ("tui.editor.deleteToLineStart", False),
    "ctrl+y": ("tui.editor.yank", False),
    "alt+y": ("tui.editor.yankPop", False),
    "ctrl+minus": ("tui.editor.undo", False),
    "pageup": ("app.scroll.pageUp", False),
    "pagedown": ("app.scroll.pageDown", False),
    "ctrl+home": ("app.scroll.top", False),
    "ctrl+end": ("app.scroll.bottom", False),
}
ACTION = "extension_shortcut"
"""The ``AppBase.action_extension_shortcut(key)`` method every extension shortcut binds to."""


def install_shortcuts(app: AppBase, runner: ExtensionRunner) -> list[str]:
    """Bind the extensions' shortcuts on the main screen (again after ``/reload``); returns the warnings."""
    builtin = {key: what for key, (what, _reserved) in BUILTIN_KEYS.items()}
    reserved = {key for key, (_what, is_reserved) in BUILTIN_KEYS.items() if is_reserved}
    resolved = runner.shortcuts(builtin, reserved)
    screen = app.screen_stack[0]
    bindings = screen._bindings.key_to_bindings  # Textual offers no public way to add a priority binding
    for key in list(bindings):
        kept = [b for b in bindings[key] if not b.action.startswith(f"app.{ACTION}(")]
        if kept:
            bindings[key] = kept
        else:
            del bindings[key]
    for key in resolved.by_key:
        bindings.setdefault(key, []).append(Binding(key, f"app.{ACTION}({key!r})", show=False, priority=True))
    app.extension_shortcuts = resolved.by_key
    return resolved.warnings


async def run_shortcut(app: AppBase, key: str) -> None:
    spec = app.extension_shortcuts.get(key)
    session = app.session
    if spec is None or session is None:
        return
    try:
        await call_handler(spec.handler, session.extensions.context())
    except Exception as e:
        app.show_error(f"Extension {spec.source} failed in shortcut {key}: {str(e) or type(e).__name__}")


def hotkey_rows(app: AppBase) -> list[tuple[str, str]]:
    """``/hotkeys``: what extensions added."""
    return [
        (key, f"{spec.description or 'extension shortcut'}  ({spec.source})")
        for key, spec in app.extension_shortcuts.items()
    ]


class RenderedMessage(ExpandableBlock):
    """A custom message drawn by its extension's renderer (redrawn when Ctrl+O expands tool output)."""

    DEFAULT_CSS = "RenderedMessage { border-left: thick $secondary; padding: 0 1; }"

    def __init__(self, app: AppBase, message: CustomMessage, drawn: RenderableType, expanded: bool) -> None:
        super().__init__(expanded)
        self.caddie = app
        self.message = message
        self.custom_type = message.custom_type
        self._drawn = drawn
        self._drawn_expanded = expanded

    def build(self) -> RenderableType:
        if (
            self.expanded != self._drawn_expanded
        ):  # Ctrl+O: ask the renderer again; keep the old look if it fails
            self._drawn = render_custom(self.caddie, self.message, self.expanded) or self._drawn
            self._drawn_expanded = self.expanded
        return self._drawn


def render_custom(app: AppBase, message: CustomMessage, expanded: bool) -> RenderableType | None:
    """What the extension's renderer draws for ``message``, or None (no renderer, None, or it failed)."""
    session = app.session
    spec = session.extensions.message_renderer(message.custom_type) if session is not None else None
    if spec is None:
        return None
    try:
        drawn = spec.renderer(message, MessageRenderOptions(expanded))
    except Exception as e:
        app.show_error(
            f"Extension {spec.source} failed in the renderer for {message.custom_type}: "
            f"{str(e) or type(e).__name__}"
        )
        return None
    if drawn is None:
        return None
    if isinstance(drawn, str):
        return Text(drawn)
    if is_renderable(drawn):
        return cast(RenderableType, drawn)
    app.show_error(
        f"Extension {spec.source}: the renderer for {message.custom_type} returned "
        f"{type(drawn).__name__}; expected a str, a Rich renderable or None"
    )
    return None


def custom_message_widget(app: AppBase, message: CustomMessage, expanded: bool) -> Widget:
    drawn = render_custom(app, message, expanded)
    if drawn is None:
        return CustomBlock(message)
    return RenderedMessage(app, message, drawn, expanded)
