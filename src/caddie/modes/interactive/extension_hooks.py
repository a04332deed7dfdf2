"""What extensions add to the interactive UI: keyboard shortcuts (``api.register_shortcut``), their own
look for their custom messages (``api.register_message_renderer``), and their ``custom`` entries drawn in the
transcript (``api.register_entry_renderer``).

Shortcuts are looked up by the editor for each key (after caddie's own bindings it may not take over), so
they work while the editor has focus and stay out of the way of dialogs; keys caddie itself needs are
reserved the way Pi reserves its own (``RESERVED_IDS``). A failing shortcut handler or renderer is reported
in the conversation and never breaks the UI; a renderer that fails falls back to the default look.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from rich.console import RenderableType
from rich.protocol import is_renderable
from rich.text import Text
from textual.strip import Strip

from caddie.ai.messages import CustomMessage
from caddie.modes.interactive.conversation import CustomBlock, ExpandableBlock
from caddie.modes.interactive.keymap import BINDINGS, Keybindings, canonical_key, display_key
from caddie.modes.interactive.transcript_view import Block, TranscriptView

if TYPE_CHECKING:
    from caddie.extensions.api import EntryRendererSpec, ShortcutSpec, ThemeView
    from caddie.extensions.runner import ExtensionRunner
    from caddie.runtime.session import AgentSession
    from caddie.session.entries import CustomEntry, SessionEntry

RESERVED_IDS = frozenset(
    {
        "app.interrupt", "app.clear", "app.exit", "app.suspend", "app.thinking.cycle",
        "app.model.cycleForward", "app.model.cycleBackward", "app.model.select", "app.tools.expand",
        "app.thinking.toggle", "app.editor.external", "app.message.copy", "app.message.followUp",
        "tui.input.submit", "tui.select.confirm", "tui.select.cancel", "tui.input.copy",
        "tui.editor.deleteToLineEnd", "caddie.app.quit",
    }
)  # fmt: skip
"""Pi's editor-global bindings an extension shortcut cannot take over (their keys, as bound now)."""


def resolve_shortcuts(
    runner: ExtensionRunner, keys: Keybindings
) -> tuple[dict[str, ShortcutSpec], list[str]]:
    """The extensions' shortcuts by canonical key, with Pi's rules and warnings: a key of a reserved binding
    is skipped, another bound key is taken over, and of two extensions the later one wins."""
    builtin: dict[str, str] = {}
    reserved: set[str] = set()
    for binding in BINDINGS:
        for key in keys.keys(binding.id):
            spellings = {key, *(k.lower() for k in binding.defaults if canonical_key(k) == key)}
            for spelling in spellings:
                if binding.id in RESERVED_IDS:
                    reserved.add(spelling)
                    builtin[spelling] = binding.id
                elif spelling not in reserved:
                    builtin.setdefault(spelling, binding.id)
    resolved = runner.shortcuts(builtin, reserved)
    return {canonical_key(key): spec for key, spec in resolved.by_key.items()}, resolved.warnings


async def run_shortcut(spec: ShortcutSpec, session: AgentSession, report: Callable[[str], None]) -> None:
    from caddie.extensions.runner import call_handler  # imported with the session, after the first frame

    try:
        await call_handler(spec.handler, session.extensions.context())
    except Exception as e:
        report(f"Extension {spec.source} failed in shortcut {spec.key}: {str(e) or type(e).__name__}")


def hotkey_rows(shortcuts: dict[str, ShortcutSpec]) -> list[tuple[str, str]]:
    """``/hotkeys``: what extensions added."""
    return [
        (display_key(key), f"{spec.description or 'extension shortcut'}  ({spec.source})")
        for key, spec in shortcuts.items()
    ]


class RenderedMessage(ExpandableBlock):
    """A custom message drawn by its extension's renderer (redrawn when Ctrl+O expands tool output)."""

    component = "transcript--custom"
    padding = 1

    def __init__(
        self, renderers: MessageRenderers, message: CustomMessage, drawn: RenderableType, expanded: bool
    ) -> None:
        super().__init__(expanded)
        self.renderers = renderers
        self.message = message
        self.custom_type = message.custom_type
        self._drawn = drawn
        self._drawn_expanded = expanded

    def build(self) -> RenderableType:
        if (
            self.expanded != self._drawn_expanded
        ):  # Ctrl+O: ask the renderer again; keep the old look if it fails
            self._drawn = self.renderers.render(self.message, self.expanded) or self._drawn
            self._drawn_expanded = self.expanded
        return self._drawn


class MessageRenderers:
    """The extensions' renderers for their custom messages (``api.register_message_renderer``)."""

    def __init__(self, runner: Callable[[], ExtensionRunner | None], report: Callable[[str], None]) -> None:
        self.runner = runner
        self.report = report

    def render(self, message: CustomMessage, expanded: bool) -> RenderableType | None:
        """What the extension's renderer draws for ``message``, or None (no renderer, None, or it failed)."""
        runner = self.runner()
        spec = runner.message_renderer(message.custom_type) if runner is not None else None
        if spec is None:
            return None
        from caddie.extensions.api import MessageRenderOptions

        try:
            drawn = spec.renderer(message, MessageRenderOptions(expanded))
        except Exception as e:
            self.report(
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
        self.report(
            f"Extension {spec.source}: the renderer for {message.custom_type} returned "
            f"{type(drawn).__name__}; expected a str, a Rich renderable or None"
        )
        return None

    def widget(self, message: CustomMessage, expanded: bool) -> Block:
        drawn = self.render(message, expanded)
        if drawn is None:
            return CustomBlock(message)
        return RenderedMessage(self, message, drawn, expanded)


class EntryBlock(ExpandableBlock):
    """A ``custom`` entry drawn by its extension's entry renderer (Pi's ``CustomEntryComponent``): asked again
    when Ctrl+O changes ``expanded`` or the theme changes; a renderer that raises is shown as Pi shows it,
    ``[custom_type] renderer failed: …``; one that returns None draws nothing."""

    def __init__(
        self, entry: CustomEntry, spec: EntryRendererSpec, theme: Callable[[], ThemeView], expanded: bool
    ) -> None:
        super().__init__(expanded)
        self.entry = entry
        self.spec = spec
        self.theme = theme
        self._drawn: object = None
        """What the renderer returned (a component, a string, a Rich renderable) or None."""
        self._drawn_as: tuple[bool, str] | None = None
        """The ``expanded`` and theme name ``_drawn`` was made with (None: ask the renderer again)."""
        self._draw_width = 80

    @property
    def custom_type(self) -> str:
        return self.entry.custom_type

    def draw(self) -> object:
        """What the renderer draws now (None: nothing), asking it only when ``expanded`` or the theme changed."""
        theme = self.theme()
        if self._drawn_as == (self.expanded, theme.name):
            return self._drawn
        from caddie.extensions.api import EntryRenderOptions
        from caddie.extensions.ui_components import call_leading

        self._drawn_as = (self.expanded, theme.name)
        self.component, self.padding = "transcript--text", 0
        try:
            self._drawn = call_leading(
                self.spec.renderer, self.entry, EntryRenderOptions(self.expanded), theme
            )
        except Exception as e:  # an extension's renderer must never break the transcript
            self.component, self.padding = "transcript--custom", 1
            reason = str(e) or type(e).__name__
            self._drawn = theme.fg("error", f"[{self.custom_type}] renderer failed: {reason}")
        return self._drawn

    def restyle(self) -> None:
        """Another theme, or the same name with new colours (hot reload): the renderer is asked again, and
        the block re-measured (its lines may differ in number)."""
        super().restyle()
        if self._drawn_as is not None:
            self._drawn_as = None
            self.changed()

    def build(self) -> RenderableType:
        from caddie.modes.interactive.extension_ui import as_renderable

        return as_renderable(self.draw(), max(1, self._draw_width - 2 * self.padding))

    def lines(self, view: TranscriptView, width: int) -> list[Strip]:
        if self.draw() is None:
            return []
        self._draw_width = width
        return super().lines(view, width)

    def estimate(self, width: int) -> int:
        return 0 if self.draw() is None else super().estimate(width)

    def search_text(self) -> str:
        drawn = self._drawn
        return Text.from_ansi(drawn).plain if isinstance(drawn, str) else ""


class ExtensionHooks:
    """What the app takes from extensions: their shortcuts (by canonical key), message and entry renderers."""

    def __init__(self, session: Callable[[], AgentSession | None], report: Callable[[str], None]) -> None:
        self.session = session
        self.report = report
        self.shortcuts: dict[str, ShortcutSpec] = {}
        self.renderers = MessageRenderers(
            lambda: s.extensions if (s := self.session()) is not None else None, report
        )

    def install(self, keys: Keybindings) -> list[str]:
        """Resolve the shortcuts against the keys in force (at start and after /reload); the warnings."""
        session = self.session()
        if session is None:
            return []
        self.shortcuts, warnings = resolve_shortcuts(session.extensions, keys)
        return warnings

    def shortcut(self, key: str) -> ShortcutSpec | None:
        return self.shortcuts.get(canonical_key(key))

    async def run(self, key: str) -> None:
        spec = self.shortcut(key)
        session = self.session()
        if spec is not None and session is not None:
            await run_shortcut(spec, session, self.report)

    def hotkeys(self) -> list[tuple[str, str]]:
        return hotkey_rows(self.shortcuts)

    def message_widget(self, message: CustomMessage, expanded: bool) -> Block:
        return self.renderers.widget(message, expanded)

    def entry_widget(
        self, entry: SessionEntry, expanded: bool, theme: Callable[[], ThemeView]
    ) -> Block | None:
        """The block for a ``custom`` entry whose type an extension draws (Pi's ``addCustomEntryToChat``):
        None for any other entry, an entry without a renderer, or one its renderer draws as nothing."""
        from caddie.session.entries import CustomEntry

        session = self.session()
        if session is None or not isinstance(entry, CustomEntry):
            return None
        spec = session.extensions.entry_renderer(entry.custom_type)
        if spec is None:
            return None
        block = EntryBlock(entry, spec, theme, expanded)
        return None if block.draw() is None else block
