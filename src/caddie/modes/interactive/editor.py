"""The prompt editor: multi-line input with history, slash-command completion and Pi's Enter keys.

Enter sends; Shift+Enter and Ctrl+J insert a newline; Alt+Enter inserts a newline when idle and queues a
follow-up while the agent works (the app decides, the editor only reports which key it was). Up at the
first line and Down at the last line walk the prompt history.

Emacs-style editing as in Pi's editor: Ctrl+W / Alt+Backspace, Alt+D, Ctrl+U and Ctrl+K delete into a
kill ring (consecutive kills join into one entry), Ctrl+Y yanks the latest entry and Alt+Y, right after a
yank, replaces it with the one before. Ctrl+- undoes (Ctrl+Z suspends caddie, as in Pi). ``@`` followed
by part of a name offers the project's files (fuzzy); Tab completes a path in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.text import Text
from textual import events
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from caddie.modes.interactive.commands import CommandInfo, Completion, complete
from caddie.modes.interactive.files import FileIndex, common_prefix, complete_path, fuzzy_filter

SubmitKind = Literal["enter", "alt"]
NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "shift+\r"})
KILL_RING_SIZE = 60
APP_KEYS = {
    "pageup": "pageup", "pagedown": "pagedown", "ctrl+home": "ctrl+home", "ctrl+end": "ctrl+end",
    "alt+up": "alt+up", "shift+tab": "shift+tab", "ctrl+z": "suspend", "ctrl+g": "external_editor",
    "ctrl+x": "copy",
}  # fmt: skip
"""Keys the editor hands to the app, and the action name it reports."""
UNDO_KEYS = frozenset({"ctrl+underscore", "ctrl+minus"})
"""Ctrl+- (terminals send it as Ctrl+_)."""
KILL_KEYS = frozenset(
    {"ctrl+w", "alt+backspace", "ctrl+backspace", "alt+d", "alt+delete", "ctrl+u", "ctrl+k"}
)
_BACKWARD_WORD = frozenset({"ctrl+w", "alt+backspace", "ctrl+backspace"})


@dataclass
class KillRing:
    """Text deleted by the kill keys, newest last (Pi's kill ring)."""

    entries: list[str] = field(default_factory=list)

    def add(self, text: str, *, backward: bool, join: bool) -> None:
        """Record a kill; ``join`` (the previous key was a kill too) extends the newest entry instead."""
        if not text:
            return
        if join and self.entries:
            self.entries[-1] = text + self.entries[-1] if backward else self.entries[-1] + text
        else:
            self.entries.append(text)
            del self.entries[:-KILL_RING_SIZE]

    def latest(self) -> str | None:
        return self.entries[-1] if self.entries else None

    def rotate(self) -> str | None:
        """Make the entry before the newest the newest (for Alt+Y) and return it."""
        if len(self.entries) > 1:
            self.entries.insert(0, self.entries.pop())
        return self.latest()


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
        self.for_text: str | None = None
        """The editor text the suggestions were made for (keys can arrive faster than they follow)."""

    @property
    def is_open(self) -> bool:
        return self.has_class("-visible") and bool(self.completions)

    def show(self, completions: list[Completion], for_text: str | None = None) -> None:
        self.completions = completions
        self.for_text = for_text
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


def _index_of(text: str, location: tuple[int, int]) -> int:
    row, col = location
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[:row]) + col


def _location_of(text: str, index: int) -> tuple[int, int]:
    before = text[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


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
        cwd: Callable[[], str] | None = None,
    ) -> None:
        super().__init__(
            "", id="editor", soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
            highlight_cursor_line=False, placeholder="Type a message, / for commands, ! for shell, @ for files",
        )  # fmt: skip
        self.menu = menu
        self.commands = commands
        self.alt_enter_submits = alt_enter_submits
        self.prompt_history = history or History()
        self.cwd: Callable[[], str] = cwd or (lambda: ".")
        self.kill_ring = KillRing()
        self.file_index: FileIndex | None = None
        self._last_kind: str | None = None
        """``kill`` or ``yank`` when the previous key was one (kills join; Alt+Y follows a yank)."""
        self._yanked: tuple[tuple[int, int], tuple[int, int]] | None = None
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
            self.menu.show(complete(text, self.commands()), text)
        elif self._at_token() is not None:
            self.run_worker(self._offer_files(text), group="files", exclusive=True, exit_on_error=False)
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
        if completion.kind == "path":
            self._apply(completion.value, completion.cursor)
            self.menu.hide()
            if completion.value[: completion.cursor].endswith("/"):
                self.refresh_completions()  # a directory: offer what is inside
            return
        value = completion.value
        if trailing_space and " " not in value:
            value += " "
        self.set_text(value, complete=trailing_space)
        self.menu.hide()

    # -- @ files and Tab paths ----------------------------------------------------------------------
    def _token(self) -> tuple[int, str]:
        """The whitespace-free word that ends at the cursor, and where it starts."""
        offset = _index_of(self.text, self.cursor_location)
        before = self.text[:offset]
        start = max(before.rfind(" "), before.rfind("\n"), before.rfind("\t")) + 1
        return start, before[start:]

    def _at_token(self) -> str | None:
        _, token = self._token()
        return token[1:] if token.startswith("@") else None

    def _replacing_token(self, replacement: str) -> tuple[str, int]:
        start, token = self._token()
        text = self.text
        return text[:start] + replacement + text[start + len(token) :], start + len(replacement)

    def _apply(self, value: str, cursor: int | None) -> None:
        self._quiet_text = value
        self.load_text(value)
        self.move_cursor(_location_of(value, len(value) if cursor is None else cursor))

    async def _offer_files(self, text: str) -> None:
        query = self._at_token()
        if query is None:
            return
        if self.file_index is None or self.file_index.root != self.cwd():
            self.file_index = FileIndex(self.cwd())
        files = await self.file_index.files()  # fd or a walk, never on the event loop
        if self.text != text or self._at_token() != query:
            return  # typed on meanwhile: a newer worker answers
        completions = []
        for path in fuzzy_filter(query, files):
            value, cursor = self._replacing_token("@" + path + ("" if path.endswith("/") else " "))
            completions.append(Completion(value, path, "", cursor, "path"))
        self.menu.show(completions, text)

    def complete_path_at_cursor(self) -> None:
        """Tab outside a command: complete the path before the cursor (the shared part; a menu if several)."""
        _, token = self._token()
        prefix = "@" if token.startswith("@") else ""
        typed = token[len(prefix) :]
        options = complete_path(typed, self.cwd())
        if not options:
            return

        def replacement(option: str) -> str:
            return prefix + option + ("" if option.endswith("/") else " ")

        if len(options) == 1:
            self._apply(*self._replacing_token(replacement(options[0])))
            return
        shared = common_prefix(options)
        if len(shared) > len(typed):
            self._apply(*self._replacing_token(prefix + shared))
        completions = []
        for option in options[:50]:
            value, cursor = self._replacing_token(replacement(option))
            name = option.rstrip("/").rsplit("/", 1)[-1] + ("/" if option.endswith("/") else "")
            completions.append(Completion(value, name, "", cursor, "path"))
        self.menu.show(completions, self.text)

    # -- kill ring ----------------------------------------------------------------------------------
    def _kill_range(self, key: str) -> tuple[tuple[int, int], tuple[int, int]]:
        start, end = self.selection
        if start != end:
            return (start, end) if start <= end else (end, start)
        row, col = self.cursor_location
        line = self.document.get_line(row)
        if key in _BACKWARD_WORD:
            return self.get_cursor_word_left_location(), (row, col)
        if key in ("alt+d", "alt+delete"):
            return (row, col), self.get_cursor_word_right_location()
        if key == "ctrl+u":
            if col == 0 and row > 0:  # at the start of a line: join it to the one above
                return (row - 1, len(self.document.get_line(row - 1))), (row, 0)
            return (row, 0), (row, col)
        if col >= len(line) and row + 1 < self.document.line_count:  # ctrl+k at the end: join the next
            return (row, col), (row + 1, 0)
        return (row, col), (row, len(line))

    def kill(self, key: str, join: bool) -> None:
        start, end = self._kill_range(key)
        killed = self.get_text_range(start, end)
        if killed:
            self.delete(start, end)
            backward = key in _BACKWARD_WORD or key == "ctrl+u"
            self.kill_ring.add(killed, backward=backward, join=join)

    def yank(self, pop: bool) -> bool:
        """Ctrl+Y (``pop``: Alt+Y right after a yank); False when there is nothing to do."""
        if pop:
            if self._yanked is None:
                return False
            text = self.kill_ring.rotate()
            start, end = self._yanked
        else:
            text = self.kill_ring.latest()
            start, end = self.selection
        if text is None:
            return False
        result = self.replace(text, start, end)
        self._yanked = (start, result.end_location)
        return True

    # -- keys ---------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        menu = self.menu.is_open
        previous, self._last_kind = self._last_kind, None
        if menu and key in ("enter", "tab") and self.menu.for_text != self.text:
            # Typed (or pasted) faster than the menu followed: decide on the text as it is now, never on
            # suggestions made for an earlier text ("/session⏎" in one burst must not run /model).
            self.menu.hide()
            if self.text.startswith("/") and "\n" not in self.text:
                self.refresh_completions()
            menu = self.menu.is_open
        chosen = self.menu.current() if menu else None
        if key == "enter" and chosen is not None and chosen.kind == "path":
            self._accept(chosen, trailing_space=False)
        elif key == "enter":
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
            if chosen is not None:
                self._accept(chosen, trailing_space=True)
            elif self.text.startswith("/") and "\n" not in self.text and " " not in self.text:
                self.refresh_completions()
            else:
                self.complete_path_at_cursor()
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
        elif key in APP_KEYS or (key == "ctrl+d" and not self.text):
            self.post_message(self.Action(APP_KEYS.get(key, key)))
        elif key in KILL_KEYS:
            self.kill(key, join=previous == "kill")
            self._last_kind = "kill"
        elif key == "ctrl+y" or (key == "alt+y" and previous == "yank"):
            if self.yank(pop=key == "alt+y"):
                self._last_kind = "yank"
        elif key == "alt+y":
            pass  # Alt+Y only means something right after a yank
        elif key in UNDO_KEYS:
            self.action_undo()
        elif key in ("alt+b", "ctrl+b"):
            self.action_cursor_word_left() if key == "alt+b" else self.action_cursor_left()
        elif key in ("alt+f", "ctrl+f"):
            self.action_cursor_word_right() if key == "alt+f" else self.action_cursor_right()
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
