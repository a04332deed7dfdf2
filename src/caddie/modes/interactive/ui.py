"""``ExtensionUI`` for the terminal UI: what ``ctx.ui`` does while caddie runs interactively.

The adapter keeps the state extensions set (statuses, widgets, title, working message) so it survives
before the screen exists and after it closes; the app draws from it. Dialogs are modal screens; with no
screen (before start-up, after quitting) they answer like a headless UI: ``False`` or ``None``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.screen import ModalScreen

from caddie.modes.interactive.dialogs import ConfirmScreen, EditorScreen, InputScreen, SelectScreen

if TYPE_CHECKING:
    from caddie.extensions.api import NotifyLevel, WidgetPlacement

T = TypeVar("T")


class ScreenHost(Protocol):
    """What the adapter needs from the running app."""

    def show_notice(self, message: str, level: NotifyLevel) -> None: ...

    def refresh_statuses(self) -> None: ...

    def refresh_widgets(self) -> None: ...

    def refresh_title(self) -> None: ...

    def refresh_working(self) -> None: ...

    def get_editor_text(self) -> str: ...

    def set_editor_text(self, text: str) -> None: ...

    async def ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any: ...


class TextualUI:
    """See the module docstring."""

    def __init__(self) -> None:
        self._host: ScreenHost | None = None
        self.statuses: dict[str, str] = {}
        self.widgets: dict[str, tuple[list[str], WidgetPlacement]] = {}
        self.title: str | None = None
        self.working_message: str | None = None
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

    def detach(self) -> None:
        if self._host is not None:
            self._editor_text = self._host.get_editor_text()
        self._host = None

    @property
    def attached(self) -> bool:
        return self._host is not None

    def widgets_at(self, placement: WidgetPlacement) -> dict[str, list[str]]:
        return {key: lines for key, (lines, where) in self.widgets.items() if where == placement}

    # -- ExtensionUI --------------------------------------------------------------------------------
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
        self, key: str, lines: Sequence[str] | None, placement: WidgetPlacement = "aboveEditor"
    ) -> None:
        if lines is None:
            self.widgets.pop(key, None)
        else:
            self.widgets[key] = ([str(line) for line in lines], placement)
        if self._host is not None:
            self._host.refresh_widgets()

    def set_title(self, title: str) -> None:
        self.title = title
        if self._host is not None:
            self._host.refresh_title()

    def set_editor_text(self, text: str) -> None:
        self._editor_text = text
        if self._host is not None:
            self._host.set_editor_text(text)

    def get_editor_text(self) -> str:
        return self._host.get_editor_text() if self._host is not None else self._editor_text

    def set_working_message(self, message: str | None) -> None:
        self.working_message = message
        if self._host is not None:
            self._host.refresh_working()

    async def _ask(self, screen: ModalScreen[Any], timeout: float | None, default: Any) -> Any:
        if self._host is None:
            return default
        return await self._host.ask(screen, timeout, default)

    async def confirm(self, title: str, message: str, timeout: float | None = None) -> bool:
        return bool(await self._ask(ConfirmScreen(title, message), timeout, False))

    async def select(self, title: str, options: Sequence[str], timeout: float | None = None) -> str | None:
        if not options:
            return None
        answer = await self._ask(SelectScreen(title, list(options)), timeout, None)
        return answer if isinstance(answer, str) else None

    async def input(
        self, title: str, placeholder: str | None = None, timeout: float | None = None
    ) -> str | None:
        answer = await self._ask(InputScreen(title, placeholder), timeout, None)
        return answer if isinstance(answer, str) else None

    async def editor(self, title: str, prefill: str | None = None) -> str | None:
        answer = await self._ask(EditorScreen(title, prefill), None, None)
        return answer if isinstance(answer, str) else None


async def wait_with_timeout(future: asyncio.Future[T], timeout: float | None) -> T:
    """The future's result; ``TimeoutError`` after ``timeout`` seconds (the future stays pending)."""
    if timeout is None:
        return await future
    return await asyncio.wait_for(asyncio.shield(future), timeout)
