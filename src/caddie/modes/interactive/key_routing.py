"""Which binding a key press in the main editor means, in Pi's order of precedence (pure).

Pi's rules, for its full-screen mode, which caddie always is: a binding the user gave to
``tui.editor.historyPrevious``/``historyNext`` comes first; then the transcript's keys
(``tui.altScreen.*``: PageUp, Home …); then an extension's shortcut; then the application's keys
(``app.*``); then the editor's own. Some bindings apply only in a state: ``app.exit`` (Ctrl+D) on an empty
editor (else Ctrl+D deletes forward), ``tui.input.copy`` (Ctrl+C) when text is selected (else Ctrl+C
clears).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from caddie.modes.interactive.keymap import Keybindings, canonical_key

EXTENSION = "extension"
"""Not a binding id: the key is an extension's shortcut."""

TRANSCRIPT_IDS = (
    "tui.altScreen.pageUp", "tui.altScreen.pageDown", "tui.altScreen.halfPageUp", "tui.altScreen.halfPageDown",
    "tui.altScreen.lineUp", "tui.altScreen.lineDown", "tui.altScreen.previousPrompt", "tui.altScreen.nextPrompt",
    "tui.altScreen.search", "tui.altScreen.top", "tui.altScreen.bottom",
)  # fmt: skip
APP_IDS = (
    "app.interrupt", "app.clear", "app.exit", "app.suspend", "app.editor.external", "app.clipboard.pasteImage",
    "app.session.new", "app.session.tree", "app.session.fork", "app.session.resume", "app.model.select",
    "app.model.cycleForward", "app.model.cycleBackward", "app.thinking.cycle", "app.thinking.toggle",
    "app.tools.expand", "app.message.copy", "app.message.followUp", "app.message.dequeue", "caddie.app.quit",
)  # fmt: skip
EDITOR_IDS = (
    "tui.input.copy", "tui.input.submit", "tui.input.newLine", "tui.input.tab",
    "tui.editor.cursorUp", "tui.editor.cursorDown", "tui.editor.historyPrevious", "tui.editor.historyNext",
    "tui.editor.cursorLeft", "tui.editor.cursorRight", "tui.editor.cursorWordLeft", "tui.editor.cursorWordRight",
    "tui.editor.cursorLineStart", "tui.editor.cursorLineEnd", "tui.editor.jumpForward", "tui.editor.jumpBackward",
    "tui.editor.pageUp", "tui.editor.pageDown", "tui.editor.deleteCharBackward", "tui.editor.deleteCharForward",
    "tui.editor.deleteWordBackward", "tui.editor.deleteWordForward", "tui.editor.deleteToLineStart",
    "tui.editor.deleteToLineEnd", "tui.editor.yank", "tui.editor.yankPop", "tui.editor.undo",
)  # fmt: skip
HISTORY_IDS = ("tui.editor.historyPrevious", "tui.editor.historyNext")


@dataclass(frozen=True, slots=True)
class EditorState:
    empty: bool
    """The editor holds no text."""
    selection: bool
    """Some text is selected."""


def applies(binding_id: str, state: EditorState) -> bool:
    """Whether ``binding_id`` acts in this state (otherwise the next candidate gets the key)."""
    if binding_id == "app.exit":
        return state.empty
    if binding_id == "tui.input.copy":
        return state.selection
    return True


def route(keys: Keybindings, key: str, state: EditorState, shortcuts: Collection[str] = ()) -> list[str]:
    """The binding ids (or ``EXTENSION``) a key press in the main editor stands for, the one to act first;
    empty when the key is not bound (it types)."""
    ids = keys.ids_for(key)
    found: list[str] = ["tui.input.copy"] if "tui.input.copy" in ids and state.selection else []
    found += [i for i in HISTORY_IDS if i in ids and keys.is_user_bound(i)]
    found += [i for i in TRANSCRIPT_IDS if i in ids]
    if canonical_key(key) in shortcuts:
        found.append(EXTENSION)
    found += [i for i in APP_IDS if i in ids]
    found += [i for i in EDITOR_IDS if i in ids and i not in found]
    return [i for i in found if i == EXTENSION or applies(i, state)]
