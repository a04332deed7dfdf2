"""Key bindings by Pi's binding ids, their defaults, and ``~/.caddie/agent/keybindings.json`` read as Pi reads its own.

Every key the interactive UI acts on has an id (``tui.editor.cursorWordLeft``, ``app.model.select`` …) with
Pi 0.84's default keys (its Linux and macOS defaults). The file maps ids to a key or a list of keys; a
listed id replaces its defaults (``[]`` unbinds it), ids from before Pi's namespacing (``cursorUp``,
``expandTools`` …) are migrated as Pi migrates them, and the file is read again on ``/reload``. Keys are
written as Pi writes them (``ctrl+shift+p``, ``pageUp``, ``ctrl+]``, ``alt+enter``) and matched against
Textual's key names; a file that cannot be used is reported in one line and the defaults stay.

caddie is always full screen, like Pi's ``--tui-mode fullscreen``: the transcript bindings
(``tui.altScreen.*``: PageUp, PageDown, Home, End …) come before the editor's, whose Ctrl variants keep
moving in the editor.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.binding import Binding

from caddie.config.key_names import EQUIVALENT as _EQUIVALENT
from caddie.config.key_names import canonical_key, display_key, textual_key

__all__ = [
    "BINDINGS",
    "BY_ID",
    "Keybindings",
    "canonical_key",
    "display_key",
    "keyed",
    "load_keybindings",
    "textual_key",
    "textual_keymap",
]

KeySpec = str | list[str]


@dataclass(frozen=True, slots=True)
class BindingDef:
    id: str
    defaults: tuple[str, ...]
    description: str


def _b(binding_id: str, defaults: str | tuple[str, ...], description: str) -> BindingDef:
    return BindingDef(binding_id, (defaults,) if isinstance(defaults, str) else defaults, description)


BINDINGS: tuple[BindingDef, ...] = (
    _b("tui.editor.cursorUp", "up", "Move cursor up, browsing older history at the top"),
    _b("tui.editor.cursorDown", "down", "Move cursor down, browsing newer history at the bottom"),
    _b("tui.editor.historyPrevious", (), "Select the previous prompt history entry"),
    _b("tui.editor.historyNext", (), "Select the next prompt history entry"),
    _b("tui.editor.cursorLeft", ("left", "ctrl+b"), "Move cursor left"),
    _b("tui.editor.cursorRight", ("right", "ctrl+f"), "Move cursor right"),
    _b("tui.editor.cursorWordLeft", ("alt+left", "ctrl+left", "alt+b"), "Move cursor word left"),
    _b("tui.editor.cursorWordRight", ("alt+right", "ctrl+right", "alt+f"), "Move cursor word right"),
    _b("tui.editor.cursorLineStart", ("home", "ctrl+home", "ctrl+a"), "Move to line start"),
    _b("tui.editor.cursorLineEnd", ("end", "ctrl+end", "ctrl+e"), "Move to line end"),
    _b("tui.editor.jumpForward", "ctrl+]", "Jump forward to character"),
    _b("tui.editor.jumpBackward", "ctrl+alt+]", "Jump backward to character"),
    _b("tui.editor.pageUp", ("pageUp", "ctrl+pageUp"), "Scroll up by page"),
    _b("tui.editor.pageDown", ("pageDown", "ctrl+pageDown"), "Scroll down by page"),
    _b("tui.editor.deleteCharBackward", "backspace", "Delete character backward"),
    _b("tui.editor.deleteCharForward", ("delete", "ctrl+d"), "Delete character forward"),
    _b("tui.editor.deleteWordBackward", ("ctrl+w", "alt+backspace"), "Delete word backward"),
    _b("tui.editor.deleteWordForward", ("alt+d", "alt+delete"), "Delete word forward"),
    _b("tui.editor.deleteToLineStart", "ctrl+u", "Delete to line start"),
    _b("tui.editor.deleteToLineEnd", "ctrl+k", "Delete to line end"),
    _b("tui.input.newLine", ("shift+enter", "ctrl+j"), "Insert new line"),
    _b("tui.input.submit", "enter", "Submit input"),
    _b("tui.input.tab", "tab", "Tab / autocomplete"),
    _b("tui.editor.yank", "ctrl+y", "Paste most recently deleted text"),
    _b("tui.editor.yankPop", "alt+y", "Cycle through deleted text after yank"),
    _b("tui.editor.undo", "ctrl+-", "Undo last edit"),
    _b("tui.input.copy", "ctrl+c", "Copy selection"),
    _b("tui.select.up", "up", "Move selection up"),
    _b("tui.select.down", "down", "Move selection down"),
    _b("tui.select.pageUp", "pageUp", "Page up in list"),
    _b("tui.select.pageDown", "pageDown", "Page down in list"),
    _b("tui.select.confirm", "enter", "Confirm selection"),
    _b("tui.select.cancel", ("escape", "ctrl+c"), "Cancel selection"),
    _b("tui.altScreen.pageUp", "pageUp", "Scroll the transcript up by one page"),
    _b("tui.altScreen.pageDown", "pageDown", "Scroll the transcript down by one page"),
    _b("tui.altScreen.halfPageUp", (), "Scroll the transcript up by half a page"),
    _b("tui.altScreen.halfPageDown", (), "Scroll the transcript down by half a page"),
    _b("tui.altScreen.lineUp", (), "Scroll the transcript up by one line"),
    _b("tui.altScreen.lineDown", (), "Scroll the transcript down by one line"),
    _b("tui.altScreen.previousPrompt", ("ctrl+shift+up", "ctrl+up"), "Jump to the previous message of yours"),
    _b("tui.altScreen.nextPrompt", ("ctrl+shift+down", "ctrl+down"), "Jump to the next message of yours"),
    _b("tui.altScreen.search", "ctrl+shift+f", "Search the transcript"),
    _b("tui.altScreen.searchNext", ("enter", "ctrl+g"), "Select the next search match while searching"),
    _b("tui.altScreen.searchPrevious", ("shift+enter", "ctrl+shift+g"), "Select the previous search match"),
    _b("tui.altScreen.searchClose", "escape", "Close transcript search"),
    _b("tui.altScreen.top", "home", "Scroll to the beginning of the transcript"),
    _b("tui.altScreen.bottom", "end", "Scroll to the transcript end and follow new output"),
    _b("app.interrupt", "escape", "Cancel / abort"),
    _b("app.clear", "ctrl+c", "Clear editor (first) / exit (second)"),
    _b("app.exit", "ctrl+d", "Exit (when editor empty)"),
    _b("app.suspend", "ctrl+z", "Suspend to background"),
    _b("app.editor.external", "ctrl+g", "Open in external editor"),
    _b("app.clipboard.pasteImage", "ctrl+v", "Paste image or text from clipboard"),
    _b("app.session.new", (), "Start a new session (/new)"),
    _b("app.session.tree", (), "Open session tree navigator (/tree)"),
    _b("app.session.fork", (), "Fork current session (/fork)"),
    _b("app.session.resume", (), "Open session resume picker (/resume)"),
    _b("app.session.togglePath", "ctrl+p", "Toggle path display (session picker)"),
    _b("app.session.toggleSort", "ctrl+s", "Toggle sort mode (session picker)"),
    _b("app.session.toggleNamedFilter", "ctrl+n", "Toggle named-only filter (session picker)"),
    _b("app.session.rename", "ctrl+r", "Rename session (session picker)"),
    _b("app.session.delete", "ctrl+d", "Delete session (session picker)"),
    _b("app.session.deleteNoninvasive", "ctrl+backspace", "Delete session when query is empty"),
    _b("app.model.select", "ctrl+l", "Open model selector"),
    _b("app.model.cycleForward", "ctrl+p", "Cycle to next model"),
    _b("app.model.cycleBackward", "shift+ctrl+p", "Cycle to previous model"),
    _b("app.thinking.cycle", "shift+tab", "Cycle thinking level"),
    _b("app.thinking.toggle", "ctrl+t", "Collapse or expand thinking blocks"),
    _b("app.tools.expand", "ctrl+o", "Collapse or expand tool output"),
    _b("app.message.copy", "ctrl+x", "Copy the last answer (in /tree: the selected message)"),
    _b("app.message.followUp", "alt+enter", "Queue follow-up message"),
    _b("app.message.dequeue", "alt+up", "Restore queued messages to editor"),
    _b(
        "app.tree.foldOrUp", ("ctrl+left", "alt+left"), "Fold branch segment, or jump to the previous segment"
    ),
    _b("app.tree.unfoldOrDown", ("ctrl+right", "alt+right"), "Unfold branch segment, or jump to the next"),
    _b("app.tree.editLabel", "shift+l", "Edit the label on the selected tree node"),
    _b("app.tree.toggleLabelTimestamp", "shift+t", "Toggle label timestamps in the tree"),
    _b("app.tree.filter.default", "ctrl+d", "Set tree filter to default view"),
    _b("app.tree.filter.noTools", "ctrl+t", "Toggle tree filter that hides tool results"),
    _b("app.tree.filter.userOnly", "ctrl+u", "Toggle tree filter that shows only user messages"),
    _b("app.tree.filter.labeledOnly", "ctrl+l", "Toggle tree filter that shows only labeled entries"),
    _b("app.tree.filter.all", "ctrl+a", "Toggle tree filter that shows all entries"),
    _b("app.tree.filter.cycleForward", "ctrl+o", "Cycle tree filter forward"),
    _b("app.tree.filter.cycleBackward", "shift+ctrl+o", "Cycle tree filter backward"),
    _b("app.models.save", "ctrl+s", "Save current model selection to settings"),
    _b("app.models.enableAll", "ctrl+a", "Enable all models (or all matching the search)"),
    _b("app.models.clearAll", "ctrl+x", "Clear all models (or all matching the search)"),
    _b("app.models.toggleProvider", "ctrl+p", "Toggle all models of the current provider"),
    _b("app.models.reorderUp", "alt+up", "Move the selected model up in the cycle order"),
    _b("app.models.reorderDown", "alt+down", "Move the selected model down in the cycle order"),
    _b("caddie.app.quit", "ctrl+q", "Quit (caddie's own)"),
)
BY_ID: dict[str, BindingDef] = {b.id: b for b in BINDINGS}

LEGACY_IDS: dict[str, str] = {
    "cursorUp": "tui.editor.cursorUp", "cursorDown": "tui.editor.cursorDown",
    "cursorLeft": "tui.editor.cursorLeft", "cursorRight": "tui.editor.cursorRight",
    "cursorWordLeft": "tui.editor.cursorWordLeft", "cursorWordRight": "tui.editor.cursorWordRight",
    "cursorLineStart": "tui.editor.cursorLineStart", "cursorLineEnd": "tui.editor.cursorLineEnd",
    "jumpForward": "tui.editor.jumpForward", "jumpBackward": "tui.editor.jumpBackward",
    "pageUp": "tui.editor.pageUp", "pageDown": "tui.editor.pageDown",
    "deleteCharBackward": "tui.editor.deleteCharBackward", "deleteCharForward": "tui.editor.deleteCharForward",
    "deleteWordBackward": "tui.editor.deleteWordBackward", "deleteWordForward": "tui.editor.deleteWordForward",
    "deleteToLineStart": "tui.editor.deleteToLineStart", "deleteToLineEnd": "tui.editor.deleteToLineEnd",
    "yank": "tui.editor.yank", "yankPop": "tui.editor.yankPop", "undo": "tui.editor.undo",
    "newLine": "tui.input.newLine", "submit": "tui.input.submit", "tab": "tui.input.tab",
    "copy": "tui.input.copy", "selectUp": "tui.select.up", "selectDown": "tui.select.down",
    "selectPageUp": "tui.select.pageUp", "selectPageDown": "tui.select.pageDown",
    "selectConfirm": "tui.select.confirm", "selectCancel": "tui.select.cancel",
    "interrupt": "app.interrupt", "clear": "app.clear", "exit": "app.exit", "suspend": "app.suspend",
    "cycleThinkingLevel": "app.thinking.cycle", "cycleModelForward": "app.model.cycleForward",
    "cycleModelBackward": "app.model.cycleBackward", "selectModel": "app.model.select",
    "expandTools": "app.tools.expand", "toggleThinking": "app.thinking.toggle",
    "toggleSessionNamedFilter": "app.session.toggleNamedFilter", "externalEditor": "app.editor.external",
    "followUp": "app.message.followUp", "dequeue": "app.message.dequeue",
    "pasteImage": "app.clipboard.pasteImage", "newSession": "app.session.new", "tree": "app.session.tree",
    "fork": "app.session.fork", "resume": "app.session.resume", "treeFoldOrUp": "app.tree.foldOrUp",
    "treeUnfoldOrDown": "app.tree.unfoldOrDown", "treeEditLabel": "app.tree.editLabel",
    "treeToggleLabelTimestamp": "app.tree.toggleLabelTimestamp", "toggleSessionPath": "app.session.togglePath",
    "toggleSessionSort": "app.session.toggleSort", "renameSession": "app.session.rename",
    "deleteSession": "app.session.delete", "deleteSessionNoninvasive": "app.session.deleteNoninvasive",
}  # fmt: skip
"""Pi's pre-namespacing names → today's ids (a file that has both keeps the new one)."""


@dataclass
class Keybindings:
    """The keys of every binding id: Pi's defaults, replaced per id by the user's file."""

    user: Mapping[str, list[str]] = field(default_factory=dict)
    source: Path | None = None
    warnings: list[str] = field(default_factory=list)
    _keys: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)
    _by_key: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for binding in BINDINGS:
            listed = self.user.get(binding.id)
            keys = list(binding.defaults) if listed is None else listed
            self._keys[binding.id] = _unique(canonical_key(k) for k in keys)
        for binding_id, keys in self._keys.items():
            for key in keys:
                self._by_key.setdefault(key, []).append(binding_id)
        claims: dict[str, list[str]] = {}
        for binding_id, keys in self.user.items():
            for key in keys:
                claims.setdefault(canonical_key(key), []).append(binding_id)
        for key, ids in claims.items():
            if len(ids) > 1:
                self.warnings.append(f"keybindings: {key} is bound to {', '.join(ids)}")

    def keys(self, binding_id: str) -> list[str]:
        """The (canonical) keys bound to ``binding_id`` (empty when unbound)."""
        return list(self._keys.get(binding_id, ()))

    def matches(self, key: str, binding_id: str) -> bool:
        """Whether the key Textual reported (or a Pi key name) triggers ``binding_id``."""
        canonical = canonical_key(key)
        keys = self._keys.get(binding_id, ())
        return canonical in keys or any(_EQUIVALENT.get(k) == canonical for k in keys)

    def ids_for(self, key: str) -> list[str]:
        """Every binding id ``key`` triggers, in table order."""
        canonical = canonical_key(key)
        found = list(self._by_key.get(canonical, ()))
        for alias, equivalent in _EQUIVALENT.items():
            if equivalent == canonical:
                found += [i for i in self._by_key.get(alias, ()) if i not in found]
        return found

    def is_user_bound(self, binding_id: str) -> bool:
        return binding_id in self.user

    def hint(self, binding_id: str) -> str:
        """The first key of ``binding_id`` for people (``Ctrl+O``), or ``unbound``."""
        keys = self._keys.get(binding_id) or []
        return display_key(keys[0]) if keys else "unbound"

    def describe(self, binding_id: str) -> str:
        """``Ctrl+W, Alt+Backspace`` (all keys of ``binding_id``), or ``unbound``."""
        keys = self._keys.get(binding_id) or []
        return ", ".join(display_key(k) for k in keys) if keys else "unbound"


def _unique(keys: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for key in keys:
        if key not in seen:
            seen.append(key)
    return seen


def migrate(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's migration of pre-namespacing ids (an entry under the new id wins over its old name)."""
    config: dict[str, Any] = {}
    for key, value in raw.items():
        new = LEGACY_IDS.get(key, key)
        if new != key and new in raw:
            continue
        config[new] = value
    return config


def parse_keybindings(raw: Any, source: str) -> tuple[dict[str, list[str]], list[str]]:
    """The usable entries of a keybindings file's JSON and one warning per entry that is not."""
    if not isinstance(raw, dict):
        return {}, [f"{source}: expected a JSON object of binding ids to keys; using the default keys"]
    user: dict[str, list[str]] = {}
    warnings: list[str] = []
    for binding_id, value in migrate(raw).items():
        if binding_id not in BY_ID:
            warnings.append(f"{source}: unknown binding id {binding_id!r} (see docs/interactive.md#keys)")
            continue
        if isinstance(value, str):
            user[binding_id] = [value]
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            user[binding_id] = list(value)
        else:
            warnings.append(f"{source}: {binding_id} must be a key or a list of keys; keeping its default")
    return user, warnings


def load_keybindings(path: Path) -> Keybindings:
    """``keybindings.json`` at ``path`` (absent: the defaults). Blocking: a small file read."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return Keybindings()
    except OSError as e:
        return Keybindings(warnings=[f"{path}: cannot read it ({e.strerror or e}); using the default keys"])
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        return Keybindings(
            warnings=[f"{path}: not valid JSON ({e.msg} at line {e.lineno}); using the default keys"]
        )
    user, warnings = parse_keybindings(raw, str(path))
    return Keybindings(user, path, warnings)


UNBOUND_KEY = "caddie_unbound"
"""A key no terminal sends: where the file unbinds an id (``[]``), its screen binding moves here (Textual's
keymap can replace a binding's keys, not remove them)."""


def keyed(binding_id: str, action: str, *, priority: bool = True) -> Binding:
    """A dialog's binding for ``binding_id`` with Pi's default keys; ``textual_keymap`` rebinds it."""
    keys = ",".join(textual_key(k) for k in BY_ID[binding_id].defaults) or UNBOUND_KEY
    return Binding(keys, action, show=False, priority=priority, id=binding_id)


def textual_keymap(keys: Keybindings) -> dict[str, str]:
    """Textual's keymap (binding id → its keys, comma-separated, in Textual's names) for every id the
    user's file binds: it rebinds the ``keyed`` bindings of pickers and dialogs."""
    return {
        binding_id: ",".join(textual_key(k) for k in keys.keys(binding_id)) or UNBOUND_KEY
        for binding_id in keys.user
    }
