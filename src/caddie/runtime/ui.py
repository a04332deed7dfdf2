"""The extension UI for modes without a screen: dialogs answer "no", notices go to the event stream."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from caddie.ai.abort import AbortSignal
from caddie.extensions.api import ComponentFactory, NotifyLevel, UnavailableUI, WidgetPlacement


class HeadlessUI(UnavailableUI):
    """``select``/``input``/``editor`` return None, ``confirm`` returns False, the rest records or forwards;
    the terminal-only calls answer "unavailable" (``UnavailableUI``)."""

    def __init__(self, on_notify: Callable[[str, NotifyLevel], None] | None = None) -> None:
        self._on_notify = on_notify
        self.statuses: dict[str, str] = {}
        self.widgets: dict[str, tuple[list[str], WidgetPlacement]] = {}
        self.title: str | None = None
        self.editor_text = ""

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        if self._on_notify is not None:
            self._on_notify(message, level)

    def set_status(self, key: str, text: str | None) -> None:
        if text is None:
            self.statuses.pop(key, None)
        else:
            self.statuses[key] = text

    def set_widget(
        self,
        key: str,
        lines: Sequence[str] | ComponentFactory | None,
        placement: WidgetPlacement = "aboveEditor",
    ) -> None:
        if lines is None:
            self.widgets.pop(key, None)
        elif not callable(lines):  # a component factory needs a terminal: ignored, as Pi's RPC mode does
            self.widgets[key] = (list(lines), placement)

    def set_title(self, title: str) -> None:
        self.title = title

    def set_editor_text(self, text: str) -> None:
        self.editor_text = text

    def get_editor_text(self) -> str:
        return self.editor_text

    def set_working_message(self, message: str | None) -> None:
        pass

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: AbortSignal | None = None
    ) -> bool:
        return False

    async def select(
        self,
        title: str,
        options: Sequence[str],
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        return None

    async def input(
        self,
        title: str,
        placeholder: str | None = None,
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        return None

    async def editor(
        self, title: str, prefill: str | None = None, *, signal: AbortSignal | None = None
    ) -> str | None:
        return None
