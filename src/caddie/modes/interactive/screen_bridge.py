"""Where ``TextualUI`` (what extensions' ``ctx.ui`` calls do) draws: the footer, the widget areas, the working
line, the title, the editor and dialogs of the running app."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import ModalScreen

if TYPE_CHECKING:
    from caddie.extensions.api import NotifyLevel
    from caddie.modes.interactive.editor import PromptEditor
    from caddie.modes.interactive.footer import WidgetArea, WorkingLine
    from caddie.modes.interactive.ui import TextualUI


class BridgeHost(Protocol):
    ui: TextualUI
    editor: PromptEditor
    above: WidgetArea
    below: WidgetArea
    working: WorkingLine
    title: str

    def show_notice(self, message: str, level: NotifyLevel) -> None: ...

    def refresh_footer(self) -> None: ...

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...


class ScreenBridge:
    """The app as ``TextualUI``'s ``ScreenHost``."""

    def __init__(self, app: BridgeHost, write_terminal: Callable[[str], None]) -> None:
        self.app = app
        self.write_terminal = write_terminal
        """Send an escape sequence straight to the terminal (nothing in a headless test)."""

    def show_notice(self, message: str, level: NotifyLevel) -> None:
        self.app.show_notice(message, level)

    def refresh_statuses(self) -> None:
        self.app.refresh_footer()

    def refresh_widgets(self) -> None:
        ui = self.app.ui
        self.app.above.show(ui.widgets_at("aboveEditor"))
        self.app.below.show(ui.widgets_at("belowEditor"))

    def refresh_title(self) -> None:
        title = self.app.ui.title
        if title is None:
            return
        self.app.title = title
        clean = "".join(ch for ch in title if ch.isprintable())
        self.write_terminal(f"\x1b]0;{clean}\x07")

    def refresh_working(self) -> None:
        self.app.working.set_message(self.app.ui.working_message)

    def get_editor_text(self) -> str:
        return self.app.editor.text

    def set_editor_text(self, text: str) -> None:
        self.app.editor.set_text(text)

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any:
        return await self.app.ask(screen, timeout, default)
