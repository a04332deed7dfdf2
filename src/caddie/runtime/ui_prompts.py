"""Pi's ``ui_prompt_start`` / ``ui_prompt_end``: the ``ctx.ui`` extensions get tells every extension when a
dialog (``select``, ``confirm``, ``input``, ``editor``, ``custom``) makes caddie wait for the user, so a
status integration can say "waiting for you" instead of "working".

Nested or overlapping dialogs count as one wait: ``start`` when the first opens, ``end`` when the last
closes. The events are delivered in the background (Pi does not await them either). Everything else the
UI offers passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from caddie.extensions.api import ExtensionUI, UiPromptEndEvent, UiPromptStartEvent

DIALOGS = frozenset({"select", "confirm", "input", "editor", "custom"})


class WatchedUI:
    """Wraps the mode's ``ExtensionUI``; ``announce(name, event)`` hands an event to the extensions."""

    def __init__(self, ui: ExtensionUI, announce: Callable[[str, Any], None]) -> None:
        self._ui = ui
        self._announce = announce
        self._open = 0

    @property
    def inner(self) -> ExtensionUI:
        return self._ui

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._ui, name)
        if name not in DIALOGS or not callable(target):
            return target

        async def dialog(*args: Any, **kwargs: Any) -> Any:
            title = args[0] if args and isinstance(args[0], str) else kwargs.get("title")
            kind: Any = name
            self._open += 1
            if self._open == 1:
                self._announce("ui_prompt_start", UiPromptStartEvent(kind, title))
            try:
                result = target(*args, **kwargs)
                return await result if isinstance(result, Awaitable) else result
            finally:
                self._open -= 1
                if self._open == 0:
                    self._announce("ui_prompt_end", UiPromptEndEvent(kind, title))

        return dialog
