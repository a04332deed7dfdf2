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

import asyncio
from collections.abc import Callable, Collection, Sequence
from typing import Any, Literal

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from caddie.modes.interactive.commands import CommandInfo, Completion, complete
from caddie.modes.interactive.completion_menu import CompletionMenu
from caddie.modes.interactive.editing import History, KillRing, index_of, jump_target, location_of
from caddie.modes.interactive.files import FileIndex, common_prefix, complete_path, fuzzy_filter
from caddie.modes.interactive.key_routing import EXTENSION, EditorState, route
from caddie.modes.interactive.keymap import Keybindings
from caddie.modes.interactive.pastes import PasteBook, clean_paste

__all__ = ["CompletionMenu", "History", "KillRing", "PromptEditor"]

SubmitKind = Literal["enter", "alt"]
NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j", "shift+\r"})
"""Keys that insert a newline in the dialogs' editors."""
KILLS = frozenset(
    {"tui.editor.deleteWordBackward", "tui.editor.deleteWordForward", "tui.editor.deleteToLineStart",
     "tui.editor.deleteToLineEnd"}
)  # fmt: skip
MOTIONS = {
    "tui.editor.cursorLeft": "cursor_left", "tui.editor.cursorRight": "cursor_right",
    "tui.editor.cursorWordLeft": "cursor_word_left", "tui.editor.cursorWordRight": "cursor_word_right",
    "tui.editor.cursorLineStart": "cursor_line_start", "tui.editor.cursorLineEnd": "cursor_line_end",
    "tui.editor.pageUp": "cursor_page_up", "tui.editor.pageDown": "cursor_page_down",
    "tui.editor.deleteCharBackward": "delete_left", "tui.editor.deleteCharForward": "delete_right",
}  # fmt: skip
"""Editor bindings that are one of TextArea's own actions."""


class _BuiltinProvider:
    """The bottom of the providers' stack: answers nothing, so caddie's own completions show."""

    def get_suggestions(self, lines: list[str], line: int, column: int) -> None:
        return None


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
        """A key bound to an application or transcript binding (``app.model.select``, ``tui.altScreen.top``)."""

        def __init__(self, binding_id: str) -> None:
            super().__init__()
            self.binding_id = binding_id

    class Shortcut(Message):
        """A key an extension registered (``api.register_shortcut``)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class Copy(Message):
        """Ctrl+C (``tui.input.copy``) with text selected: copy it."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(
        self,
        menu: CompletionMenu,
        commands: Callable[[], Sequence[CommandInfo]],
        alt_enter_submits: Callable[[], bool],
        history: History | None = None,
        cwd: Callable[[], str] | None = None,
        keys: Callable[[], Keybindings] | None = None,
        shortcuts: Callable[[], Collection[str]] | None = None,
        autocomplete: Callable[[], Sequence[Any]] | None = None,
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
        self.keys: Callable[[], Keybindings] = keys or Keybindings
        """The key bindings in force (keybindings.json, read again on /reload)."""
        self.shortcuts: Callable[[], Collection[str]] = shortcuts or (lambda: ())
        """The (canonical) keys extensions registered shortcuts for."""
        self._jumping: Literal["forward", "backward"] | None = None
        self.custom: Any = None
        """``ui.set_editor_component``: the extension's editor (a ``CustomEditor``) that sees keys first."""
        self._custom_factory: Any = None
        self._defaulted = False
        self._handling: Any = None
        self._forwarded: list[Any] = []
        self.autocomplete: Callable[[], Sequence[Any]] = autocomplete or (lambda: ())
        """``ui.add_autocomplete_provider`` factories, in the order they were added."""
        self.kill_ring = KillRing()
        self.pastes = PasteBook()
        """Large pastes shown as ``[paste #1 +120 lines]`` (pastes.py)."""
        self.file_index: FileIndex | None = None
        self._last_kind: str | None = None
        """``kill`` or ``yank`` when the previous key was one (kills join; Alt+Y follows a yank)."""
        self._yanked: tuple[tuple[int, int], tuple[int, int]] | None = None
        self._quiet_text: str | None = None
        """Text set by code, not typed: its change event must not open completions."""

    # -- text ---------------------------------------------------------------------------------------
    @property
    def expanded_text(self) -> str:
        """The text with paste markers replaced by what was pasted (what is sent)."""
        return self.pastes.expand(self.text)

    def paste(self, text: str) -> None:
        """Insert pasted text at the cursor; a large paste as a marker (Pi's paste handling)."""
        before = self.document.get_line(self.cursor_location[0])[: self.cursor_location[1]]
        cleaned = clean_paste(text, before)
        marker = self.pastes.add(cleaned)
        start, end = self.selection
        self.replace(marker if marker is not None else cleaned, start, end)

    async def _on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        if event.text:
            self.paste(event.text)

    def set_text(self, text: str, complete: bool = False) -> None:
        """Replace the text and put the cursor at its end (``complete``: then offer completions for it)."""
        if not text:
            self.pastes.clear()
        self._quiet_text = None if complete else text
        self.load_text(text)
        self.move_cursor(self.document.end)

    def insert_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end)

    def refresh_completions(self) -> None:
        text = self.text
        if self.autocomplete():
            self.run_worker(
                self._offer_from_extensions(text), group="files", exclusive=True, exit_on_error=False
            )
            return
        self._builtin_completions(text)

    def _builtin_completions(self, text: str) -> None:
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
        offset = index_of(self.text, self.cursor_location)
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
        self.move_cursor(location_of(value, len(value) if cursor is None else cursor))

    async def _offer_from_extensions(self, text: str) -> None:
        """Ask the extensions' autocomplete providers (the last added first, each may defer to the one below,
        the bottom one being caddie's own); caddie's completions when none answers."""
        from caddie.extensions.ui_components import Suggestions

        provider: Any = _BuiltinProvider()
        for factory in self.autocomplete():
            try:
                provider = factory(provider)
            except Exception:  # a broken provider is skipped; typing goes on
                continue
        row, column = self.cursor_location
        try:
            answer = provider.get_suggestions(text.split("\n"), row, column)
            if asyncio.iscoroutine(answer):
                answer = await answer
        except Exception:  # an extension's provider must not break typing
            answer = None
        if self.text != text:
            return  # typed on meanwhile: a newer worker answers
        if not isinstance(answer, Suggestions) or not answer.items:
            self._builtin_completions(text)
            return
        offset = index_of(text, self.cursor_location)
        start = max(0, offset - len(answer.prefix))
        completions = [
            Completion(text[:start] + item.value + text[offset:], item.label, item.description,
                       start + len(item.value), "path")
            for item in answer.items
        ]  # fmt: skip
        self.menu.show(completions, text)

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
    def _kill_range(self, binding_id: str) -> tuple[tuple[int, int], tuple[int, int]]:
        start, end = self.selection
        if start != end:
            return (start, end) if start <= end else (end, start)
        row, col = self.cursor_location
        line = self.document.get_line(row)
        if binding_id == "tui.editor.deleteWordBackward":
            return self.get_cursor_word_left_location(), (row, col)
        if binding_id == "tui.editor.deleteWordForward":
            return (row, col), self.get_cursor_word_right_location()
        if binding_id == "tui.editor.deleteToLineStart":
            if col == 0 and row > 0:  # at the start of a line: join it to the one above
                return (row - 1, len(self.document.get_line(row - 1))), (row, 0)
            return (row, 0), (row, col)
        if col >= len(line) and row + 1 < self.document.line_count:  # ctrl+k at the end: join the next
            return (row, col), (row + 1, 0)
        return (row, col), (row, len(line))

    def kill(self, binding_id: str, join: bool) -> None:
        start, end = self._kill_range(binding_id)
        killed = self.get_text_range(start, end)
        if killed:
            self.delete(start, end)
            backward = binding_id in ("tui.editor.deleteWordBackward", "tui.editor.deleteToLineStart")
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

    # -- an extension's editor -------------------------------------------------------------------------
    def use_component(self, factory: Any, tui: Callable[[], Any], theme: Any, keys: Keybindings) -> None:
        """Put an extension's editor in front (``ui.set_editor_component``), or take it away (None)."""
        if factory is self._custom_factory:
            return
        self._custom_factory = factory
        self.custom = None
        self.border_title = self.border_subtitle = None
        if factory is None:
            return
        made = factory(tui(), theme, keys)
        attach = getattr(made, "attach", None)
        if callable(attach):
            attach(self._pass_on)
        self.custom = made
        self.show_labels()

    def _pass_on(self, key: Any) -> None:
        """The extension's editor hands a key to the built-in handling (``super().handle_input(key)``): the
        key being handled goes on as usual; another one (a vim mode's ``h`` handed on as ``left``) is typed
        after it, past the extension's editor."""
        if self._handling is not None and key.key == self._handling.key:
            self._defaulted = True
        else:
            self._forwarded.append(key)

    def show_labels(self) -> None:
        """The extension's editor's ``mode_label`` on the top border, ``status_label`` on the bottom one (ANSI
        colours kept); called after each key and on ``tui.request_render()``."""
        from rich.text import Text

        label = getattr(self.custom, "mode_label", None)
        self.border_title = Text.from_ansi(str(label)) if label else None
        status = getattr(self.custom, "status_label", None)
        self.border_subtitle = Text.from_ansi(str(status)) if status else None

    def _offer_to_custom(self, event: events.Key) -> bool:
        """True when the extension's editor took the key."""
        from caddie.extensions.ui_components import KeyInput

        self._defaulted = False
        self._handling = KeyInput(event.key, event.character)
        try:
            self.custom.handle_input(self._handling)
        except Exception as e:  # an extension's editor must not lose the user's typing
            self.custom, self._custom_factory = None, None
            self.border_title = f"editor extension failed: {type(e).__name__}"
            return False
        finally:
            self._handling = None
        self.show_labels()
        return not self._defaulted

    # -- keys ---------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if self.custom is not None:
            taken = self._offer_to_custom(event)
            forwarded, self._forwarded = self._forwarded, []
            for key in forwarded:  # keys the extension's editor handed on in place of this one
                await self._builtin_key(events.Key(key.key, key.character))
            if taken:
                event.stop()
                event.prevent_default()
                return
        await self._builtin_key(event)

    async def _builtin_key(self, event: events.Key) -> None:
        """caddie's own handling of a key: the jump target, the menu, the keybindings, then typing."""
        if self._jumping is not None:  # Ctrl+] (Ctrl+Alt+]) then the character to jump to
            forward, self._jumping = self._jumping == "forward", None
            if event.character and event.character.isprintable():
                event.stop()
                event.prevent_default()
                self.jump(event.character, forward)
                return
        key = "shift+enter" if event.key == "shift+\r" else event.key
        if self._menu_key(key):
            event.stop()
            event.prevent_default()
            return
        state = EditorState(empty=not self.text, selection=self.selection.start != self.selection.end)
        previous, self._last_kind = self._last_kind, None
        for binding_id in route(self.keys(), key, state, self.shortcuts()):
            if self._act(binding_id, key, previous):
                event.stop()
                event.prevent_default()
                return
        await super()._on_key(event)

    def _menu_key(self, key: str) -> bool:
        """Keys the open suggestion menu takes (up, down, enter, tab, escape); True when handled."""
        if not self.menu.is_open:
            return False
        keys = self.keys()
        if (keys.matches(key, "tui.input.submit") or keys.matches(key, "tui.input.tab")) and (
            self.menu.for_text != self.text
        ):
            # Typed (or pasted) faster than the menu followed: decide on the text as it is now, never on
            # suggestions made for an earlier text ("/session⏎" in one burst must not run /model).
            self.menu.hide()
            if self.text.startswith("/") and "\n" not in self.text:
                self.refresh_completions()
            if not self.menu.is_open:
                return False
        chosen = self.menu.current()
        if keys.matches(key, "tui.select.up") or keys.matches(key, "tui.select.down"):
            self.menu.move(-1 if keys.matches(key, "tui.select.up") else 1)
            return True
        if keys.matches(key, "tui.select.cancel") and not keys.matches(key, "app.clear"):
            self.menu.hide()
            return True
        if keys.matches(key, "tui.input.tab") and chosen is not None:
            self._accept(chosen, trailing_space=True)
            return True
        if keys.matches(key, "tui.input.submit") and chosen is not None:
            if chosen.kind == "path":
                self._accept(chosen, trailing_space=False)
                return True
            if chosen.value != self.text.strip():
                self._accept(chosen, trailing_space=False)
            self.menu.hide()
            self.post_message(self.Submitted(self, self.expanded_text, "enter"))
            return True
        return False

    def _act(self, binding_id: str, key: str, previous: str | None) -> bool:
        """Do what ``binding_id`` means in the editor; False when it does nothing here (next candidate)."""
        if binding_id == EXTENSION:
            self.post_message(self.Shortcut(key))
        elif binding_id == "app.message.followUp":
            if self.alt_enter_submits():
                self.post_message(self.Submitted(self, self.expanded_text, "alt"))
            else:
                self.insert_newline()
        elif binding_id.startswith(("app.", "caddie.app.", "tui.altScreen.")):
            self.menu.hide() if binding_id == "app.interrupt" else None
            self.post_message(self.Action(binding_id))
        elif binding_id == "tui.input.submit":
            self.menu.hide()
            self.post_message(self.Submitted(self, self.expanded_text, "enter"))
        elif binding_id == "tui.input.newLine":
            self.insert_newline()
        elif binding_id == "tui.input.tab":
            if self.text.startswith("/") and "\n" not in self.text and " " not in self.text:
                self.refresh_completions()
            else:
                self.complete_path_at_cursor()
        elif binding_id == "tui.input.copy":
            self.post_message(self.Copy(self.selected_text))
        elif binding_id in ("tui.editor.cursorUp", "tui.editor.historyPrevious"):
            return self._history(-1, binding_id == "tui.editor.historyPrevious")
        elif binding_id in ("tui.editor.cursorDown", "tui.editor.historyNext"):
            return self._history(1, binding_id == "tui.editor.historyNext")
        elif binding_id in KILLS:
            self.kill(binding_id, join=previous == "kill")
            self._last_kind = "kill"
        elif binding_id == "tui.editor.yank" or (binding_id == "tui.editor.yankPop" and previous == "yank"):
            if self.yank(pop=binding_id == "tui.editor.yankPop"):
                self._last_kind = "yank"
        elif binding_id == "tui.editor.yankPop":
            pass  # Alt+Y only means something right after a yank
        elif binding_id == "tui.editor.undo":
            self.action_undo()
        elif binding_id in ("tui.editor.jumpForward", "tui.editor.jumpBackward"):
            self._jumping = "forward" if binding_id == "tui.editor.jumpForward" else "backward"
        elif binding_id in MOTIONS:
            getattr(self, f"action_{MOTIONS[binding_id]}")()
        else:
            return False
        return True

    def _history(self, step: int, always: bool) -> bool:
        """Up at the first line / Down at the last (or the history keys anywhere): the prompt history."""
        row = self.cursor_location[0]
        if step < 0 and (always or row == 0):
            recalled = self.prompt_history.previous(self.text)
        elif step > 0 and (always or row == self.document.line_count - 1) and self.prompt_history.browsing:
            recalled = self.prompt_history.next()
        elif always:
            return True
        else:
            self.action_cursor_up() if step < 0 else self.action_cursor_down()
            return True
        if recalled is not None:
            self.set_text(recalled)
        return True

    def jump(self, character: str, forward: bool) -> None:
        """Move the cursor to the next (previous) ``character``, as Pi's jump keys do."""
        offset = index_of(self.text, self.cursor_location)
        target = jump_target(self.text, offset, character, forward)
        if target is not None:
            self.move_cursor(location_of(self.text, target))
