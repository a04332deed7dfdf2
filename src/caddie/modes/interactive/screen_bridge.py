"""Where ``TextualUI`` (what extensions' ``ctx.ui`` calls do) draws: the footer, the widget areas, the working
line, the title, the header, the editor, dialogs and extensions' components in the running app."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import App
from textual.screen import ModalScreen

if TYPE_CHECKING:
    from caddie.ai.abort import AbortSignal
    from caddie.extensions.api import NotifyLevel
    from caddie.extensions.ui_components import (
        ComponentFactory,
        OverlayHandle,
        OverlayOptionsSource,
        ThemeInfo,
        ThemeResult,
        ThemeView,
    )
    from caddie.models.registry import ModelRegistry
    from caddie.modes.interactive.editor import PromptEditor
    from caddie.modes.interactive.footer import FooterData, StatusFooter, WidgetArea, WorkingLine
    from caddie.modes.interactive.host import Startup, ViewOptions
    from caddie.modes.interactive.keymap import Keybindings
    from caddie.modes.interactive.theme_book import ThemeBook
    from caddie.modes.interactive.ui import TextualUI
    from caddie.runtime.session import AgentSession


def dispose_of(component: Any, report: Callable[[str], None]) -> None:
    """Pi's ``dispose()`` of a component taken off the screen, when it has one; a failure is reported and
    the screen goes on."""
    dispose = getattr(component, "dispose", None)
    if callable(dispose):
        try:
            dispose()
        except Exception as e:  # an extension's cleanup must not break closing its component
            report(f"An extension component's dispose() failed: {type(e).__name__}: {e}")


class BridgeHost(Protocol):
    ui: TextualUI
    editor: PromptEditor
    above: WidgetArea
    below: WidgetArea
    working: WorkingLine
    footer: StatusFooter
    title: str
    view: ViewOptions
    themes: ThemeBook
    keys: Keybindings
    session: AgentSession | None
    registry: ModelRegistry | None
    startup: Startup

    def show_notice(self, message: str, level: NotifyLevel) -> None: ...

    def refresh_footer(self) -> None: ...

    def set_expanded(self, group: str, expanded: bool) -> None: ...

    def apply_view(self) -> None:
        """Draw the transcript again with ``view`` (the hidden-thinking label, the header)."""
        ...

    async def ask(
        self, screen: ModalScreen[Any], timeout: float | None, default: Any, signal: AbortSignal | None = None
    ) -> Any: ...


class ScreenBridge:
    """The app as ``TextualUI``'s ``ScreenHost``."""

    def __init__(self, app: BridgeHost, write_terminal: Callable[[str], None]) -> None:
        self.app = app
        self.write_terminal = write_terminal
        """Send an escape sequence straight to the terminal (nothing in a headless test)."""
        self._footer_made_with: tuple[Any, Any] = (None, None)
        self._footer_data: FooterData | None = None

    def _tui(self) -> Any:
        from caddie.modes.interactive.extension_ui import TerminalView, redraw_components

        app = self.app
        assert isinstance(app, App)
        return TerminalView(app, lambda: redraw_components(app))

    def show_notice(self, message: str, level: NotifyLevel) -> None:
        self.app.show_notice(message, level)

    def refresh_statuses(self) -> None:
        self.app.refresh_footer()

    def refresh_widgets(self) -> None:
        ui = self.app.ui
        above, below = ui.widgets_at("aboveEditor"), ui.widgets_at("belowEditor")
        shown = self.app.above.children or self.app.below.children
        theme = self.theme_view() if above or below or shown else None  # none yet: no theme to make
        self.app.above.show(above, self._tui, theme)
        self.app.below.show(below, self._tui, theme)

    def refresh_title(self) -> None:
        title = self.app.ui.title
        if title is None:
            return
        self.app.title = title
        clean = "".join(ch for ch in title if ch.isprintable())
        self.write_terminal(f"\x1b]0;{clean}\x07")

    def refresh_working(self) -> None:
        ui = self.app.ui
        working = self.app.working
        working.set_message(ui.working_message)
        working.set_indicator(ui.working_visible, ui.working_frames, ui.working_interval_ms)

    def footer_data(self) -> FooterData:
        """Pi's footer data, the third argument of a footer factory (one for the app's life)."""
        from caddie.modes.interactive.footer import FooterData

        if self._footer_data is None:
            app = self.app

            def cwd() -> str:
                return app.session.cwd if app.session is not None else app.startup.request.cwd

            def providers() -> int:
                registry = app.registry
                return len({m.provider for m in registry.available()}) if registry is not None else 0

            def report(message: str) -> None:
                app.show_notice(message, "error")

            assert isinstance(app, App)
            self._footer_data = FooterData(
                cwd, lambda: self.app.ui.statuses, providers, app.set_interval, report
            )
        return self._footer_data

    def refresh_chrome(self) -> None:
        app, ui = self.app, self.app.ui
        changed = (
            app.view.hidden_thinking_label != ui.hidden_thinking_label or app.view.header is not ui.header
        )
        app.view.hidden_thinking_label = ui.hidden_thinking_label
        app.view.header = ui.header
        if ui.tools_expanded is not None and ui.tools_expanded != app.view.tools_expanded:
            app.view.tools_expanded = ui.tools_expanded
            app.set_expanded("tools", ui.tools_expanded)
        ui.tools_expanded = app.view.tools_expanded
        if ui.footer is not None or self._footer_made_with[0] is not None:
            self._refresh_footer_component()
        app.refresh_footer()
        if ui.editor_component is not None or app.editor.custom is not None:
            app.editor.use_component(ui.editor_component, self._tui, self.theme_view(), app.keys)
        if changed:
            app.apply_view()

    def _refresh_footer_component(self) -> None:
        """An extension's footer (``ui.set_footer``), made again when its factory or the theme changed.
        (Without one, nothing here runs: the extension UI modules are not imported before the first frame.)"""
        from caddie.extensions.ui_components import call_leading
        from caddie.modes.interactive.extension_ui import made_by

        app, ui = self.app, self.app.ui
        theme = self.theme_view()
        made_with = (ui.footer, theme.name if theme is not None else None)
        if made_with != self._footer_made_with:  # a new factory or theme: made again
            self._footer_made_with = made_with
            dispose_of(app.footer.component, lambda message: app.show_notice(message, "error"))
            app.footer.use_component(
                made_by(call_leading, ui.footer, self._tui(), theme, self.footer_data())
                if ui.footer is not None
                else None
            )

    def get_editor_text(self) -> str:
        return self.app.editor.text

    def set_editor_text(self, text: str) -> None:
        self.app.editor.set_text(text)

    def paste(self, text: str) -> None:
        self.app.editor.paste(text)

    async def ask(
        self, screen: ModalScreen[Any], timeout: float | None, default: Any, signal: AbortSignal | None = None
    ) -> Any:
        return await self.app.ask(screen, timeout, default, signal)

    async def show_custom(
        self,
        factory: ComponentFactory,
        overlay: bool,
        options: OverlayOptionsSource | None,
        on_handle: Callable[[OverlayHandle], None] | None,
    ) -> Any:
        import inspect

        from caddie.modes.interactive.extension_ui import ComponentView, mount_in_place_of

        app = self.app
        assert isinstance(app, App)
        result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(value: Any = None) -> None:
            if not result.done():
                result.set_result(value)

        component = factory(self._tui(), self.theme_view(), app.keys, done)
        if inspect.isawaitable(component):  # Pi's factories may return a promise of the component
            component = await component
        try:
            if overlay:
                return await self._float(component, options, on_handle, result, done)
            editor = app.editor
            view = ComponentView(component, focusable=True, id="custom")
            mount_in_place_of(editor, view)
            view.focus()
            try:
                return await result
            finally:
                await view.remove()
                editor.display = True
                editor.focus()
        finally:
            dispose_of(component, lambda message: app.show_notice(message, "error"))

    async def _float(
        self,
        component: Any,
        options: OverlayOptionsSource | None,
        on_handle: Callable[[OverlayHandle], None] | None,
        result: asyncio.Future[Any],
        done: Callable[[Any], None],
    ) -> Any:
        """An overlay: a modal screen of its own, or (``non_capturing``) a box over the current screen."""
        from caddie.extensions.ui_components import OverlayOptions
        from caddie.modes.interactive.extension_ui import ComponentView
        from caddie.modes.interactive.overlays import OverlayBox, OverlayControl, OverlayScreen, resolve

        app = self.app
        assert isinstance(app, App)
        source = options if options is not None else OverlayOptions()
        view = ComponentView(component, focusable=True)
        if resolve(source).non_capturing:  # the keys stay where they were until handle.focus()
            box = OverlayBox(view, source)
            await app.screen.mount(box)
            if on_handle is not None:
                on_handle(OverlayControl(box, view, close=lambda: done(None), refocus=app.editor.focus))
            try:
                return await result
            finally:
                had_focus = view.has_focus
                await box.remove()
                if had_focus:
                    app.editor.focus()
        screen = OverlayScreen(view, source)
        await app.push_screen(screen, callback=done)
        if on_handle is not None:
            on_handle(
                OverlayControl(
                    screen.box, view, close=lambda: done(None), refocus=lambda: screen.set_focus(None)
                )
            )
        try:
            return await result
        finally:
            if screen.is_current:
                screen.dismiss(None)

    def theme_view(self, name: str | None = None) -> ThemeView | None:
        from caddie.modes.interactive.extension_ui import theme_view

        themes = self.app.themes
        theme = themes.get(name if name is not None else themes.current)
        return theme_view(theme) if theme is not None else None

    def themes(self) -> list[ThemeInfo]:
        from caddie.extensions.ui_components import ThemeInfo

        book = self.app.themes
        return [ThemeInfo(n, str(book.paths[n]) if book.paths.get(n) else None) for n in book.names()]

    def use_theme(self, theme: str | ThemeView) -> ThemeResult:
        from caddie.extensions.ui_components import ThemeResult

        book = self.app.themes
        if not isinstance(theme, str):
            book.add_view(theme)
            theme = theme.name
        if not book.use(theme):
            return ThemeResult(False, f"No theme called {theme!r}; the themes are: {', '.join(book.names())}")
        self.refresh_widgets()
        self.refresh_chrome()
        return ThemeResult(True)
