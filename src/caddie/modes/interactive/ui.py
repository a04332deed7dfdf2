"""``ExtensionUI`` for the terminal UI: what ``ctx.ui`` does while caddie runs interactively.

The adapter keeps the state extensions set (statuses, widgets, title, working line, footer and header
components, the editor component, autocomplete providers, key hooks) so it survives before the screen
exists and after it closes; the app draws from it (screen_bridge.py, extension_ui.py). Dialogs are modal
screens with a live countdown when they have a timeout, dismissed by an ``AbortSignal`` too; with no screen
(before start-up, after quitting) they answer like a headless UI: ``False`` or ``None``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.screen import ModalScreen

if TYPE_CHECKING:
    from caddie.ai.abort import AbortSignal
    from caddie.extensions.api import NotifyLevel, WidgetPlacement
    from caddie.extensions.ui_components import (
        AutocompleteFactory,
        ComponentFactory,
        OverlayHandle,
        OverlayOptionsSource,
        TerminalInputHandler,
        ThemeInfo,
        ThemeResult,
        ThemeView,
    )

T = TypeVar("T")

WidgetContent = list[str] | Callable[..., Any]
"""Lines, or a component factory ``(tui, theme) -> component``."""


class ScreenHost(Protocol):
    """What the adapter needs from the running app."""

    def show_notice(self, message: str, level: NotifyLevel) -> None: ...

    def refresh_statuses(self) -> None: ...

    def refresh_widgets(self) -> None: ...

    def refresh_title(self) -> None: ...

    def refresh_working(self) -> None: ...

    def refresh_chrome(self) -> None:
        """Footer, header, editor component, hidden-thinking label and tool expansion, from the adapter."""
        ...

    def get_editor_text(self) -> str: ...

    def set_editor_text(self, text: str) -> None: ...

    def paste(self, text: str) -> None: ...

    async def ask(
        self, screen: ModalScreen[Any], timeout: float | None, default: Any, signal: AbortSignal | None = None
    ) -> Any: ...

    async def show_custom(
        self,
        factory: ComponentFactory,
        overlay: bool,
        options: OverlayOptionsSource | None,
        on_handle: Callable[[OverlayHandle], None] | None,
    ) -> Any: ...

    def theme_view(self, name: str | None = None) -> ThemeView | None:
        """The current theme (``name`` None) or the one called ``name``, as extensions draw with it."""
        ...

    def themes(self) -> list[ThemeInfo]: ...

    def use_theme(self, theme: str | ThemeView) -> ThemeResult: ...


class TextualUI:
    """See the module docstring."""

    FEATURES = frozenset(
        {
            "dialogs", "custom", "overlay", "widget_component", "footer", "header", "editor_component",
            "autocomplete", "terminal_input", "working_indicator", "hidden_thinking_label", "paste", "themes",
            "tools_expanded", "markdown_transformers",
        }
    )  # fmt: skip

    def __init__(self) -> None:
        self._host: ScreenHost | None = None
        self.statuses: dict[str, str] = {}
        self.widgets: dict[str, tuple[WidgetContent, WidgetPlacement]] = {}
        self.title: str | None = None
        self.working_message: str | None = None
        self.working_visible = True
        self.working_frames: list[str] | None = None
        """``ui.set_working_indicator`` frames (None: caddie's spinner; ``[]``: none)."""
        self.working_interval_ms: int | None = None
        self.hidden_thinking_label: str | None = None
        self.footer: ComponentFactory | None = None
        self.header: ComponentFactory | None = None
        self.editor_component: ComponentFactory | None = None
        self.autocomplete: list[AutocompleteFactory] = []
        self.key_hooks: list[TerminalInputHandler] = []
        self.tools_expanded: bool | None = None
        """Set by ``ui.set_tools_expanded`` until the app applies it (then mirrored from the app)."""
        self._editor_text = ""
        self._notices: list[tuple[str, NotifyLevel]] = []

    # -- wiring -------------------------------------------------------------------------------------
    def attach(self, host: ScreenHost) -> None:
        self._host = host
        if self._editor_text:
            host.set_editor_text(self._editor_text)
        for message, level in self._notices:
            host.show_notice(message, level)
        self._notices.clear()
        host.refresh_statuses()
        host.refresh_widgets()
        host.refresh_title()
        host.refresh_working()
        host.refresh_chrome()

    def detach(self) -> None:
        if self._host is not None:
            self._editor_text = self._host.get_editor_text()
        self._host = None

    @property
    def attached(self) -> bool:
        return self._host is not None

    def widgets_at(self, placement: WidgetPlacement) -> dict[str, WidgetContent]:
        return {key: content for key, (content, where) in self.widgets.items() if where == placement}

    def supports(self, feature: str) -> bool:
        return feature in self.FEATURES

    # -- lines, statuses, the working line ----------------------------------------------------------
    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        if self._host is None:
            self._notices.append((message, level))
        else:
            self._host.show_notice(message, level)

    def set_status(self, key: str, text: str | None) -> None:
        if text is None:
            self.statuses.pop(key, None)
        else:
            self.statuses[key] = text
        if self._host is not None:
            self._host.refresh_statuses()

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | ComponentFactory | None,
        placement: WidgetPlacement = "aboveEditor",
    ) -> None:
        if lines is None:
            self.widgets.pop(key, None)
        elif callable(lines):
            self.widgets[key] = (lines, placement)
        else:
            self.widgets[key] = ([str(line) for line in lines], placement)
        if self._host is not None:
            self._host.refresh_widgets()

    def set_title(self, title: str) -> None:
        self.title = title
        if self._host is not None:
            self._host.refresh_title()

    def set_working_message(self, message: str | None) -> None:
        self.working_message = message
        if self._host is not None:
            self._host.refresh_working()

    def set_working_visible(self, visible: bool) -> None:
        self.working_visible = visible
        if self._host is not None:
            self._host.refresh_working()

    def set_working_indicator(
        self, frames: Sequence[str] | None = None, interval_ms: int | None = None
    ) -> None:
        self.working_frames = None if frames is None else [str(f) for f in frames]
        self.working_interval_ms = interval_ms
        if self._host is not None:
            self._host.refresh_working()

    # -- components ---------------------------------------------------------------------------------
    def set_hidden_thinking_label(self, label: str | None) -> None:
        self.hidden_thinking_label = label
        self._chrome()

    def set_footer(self, factory: ComponentFactory | None) -> None:
        self.footer = factory
        self._chrome()

    def set_header(self, factory: ComponentFactory | None) -> None:
        self.header = factory
        self._chrome()

    def set_editor_component(self, factory: ComponentFactory | None) -> None:
        self.editor_component = factory
        self._chrome()

    def get_editor_component(self) -> ComponentFactory | None:
        return self.editor_component

    def get_tools_expanded(self) -> bool:
        return bool(self.tools_expanded)

    def set_tools_expanded(self, expanded: bool) -> None:
        self.tools_expanded = expanded
        self._chrome()

    def _chrome(self) -> None:
        if self._host is not None:
            self._host.refresh_chrome()

    async def custom(
        self,
        factory: ComponentFactory,
        *,
        overlay: bool = False,
        overlay_options: OverlayOptionsSource | None = None,
        on_handle: Callable[[OverlayHandle], None] | None = None,
    ) -> Any:
        if self._host is None:
            return None
        return await self._host.show_custom(factory, overlay, overlay_options, on_handle)

    def add_autocomplete_provider(self, factory: AutocompleteFactory) -> None:
        self.autocomplete.append(factory)

    def on_terminal_input(self, handler: TerminalInputHandler) -> Callable[[], None]:
        self.key_hooks.append(handler)

        def stop() -> None:
            if handler in self.key_hooks:
                self.key_hooks.remove(handler)

        return stop

    # -- the editor ---------------------------------------------------------------------------------
    def set_editor_text(self, text: str) -> None:
        self._editor_text = text
        if self._host is not None:
            self._host.set_editor_text(text)

    def get_editor_text(self) -> str:
        return self._host.get_editor_text() if self._host is not None else self._editor_text

    def paste_to_editor(self, text: str) -> None:
        if self._host is None:
            self._editor_text += text
        else:
            self._host.paste(text)

    # -- themes -------------------------------------------------------------------------------------
    @property
    def theme(self) -> ThemeView:
        from caddie.extensions.ui_components import DEFAULT_THEME

        view = self._host.theme_view() if self._host is not None else None
        return view or DEFAULT_THEME

    def get_all_themes(self) -> list[ThemeInfo]:
        return self._host.themes() if self._host is not None else []

    def get_theme(self, name: str) -> ThemeView | None:
        return self._host.theme_view(name) if self._host is not None else None

    def set_theme(self, theme: str | ThemeView) -> ThemeResult:
        from caddie.extensions.ui_components import ThemeResult

        if self._host is None:
            return ThemeResult(False, "The screen is not open yet; set the theme in session_start or later")
        return self._host.use_theme(theme)

    # -- dialogs ------------------------------------------------------------------------------------
    async def _ask(
        self, screen: ModalScreen[Any], timeout: float | None, default: Any, signal: AbortSignal | None
    ) -> Any:
        if self._host is None or (signal is not None and signal.aborted):
            return default
        return await self._host.ask(screen, timeout, default, signal)

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: AbortSignal | None = None
    ) -> bool:
        from caddie.modes.interactive.dialogs import ConfirmScreen  # imported after the first frame

        return bool(await self._ask(ConfirmScreen(title, message), timeout, False, signal))

    async def select(
        self,
        title: str,
        options: Sequence[str],
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        if not options:
            return None
        from caddie.modes.interactive.dialogs import SelectScreen  # imported after the first frame

        answer = await self._ask(SelectScreen(title, list(options)), timeout, None, signal)
        return answer if isinstance(answer, str) else None

    async def input(
        self,
        title: str,
        placeholder: str | None = None,
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        from caddie.modes.interactive.dialogs import InputScreen  # imported after the first frame

        answer = await self._ask(InputScreen(title, placeholder), timeout, None, signal)
        return answer if isinstance(answer, str) else None

    async def editor(
        self, title: str, prefill: str | None = None, *, signal: AbortSignal | None = None
    ) -> str | None:
        from caddie.modes.interactive.dialogs import EditorScreen  # imported after the first frame

        answer = await self._ask(EditorScreen(title, prefill), None, None, signal)
        return answer if isinstance(answer, str) else None


async def wait_with_timeout(future: asyncio.Future[T], timeout: float | None) -> T:
    """The future's result; ``TimeoutError`` after ``timeout`` seconds (the future stays pending)."""
    if timeout is None:
        return await future
    return await asyncio.wait_for(asyncio.shield(future), timeout)
