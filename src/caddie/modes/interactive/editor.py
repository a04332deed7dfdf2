"""The prompt editor: multi-line input with history, slash-command completion and Pi's Enter keys.

Enter sends; Shift+Enter and Ctrl+J insert a newline; Alt+Enter inserts a newline when idle and queues a
follow-up while the agent works (the app decides, the editor only reports which key it was). Up at the
first line and Down at the last line walk the prompt history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from caddie.modes.interactive.commands import CommandInfo, Completion, complete

SubmitKind = Literal["enter", "alt"]
NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "shift+\r"})


class History:
    """Prompt history, newest last; browsing keeps the unsent draft to come back to."""

    def __init__(self, entries: Sequence[str] = (), limit: int = 500) -> None:
        self.entries: list[str] = [e for e in entries if e.strip()][-limit:]
        self.limit = limit
        self._index: int | None = None
        self._draft = ""

    @property
    def browsing(self) -> bool:
        return self._index is not None

    def add(self, text: str) -> None:
        if text.strip() and (not self.entries or self.entries[-1] != text):
            self.entries.append(text)
            del self.entries[: -self.limit]
        self.reset()

    def reset(self) -> None:
        self._index = None
        self._draft = ""

    def previous(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self.entries) - 1
        elif self._index > 0:
            self._index -= 1
        else:
            return None
        return self.entries[self._index]

    def next(self) -> str | None:
        if self._index is None:
            return None
        if self._index < len(self.entries) - 1:
            self._index += 1
            return self.entries[self._index]
        draft = self._draft
        self.reset()
        return draft


class CompletionMenu(OptionList):
    """Command (or argument) suggestions above the editor; never takes focus."""

    DEFAULT_CSS = """
    CompletionMenu { height: auto; max-height: 8; border: none; padding: 0 1; display: none; }
    CompletionMenu.-visible { display: block; }
    """
    can_focus = False

    def __init__(self) -> None:
        super().__init__(id="completion")
        self.completions: list[Completion] = []

    @property
    def is_open(self) -> bool:
        return self.has_class("-visible") and bool(self.completions)

    def show(self, completions: list[Completion]) -> None:
        self.completions = completions
        options = []
        for c in completions:
            prompt = Text(c.label, style="bold")
            if c.description:
                prompt.append("  " + c.description, style="dim")
            prompt.truncate(max(20, self.size.width - 2 if self.size.width else 200), overflow="ellipsis")
            options.append(Option(prompt))
        self.set_options(options)
        self.set_class(bool(completions), "-visible")
        if completions:
            self.highlighted = 0

    def hide(self) -> None:
        self.completions = []
        self.remove_class("-visible")

    def current(self) -> Completion | None:
        if not self.is_open or self.highlighted is None:
            return None
        return self.completions[self.highlighted] if self.highlighted < len(self.completions) else None

    def move(self, step: int) -> None:
        if self.completions:
            self.highlighted = ((self.highlighted or 0) + step) % len(self.completions)


class PromptEditor(TextArea):
    """The editor at the bottom of the screen."""

    DEFAULT_CSS = """
    PromptEditor {
        height: auto; min-height: 1; max-height: 12;
        border: none; border-top: solid $primary-darken-2; border-bottom: solid $primary-darken-2;
        padding: 0 1; background: $background;
    }
    PromptEditor:focus { border: none; border-top: solid $primary; border-bottom: solid $primary; }
    """

    class Submitted(Message):
        def __init__(self, editor: PromptEditor, text: str, kind: SubmitKind) -> None:
            super().__init__()
            self.editor = editor
            self.text = text
            self.kind = kind

    class Action(Message):
        """A key the editor does not handle itself but the app should (``dequeue``, ``page_up``...)."""

        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    def __init__(
        self,
        menu: CompletionMenu,
        commands: Callable[[], Sequence[CommandInfo]],
        alt_enter_submits: Callable[[], bool],
        history: History | None = None,
    ) -> None:
        super().__init__(
            "", id="editor", soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
            highlight_cursor_line=False, placeholder="Type a message, / for commands, ! for shell",
        )  # fmt: skip
        self.menu = menu
        self.commands = commands
        self.alt_enter_submits = alt_enter_submits
        self.prompt_history = history or History()
        self._quiet_text: str | None = None
        """Text set by code, not typed: its change event must not open completions."""

    # -- text ---------------------------------------------------------------------------------------
    def set_text(self, text: str, complete: bool = False) -> None:
        """Replace the text and put the cursor at its end (``complete``: then offer completions for it)."""
        self._quiet_text = None if complete else text
        self.load_text(text)
        self.move_cursor(self.document.end)

    def insert_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end)

    def refresh_completions(self) -> None:
        text = self.text
        if text.startswith("/") and "\n" not in text:
            self.menu.show(complete(text, self.commands()))
        else:
            self.menu.hide()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if event.text_area is not self:
            return
        if self._quiet_text is not None and self.text == self._quiet_text:
            self._quiet_text = None
            self.menu.hide()
            return
        self._quiet_text = None
        self.refresh_completions()

    def _accept(self, completion: Completion, trailing_space: bool) -> None:
        value = completion.value
        if trailing_space and " " not in value:
            value += " "
        self.set_text(value, complete=trailing_space)
        self.menu.hide()

    # -- keys ---------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        menu = self.menu.is_open
        if key == "enter":
            chosen = self.menu.current() if menu else None
            if chosen is not None and chosen.value != self.text.strip():
                self._accept(chosen, trailing_space=False)
            self.menu.hide()
            self.post_message(self.Submitted(self, self.text, "enter"))
        elif key == "alt+enter":
            if self.alt_enter_submits():
                self.post_message(self.Submitted(self, self.text, "alt"))
            else:
                self.insert_newline()
        elif key in NEWLINE_KEYS:
            self.insert_newline()
        elif key == "tab":
            chosen = self.menu.current() if menu else None
            if chosen is not None:
                self._accept(chosen, trailing_space=True)
            elif self.text.startswith("/"):
                self.refresh_completions()
        elif key == "escape" and menu:
            self.menu.hide()
        elif key in ("up", "down") and menu:
            self.menu.move(-1 if key == "up" else 1)
        elif key == "up" and self.cursor_location[0] == 0:
            recalled = self.prompt_history.previous(self.text)
            if recalled is not None:
                self.set_text(recalled)
        elif (
            key == "down"
            and self.cursor_location[0] == self.document.line_count - 1
            and self.prompt_history.browsing
        ):
            recalled = self.prompt_history.next()
            if recalled is not None:
                self.set_text(recalled)
        elif key in ("pageup", "pagedown", "ctrl+home", "ctrl+end", "alt+up", "shift+tab") or (key == "ctrl+d" and not self.text):
            self.post_message(self.Action(key))
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
