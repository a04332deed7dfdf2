"""Keyboard-driven pickers: sessions (/resume), models (/model, Ctrl+L), user messages (/fork), the tree.

Each returns an id (a session path, ``provider/model-id`` or an entry id) or None when cancelled.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import Input, Static

from caddie.ai.model import Model
from caddie.config.paths import sessions_root
from caddie.modes.interactive.dialogs import Choice, ConfirmScreen, InputScreen, ListScreen, keys_in_force
from caddie.modes.interactive.keymap import keyed
from caddie.modes.interactive.render import format_count, one_line, short_path
from caddie.modes.interactive.tree_rows import TreeFilter, TreeRow, describe_entry, tree_rows
from caddie.session.entries import LabelEntry, MessageEntry, SessionEntry
from caddie.session.store import SessionStore, SessionSummary, TreeNode
from caddie.session.store import _summarize_file as _summarize_file  # one file's row, as session list shows

MAX_TREE_INDENT = 24
SEARCHED_MESSAGE_CHARS = 20_000
"""How much of a session's message text /resume's search looks in (the first characters): typing stays fast
with many long sessions."""
PickerFilter = Literal["default", "no-tools", "user", "labeled", "all"]
PICKER_FILTERS: tuple[PickerFilter, ...] = ("default", "no-tools", "user", "labeled", "all")


def _walk_nodes(roots: list[TreeNode]) -> Iterator[TreeNode]:
    stack = list(roots)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def age(seconds_since_epoch: float, now: float | None = None) -> str:
    """``just now``, ``5m ago``, ``3h ago``, ``2d ago``."""
    delta = max(0.0, (now if now is not None else time.time()) - seconds_since_epoch)
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    return f"{int(delta // 86400)}d ago"


def all_sessions(session_dir: str | None = None) -> list[SessionSummary]:
    """Every saved session of every project (or of ``session_dir``), most recently active first.

    Reads every session file: call it off the event loop.
    """
    root = Path(session_dir) if session_dir else sessions_root()
    if not root.is_dir():
        return []
    files = list(root.glob("*.jsonl")) if session_dir else list(root.glob("*/*.jsonl"))
    summaries = [s for s in (_summarize_file(p) for p in files) if s is not None]
    summaries.sort(key=lambda s: s.modified, reverse=True)
    return summaries


class SessionPicker(ListScreen):
    """/resume and ``caddie -r``: this project's sessions; Tab switches to every project's (and back).

    Each row shows the name or first message, the session id (``caddie --session <id>`` opens it),
    message count and age; in the all-projects view also the directory. The filter line searches all of
    these.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *ListScreen.BINDINGS,
        keyed("tui.input.tab", "toggle_scope"),
        keyed("app.session.toggleNamedFilter", "toggle_named"),
        keyed("app.session.togglePath", "toggle_path"),
        keyed("app.session.delete", "delete"),
        keyed("app.session.rename", "rename"),
        keyed("app.session.toggleSort", "toggle_sort"),
        keyed("app.session.deleteNoninvasive", "delete_if_no_query"),
    ]

    def __init__(
        self,
        sessions: Sequence[SessionSummary],
        current: str | None = None,
        load_all: Callable[[], Awaitable[list[SessionSummary]]] | None = None,
        rename_current: Callable[[str], None] | None = None,
    ) -> None:
        self.here = list(sessions)
        self.everywhere: list[SessionSummary] | None = None
        self.current = current
        self.load_all = load_all
        self.rename_current = rename_current
        """Ctrl+R on the open session: renamed through the session (its file is held by it)."""
        self.scope: str = "here"
        self.sort: SessionSort = "threaded"
        """Ctrl+S (Pi's app.session.toggleSort): threaded (forks under the session they came from), recent,
        relevance (best match of the filter first)."""
        self.named_only = False
        """Ctrl+N (Pi's app.session.toggleNamedFilter): only sessions with a name."""
        self.show_path = False
        """Ctrl+P (app.session.togglePath): each session's file path under it."""
        super().__init__(
            self._title(),
            self._choices(self.here, False),
            filter_placeholder="type to search sessions (name, messages, id, directory; re:pattern for a regex)",
            hint=self._hint(),
        )

    def _title(self) -> str:
        scope = " (all projects)" if self.scope == "all" else " (this project)"
        return f"Resume a session{scope} · sort: {self.sort}"

    def _hint(self) -> str:
        other = "this project" if self.scope == "all" else "all projects"
        named = "all" if self.named_only else "named only"
        path = "off" if self.show_path else "on"
        key = self.key_hint
        return (
            f"↑↓ move · enter resume · {key('tui.input.tab')} {other} · {key('app.session.toggleSort')} sort · "
            f"{key('app.session.rename')} rename · {key('app.session.delete')} delete · "
            f"{key('app.session.toggleNamedFilter')} {named} · {key('app.session.togglePath')} path {path} · "
            f"{key('tui.select.cancel')} cancel"
        )

    def _choices(self, sessions: Sequence[SessionSummary], with_cwd: bool) -> list[Choice]:
        choices = []
        for s, depth in threaded(sessions) if self.sort == "threaded" else [(s, 0) for s in sessions]:
            if self.named_only and not s.name:
                continue
            prompt = Text("  " * (depth - 1) + "└ " if depth else "", style="dim")
            title = s.name or s.first_message or "(no messages)"
            prompt.append(one_line(title, 48), style="bold" if s.name else "")
            meta = f"  {s.message_count} msgs · {age(s.modified)} · {s.id}"
            if self.current is not None and str(s.path) == self.current:
                meta += " · current"
            prompt.append(meta, style="dim")
            if with_cwd:
                prompt.append(f"  {short_path(s.cwd)}", style="dim italic")
            if self.show_path:
                prompt.append(f"  {short_path(str(s.path))}", style="dim")
            messages = (s.all_messages_text or s.first_message)[:SEARCHED_MESSAGE_CHARS]
            search = f"{s.id} {s.name or ''} {messages} {s.cwd}"  # as Pi's
            choices.append(Choice(str(s.path), prompt, search))
        return choices

    def action_delete(self) -> None:
        """Ctrl+D (Pi's app.session.delete): delete the highlighted session file, after a yes (to the trash
        with the ``trash`` command when there is one, as Pi does). The current session stays."""
        choice = self.highlighted_choice()
        if choice is None:
            return
        if choice.id == self.current:
            self.query_one("#hint", Static).update(Text("The current session cannot be deleted here."))
            return

        def answered(yes: Any) -> None:
            if yes is not True:
                return
            error = delete_session_file(Path(choice.id))
            if error is not None:
                self.query_one("#hint", Static).update(Text(error))
                return
            self.here = [s for s in self.here if str(s.path) != choice.id]
            if self.everywhere is not None:
                self.everywhere = [s for s in self.everywhere if str(s.path) != choice.id]
            self._redraw()

        self.app.push_screen(ConfirmScreen("Delete session?", f"{choice.id} is deleted for good."), answered)

    def refill(self, keep: str | None = None) -> None:
        query = self.query_one("#filter", Input).value.strip() if self.with_filter else ""
        regex = search_regex(query) if query.startswith("re:") else None
        if regex is None:
            super().refill(keep)
            if self.sort == "relevance" and query:  # best match first: in the name, then early in the text
                self.shown.sort(key=lambda c: relevance(query.lower(), c.folded))
                index = next((i for i, c in enumerate(self.shown) if c.id == keep), 0)
                self._show_window(index)
        else:  # ``re:pattern``, as Pi: a case-insensitive regex; a bad one matches nothing and says why
            found = [(m.start(), c) for c in self.choices if isinstance(regex, re.Pattern)
                     and (m := regex.search(c.search or "")) is not None]  # fmt: skip
            if self.sort != "recent" and query:  # Pi ranks by where the match starts in the text
                found.sort(key=lambda pair: pair[0])
            self.shown = [c for _, c in found]
            self._show_window(next((i for i, c in enumerate(self.shown) if c.id == keep), 0))
        error = regex if isinstance(regex, str) else None
        self.query_one("#hint", Static).update(Text(error or self._hint(), style="red" if error else ""))

    def action_delete_if_no_query(self) -> None:
        """Ctrl+Backspace (Pi's app.session.deleteNoninvasive): deletes the highlighted session when the
        search line is empty, else the word before the cursor in it."""
        search = self.query_one("#filter", Input)
        if search.value:
            search.action_delete_left_word()
        else:
            self.action_delete()

    def action_toggle_sort(self) -> None:
        self.sort = SESSION_SORTS[(SESSION_SORTS.index(self.sort) + 1) % len(SESSION_SORTS)]
        self.query_one("#title", Static).update(Text(self._title()))
        self._redraw()

    def action_rename(self) -> None:
        """Ctrl+R (Pi's app.session.rename): name the highlighted session (empty: keep the name)."""
        choice = self.highlighted_choice()
        if choice is None:
            return
        summary = next((s for s in [*self.here, *(self.everywhere or [])] if str(s.path) == choice.id), None)

        def answered(name: Any) -> None:
            if not isinstance(name, str) or not name.strip() or summary is None:
                return
            if choice.id == self.current and self.rename_current is not None:
                self.rename_current(name.strip())
                error = None
            else:
                error = rename_session_file(Path(choice.id), name.strip())
            if error is not None:
                self.query_one("#hint", Static).update(Text(error))
                return
            summary.name = name.strip()
            self._redraw()

        current_name = summary.name if summary is not None else None
        self.app.push_screen(
            InputScreen("Rename session", current_name or "a name for this session"), answered
        )

    def action_toggle_named(self) -> None:
        self.named_only = not self.named_only
        self._redraw()

    def action_toggle_path(self) -> None:
        self.show_path = not self.show_path
        self._redraw()

    def _redraw(self) -> None:
        sessions = self.everywhere if self.scope == "all" and self.everywhere is not None else self.here
        self.choices = self._choices(sessions, self.scope == "all")
        current = self.highlighted_choice()
        self.refill(current.id if current else None)
        self.query_one("#hint", Static).update(Text(self._hint()))

    async def action_toggle_scope(self) -> None:
        if self.scope == "here":
            if self.everywhere is None:
                self.everywhere = await self.load_all() if self.load_all is not None else list(self.here)
            self.scope = "all"
            self.choices = self._choices(self.everywhere, True)
        else:
            self.scope = "here"
            self.choices = self._choices(self.here, False)
        current = self.highlighted_choice()
        self.refill(current.id if current else None)
        self.query_one("#title", Static).update(Text(self._title()))
        self.query_one("#hint", Static).update(Text(self._hint()))


SessionSort = Literal["threaded", "recent", "relevance"]
SESSION_SORTS: tuple[SessionSort, ...] = ("threaded", "recent", "relevance")


def threaded(sessions: Sequence[SessionSummary]) -> list[tuple[SessionSummary, int]]:
    """Sessions with their forks right under them (depth 1, 2 …), each level newest first as given; a fork
    whose parent is not in the list stands on its own."""
    paths = {str(s.path) for s in sessions}
    children: dict[str, list[SessionSummary]] = {}
    roots: list[SessionSummary] = []
    for s in sessions:
        parent = str(Path(s.parent).expanduser()) if s.parent else None
        if parent is not None and parent in paths and parent != str(s.path):
            children.setdefault(parent, []).append(s)
        else:
            roots.append(s)
    ordered: list[tuple[SessionSummary, int]] = []
    seen: set[str] = set()

    def walk(session: SessionSummary, depth: int) -> None:
        if str(session.path) in seen:  # a cycle in broken headers: each session once
            return
        seen.add(str(session.path))
        ordered.append((session, depth))
        for child in children.get(str(session.path), []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    ordered.extend((s, 0) for s in sessions if str(s.path) not in seen)
    return ordered


def search_regex(query: str) -> re.Pattern[str] | str:
    """The pattern of a ``re:`` search (case-insensitive, Python's ``re`` syntax), or what is wrong with it."""
    pattern = query.strip()[3:].strip()
    if not pattern:
        return "Empty regex: type a pattern after re:"
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as e:
        return f"Bad regex: {e}"


def relevance(query: str, low: str) -> tuple[int, int]:
    """Sort key of a row for the lowercased filter ``query`` in the lowercased ``low`` (``Choice.folded``):
    whole-phrase matches first, then by where it starts."""
    at = low.find(query)
    return (0, at) if at >= 0 else (1, min((low.find(w) for w in query.split() if w in low), default=0))


def rename_session_file(path: Path, name: str) -> str | None:
    """Give a session file a name (a ``session_info`` entry, as ``/name`` writes); a sentence when it failed."""
    from caddie.errors import CaddieError

    try:
        store = SessionStore.open(path)
    except (OSError, CaddieError) as e:
        return f"Could not rename {path.name}: {e}"
    try:
        store.append_session_info(name)
    except OSError as e:
        return f"Could not rename {path.name}: {e.strerror or e}"
    finally:
        store.close()
    return None


def delete_session_file(path: Path) -> str | None:
    """Move a session file to the trash (the ``trash`` command) or delete it; a sentence when it failed."""
    import shutil
    import subprocess

    trash = shutil.which("trash")
    try:
        if (
            trash is not None
            and subprocess.run([trash, str(path)], capture_output=True, timeout=10).returncode == 0
        ):
            return None
        path.unlink()
    except (OSError, subprocess.SubprocessError) as e:
        return f"Could not delete {path}: {e}"
    return None


SET_AS_DEFAULT_HINT = "Enter to select · Ctrl+S to set as default · Esc to cancel"
"""The hint of the /model and /thinking pickers, Pi's words."""


class DefaultSaving(ListScreen):
    """A picker where Ctrl+S picks the highlighted row *and* asks for it to become the startup default
    (Pi's model and thinking selectors; Pi matches the key itself, there is no keybindings.json id for it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *ListScreen.BINDINGS,
        Binding("ctrl+s", "set_as_default", show=False),  # after the filter line has its typed keys
    ]
    as_default = False
    """Set when the row was picked with Ctrl+S: the caller saves it to settings.json."""

    def action_set_as_default(self) -> None:
        if self.highlighted_choice() is None:
            return
        self.as_default = True
        self.pick()


class ModelPicker(DefaultSaving):
    """/model and Ctrl+L: the models with a key, the current one first and the startup default
    (settings ``defaultProvider``/``defaultModel``) next, marked ``· default`` (typing ``default`` finds it)."""

    def __init__(self, models: Sequence[Model], current: Model | None, default: str | None = None) -> None:
        current_ref = current.ref if current is not None else None
        ordered = sorted(models, key=lambda m: (m.ref != current_ref, m.ref != default))
        choices = []
        for m in ordered:
            prompt = Text()
            prompt.append(m.ref, style="bold")
            if m.name and m.name != m.id:
                prompt.append(f"  {m.name}")
            details = f"  {format_count(m.context_window)} ctx"
            if m.reasoning:
                details += " · thinking"
            if m.ref == default:
                details += " · default"
            prompt.append(details, style="dim")
            if m.ref == current_ref:
                prompt.append("  ✓ current", style="green")
            search = f"{m.ref} {m.name}" + (" default" if m.ref == default else "")
            choices.append(Choice(m.ref, prompt, search))
        super().__init__(
            "Choose a model",
            choices,
            filter_placeholder="type to filter models",
            initial=current_ref,
            hint=SET_AS_DEFAULT_HINT,
        )


THINKING_LEVEL_DESCRIPTIONS = {
    "off": "No reasoning",
    "minimal": "Very brief reasoning (~1k tokens)",
    "low": "Light reasoning (~2k tokens)",
    "medium": "Moderate reasoning (~8k tokens)",
    "high": "Deep reasoning (~16k tokens)",
    "xhigh": "Extra-high reasoning (~32k tokens)",
    "max": "Maximum reasoning",
}
"""What each level means, as Pi's thinking selector says it."""


class ThinkingPicker(DefaultSaving):
    """/thinking: the current model's levels with what each means; the startup default
    (``defaultThinkingLevel``, else ``medium``) is marked ``· default``."""

    def __init__(self, levels: Sequence[str], current: str, default: str) -> None:
        choices = []
        for level in levels:
            description = THINKING_LEVEL_DESCRIPTIONS.get(level, "")
            if level == default:
                description += " · default"
            prompt = Text(f"{level:<12}", style="bold")
            prompt.append(description, style="dim")
            choices.append(Choice(level, prompt, f"{level} {description}"))
        super().__init__(
            "Thinking Level",  # Pi's title
            choices,
            filter_placeholder="type to filter levels",
            initial=current,
            hint=SET_AS_DEFAULT_HINT,
            message="Shift+Tab cycles thinking levels in-session",
        )

    def on_mount(self) -> None:
        super().on_mount()
        cycle = keys_in_force(self).hint("app.thinking.cycle")  # the user's key for it (Pi says it so)
        self.query_one("#message", Static).update(Text(f"{cycle} cycles thinking levels in-session"))


class ForkPicker(ListScreen):
    """The user messages of the current branch, newest first: /fork starts a new session before one."""

    def __init__(self, messages: Sequence[tuple[str, str]]) -> None:
        choices = [Choice(entry_id, one_line(text, 100)) for entry_id, text in reversed(messages)]
        super().__init__(
            "Fork from which message? (the new session starts just before it)",
            choices,
            filter_placeholder="type to filter messages",
        )


class TreeSearch(Input):
    """The tree's search line; the keys of app.tree.editLabel (Shift+L, typed as ``L``) and
    app.tree.toggleLabelTimestamp (Shift+T) act instead of typing, as in Pi."""

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if isinstance(screen, TreePicker):
            keys = keys_in_force(self)
            pressed = event.character if event.character in ("L", "T") else event.key
            action = (
                screen.action_edit_label
                if keys.matches(pressed, "app.tree.editLabel")
                else screen.action_toggle_label_times
                if keys.matches(pressed, "app.tree.toggleLabelTimestamp")
                else None
            )
            if action is not None:
                event.stop()
                event.prevent_default()
                action()
                return
        await super()._on_key(event)


TREE_PAGE_IDS = ("tui.select.pageUp", "tui.select.pageDown")
"""The tree pages by a screenful (``action_page``) where other lists move ten rows."""


class TreePicker(ListScreen):
    """/tree: every entry of the session; Enter moves the leaf there. Ctrl+O cycles what is shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(b for b in ListScreen.BINDINGS if getattr(b, "id", None) not in TREE_PAGE_IDS),
        Binding("home", "edge(0)", show=False, priority=True),
        Binding("end", "edge(1)", show=False, priority=True),
        keyed("app.tree.filter.cycleForward", "cycle_filter"),
        keyed("app.tree.filter.cycleBackward", "cycle_filter(-1)"),
        keyed("app.tree.filter.userOnly", "set_filter('user')"),
        keyed("app.tree.filter.noTools", "set_filter('no-tools')"),
        keyed("app.tree.filter.all", "set_filter('all')"),
        keyed("app.tree.filter.default", "set_filter('default')"),
        keyed("app.tree.filter.labeledOnly", "set_filter('labeled')"),
        keyed("app.tree.editLabel", "edit_label"),
        keyed("app.tree.toggleLabelTimestamp", "toggle_label_times"),
        keyed("app.message.copy", "copy_entry"),
        keyed("app.tree.foldOrUp", "fold_or_up"),
        keyed("app.tree.unfoldOrDown", "unfold_or_down"),
        keyed("tui.editor.cursorLeft", "page(-1)"),
        keyed("tui.select.pageUp", "page(-1)"),
        keyed("tui.editor.cursorRight", "page(1)"),
        keyed("tui.select.pageDown", "page(1)"),
    ]

    filter_input_class = TreeSearch

    def __init__(
        self,
        store: SessionStore,
        set_label: Callable[[str, str | None], None] | None = None,
        view: TreeView | None = None,
        initial: str | None = None,
    ) -> None:
        """``view``: the rows, computed in a worker thread (``open_tree_picker``); None computes them here.
        ``initial``: the entry highlighted first (None: where the session is)."""
        self.store = store
        self.set_label = set_label
        self.mode: PickerFilter = "default"
        view = view or tree_view(store, self.mode)
        self.current_id: str | None = view.current_id
        """The shown entry that stands for where the session is now: the leaf, or its nearest shown
        ancestor when the leaf itself is hidden (extension state, labels...)."""
        self.here_ids: set[str] = view.here_ids
        """Entries that stand for "where the session is now": choosing one of them changes nothing."""
        self.rows_loading = False
        """True while the rows of another filter (or after a label edit) are computed off the event loop."""
        self._pick_when_loaded = False
        self.view = view
        self.folded: set[str] = set()
        """Entries whose branch segment is folded (Ctrl+Left; Pi's app.tree.foldOrUp)."""
        self.label_times = False
        """Shift+T (app.tree.toggleLabelTimestamp): when each label was set, beside it."""
        super().__init__(
            "Session tree: pick where to continue from",
            self._choices(),
            filter_placeholder="type to search the tree (text and labels)",
            initial=initial or self.current_id,
            hint=self._hint(),
        )

    def _hint(self) -> str:
        key = self.key_hint
        return (
            f"↑↓ move · ←→ page · {key('app.tree.foldOrUp')}/{key('app.tree.unfoldOrDown')} fold/branch · "
            f"enter go there · {key('app.tree.editLabel')} label · {key('app.tree.toggleLabelTimestamp')} "
            f"label time · {key('app.message.copy')} copy · {key('app.tree.filter.cycleForward')} filter: "
            f"default, no tools, user, labeled, all · {key('tui.select.cancel')} cancel"
        )

    def _choices(self) -> list[Choice]:
        view = self.view
        return _tree_choices(
            view.rows, view.current_id, self.folded, view.label_times if self.label_times else None
        )

    def refill(self, keep: str | None = None) -> None:
        super().refill(keep)
        if self.folded:  # what is under a folded entry is left out
            hidden = folded_away(self.view.rows, self.folded)
            if hidden:
                self.shown = [c for c in self.shown if c.id not in hidden]
                self._show_window(next((i for i, c in enumerate(self.shown) if c.id == keep), 0))

    def _redraw(self, keep: str | None) -> None:
        self.choices = self._choices()
        self.refill(keep)
        self._scroll_to_highlight()

    def action_copy_entry(self) -> None:
        """Ctrl+X (Pi's app.message.copy in the tree): the highlighted entry's text to the clipboard."""
        choice = self.highlighted_choice()
        entry = self.store.get_entry(choice.id) if choice is not None else None
        if entry is None:
            return
        text = entry_text(entry)
        self.app.copy_to_clipboard(text)
        self.query_one("#hint", Static).update(Text(f"Copied {len(text):,} characters to the clipboard"))

    def action_toggle_label_times(self) -> None:
        current = self.highlighted_choice()
        self.label_times = not self.label_times
        self._redraw(current.id if current else None)

    def action_page(self, step: int) -> None:
        """Left / Right: a page up or down (Pi pages the tree with the arrow keys; the search line has no
        cursor to move)."""
        rows = max(1, int((self.app.size.height or 24) * 0.7) - 4)
        self.action_move(step * rows)

    def action_fold_or_up(self) -> None:
        """Ctrl+Left: fold the highlighted branch segment, or go to the start of the segment above."""
        current = self.highlighted_choice()
        if current is None:
            return
        rows = self._shown_rows()
        if foldable(current.id, rows) and current.id not in self.folded:
            self.folded.add(current.id)
            self._redraw(current.id)
            return
        target = segment_start(current.id, rows, "up")
        self.highlight(next((i for i, c in enumerate(self.shown) if c.id == target), 0))

    def action_unfold_or_down(self) -> None:
        """Ctrl+Right: unfold the highlighted entry, or go to the start of the next branch segment."""
        current = self.highlighted_choice()
        if current is None:
            return
        if current.id in self.folded:
            self.folded.discard(current.id)
            self._redraw(current.id)
            return
        target = segment_start(current.id, self._shown_rows(), "down")
        index = next((i for i, c in enumerate(self.shown) if c.id == target), None)
        if index is not None:
            self.highlight(index)

    def _shown_rows(self) -> list[TreeRow]:
        shown = {c.id for c in self.shown}
        return [row for row in self.view.rows if row.entry_id in shown]

    def on_mount(self) -> None:
        # ListScreen.on_mount (which fills the list) runs after this one: Textual walks the MRO itself.
        self.call_after_refresh(self._scroll_to_highlight)

    def _scroll_to_highlight(self) -> None:
        options = self.option_list
        if options.highlighted is not None:
            options.scroll_to_highlight()

    def action_edge(self, end: int) -> None:
        if self.shown:
            self.highlight(len(self.shown) - 1 if end else 0)

    def action_cycle_filter(self, step: int = 1) -> None:
        """Ctrl+O / Shift+Ctrl+O: the next / previous filter (Pi's tree filter cycle)."""
        modes = PICKER_FILTERS
        self._apply(modes[(modes.index(self.mode) + step) % len(modes)])

    def action_set_filter(self, mode: str) -> None:
        chosen: PickerFilter = next((f for f in PICKER_FILTERS if f == mode), "default")
        self._apply("default" if chosen == self.mode else chosen)

    def action_edit_label(self) -> None:
        """Shift+L: set, change or (left empty) remove the label of the highlighted entry."""
        choice = self.highlighted_choice()
        if choice is None or self.set_label is None:
            return
        entry_id = choice.id
        current = next((n.label for n in _walk_nodes(self.store.tree()) if n.entry.id == entry_id), None)

        def done(answer: Any) -> None:
            if answer is None or self.set_label is None:
                return
            self.set_label(entry_id, answer.strip() or None)
            self._reload(entry_id)

        self.app.push_screen(
            InputScreen("Label for this entry (empty removes it)", "a short name", current or ""), done
        )

    def _apply(self, mode: PickerFilter) -> None:
        current = self.highlighted_choice()
        self.mode = mode
        self.query_one("#title", Static).update(Text(f"Session tree ({mode}): pick where to continue from"))
        self._reload(current.id if current else self.current_id)

    def _reload(self, keep: str | None) -> None:
        """Recompute the rows for the current filter in a worker thread, then show them keeping ``keep``
        highlighted. Enter pressed meanwhile picks from the new rows."""
        self.rows_loading = True
        mode = self.mode

        async def work() -> None:
            view = await asyncio.to_thread(tree_view, self.store, mode)
            if mode != self.mode:  # another filter was chosen meanwhile: its own reload shows it
                return
            self.view, self.current_id, self.here_ids = view, view.current_id, view.here_ids
            self.folded.clear()
            self._redraw(keep)
            self.rows_loading = False
            if self._pick_when_loaded:
                self._pick_when_loaded = False
                self.pick()

        self.run_worker(work(), group="tree-rows", exclusive=True, exit_on_error=False)

    def pick(self, index: int | None = None) -> None:
        if self.rows_loading:
            self._pick_when_loaded = True
            return
        super().pick(index)


@dataclass
class TreeView:
    """What the tree picker shows for one filter."""

    rows: list[TreeRow]
    current_id: str | None
    here_ids: set[str]
    label_times: dict[str, str]
    """Entry id → when its label was set (ISO time)."""

    @property
    def choices(self) -> list[Choice]:
        return _tree_choices(self.rows, self.current_id)


def children_of(rows: Sequence[TreeRow]) -> dict[str | None, list[str]]:
    children: dict[str | None, list[str]] = {}
    for row in rows:
        children.setdefault(row.parent_id, []).append(row.entry_id)
    return children


def foldable(entry_id: str, rows: Sequence[TreeRow]) -> bool:
    """As Pi: an entry with shown children that starts a segment (at the top, or one of several children)."""
    children = children_of(rows)
    if not children.get(entry_id):
        return False
    parent = next((row.parent_id for row in rows if row.entry_id == entry_id), None)
    return parent is None or len(children.get(parent, [])) > 1


def folded_away(rows: Sequence[TreeRow], folded: set[str]) -> set[str]:
    """The entries under a folded one (rows come parents first)."""
    hidden: set[str] = set()
    for row in rows:
        if row.parent_id is not None and (row.parent_id in folded or row.parent_id in hidden):
            hidden.add(row.entry_id)
    return hidden


def segment_start(entry_id: str, rows: Sequence[TreeRow], direction: Literal["up", "down"]) -> str:
    """Where Ctrl+Left / Ctrl+Right go when there is nothing to fold: the start of the branch segment above
    (or the top), or the first entry after the next branch point (or the last entry of the line)."""
    children = children_of(rows)
    parent = {row.entry_id: row.parent_id for row in rows}
    order = {row.entry_id: i for i, row in enumerate(rows)}
    current = entry_id
    if direction == "down":
        while True:
            below = children.get(current, [])
            if not below:
                return current
            if len(below) > 1:
                return below[0]
            current = below[0]
    while True:
        up = parent.get(current)
        if up is None:
            return current
        if len(children.get(up, [])) > 1 and order[current] < order[entry_id]:
            return current
        current = up


def tree_view(store: SessionStore, mode: PickerFilter) -> TreeView:
    """The picker's rows for ``mode``, where the session is now, and which entries stand for it. Walks the
    whole tree (about a second for 20,000 entries): call it in a worker thread."""
    branch = store.branch()
    path = [e.id for e in branch]
    tree_mode: TreeFilter = "all" if mode == "labeled" else mode
    rows = tree_rows(store.tree(), store.leaf_id, set(path), tree_mode)
    if mode == "labeled":
        parents = {row.entry_id: row.parent_id for row in rows}
        rows = [row for row in rows if row.label]
        labelled = {row.entry_id for row in rows}
        for row in rows:  # the nearest labelled entry above
            up = row.parent_id
            while up is not None and up not in labelled:
                up = parents.get(up)
            row.parent_id = up
    shown = {row.entry_id for row in rows}
    current_id = next((entry_id for entry_id in reversed(path) if entry_id in shown), None)
    here_ids = {store.leaf_id} if store.leaf_id else set()
    for entry in reversed(branch):  # the leaf and the bookkeeping entries just above it
        here_ids.add(entry.id)
        described = describe_entry(entry)
        if described is not None and described[0] != "meta":
            break
    label_times = {e.target_id: e.timestamp for e in store.entries() if isinstance(e, LabelEntry) and e.label}
    return TreeView(rows, current_id, here_ids, label_times)


async def open_tree_picker(
    store: SessionStore,
    set_label: Callable[[str, str | None], None] | None = None,
    initial: str | None = None,
) -> TreePicker:
    """A ``TreePicker`` whose rows were computed in a worker thread (``initial``: the entry highlighted first,
    else where the session is)."""
    view = await asyncio.to_thread(tree_view, store, "default")
    return TreePicker(store, set_label, view, initial)


def _tree_choices(
    rows: Sequence[TreeRow],
    current_id: str | None,
    folded: set[str] | None = None,
    label_times: dict[str, str] | None = None,
) -> list[Choice]:
    choices = []
    for row in rows:
        current = row.entry_id == current_id
        prompt = Text("  " * min(row.depth, MAX_TREE_INDENT))
        if folded and row.entry_id in folded:
            prompt.append("⊞ ", style="bold")
        marker = "● " if current else ("│ " if row.on_path else "  ")
        prompt.append(marker, style="green" if current else "dim")
        style = {"user": "bold", "tool": "dim", "meta": "dim italic", "summary": "italic"}.get(row.kind, "")
        if not row.on_path:
            style = (style + " dim").strip()
        prompt.append(row.text, style=style)
        if row.label:
            prompt.append(f"  [{row.label}]", style="yellow")
            when = label_times.get(row.entry_id) if label_times is not None else None
            if when:
                prompt.append(f" {label_time(when)}", style="dim")
        choices.append(Choice(row.entry_id, prompt, f"{row.text} {row.label or ''}"))
    return choices


def label_time(iso: str) -> str:
    """A label's time as Pi shows it (local time): ``14:05`` today, ``3/7 14:05`` this year, else
    ``25/3/7 14:05``."""
    from datetime import datetime

    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return iso
    now = datetime.now().astimezone()
    time_of_day = when.strftime("%H:%M")
    if when.date() == now.date():
        return time_of_day
    day = f"{when.month}/{when.day}"
    return f"{day} {time_of_day}" if when.year == now.year else f"{when.year % 100:02d}/{day} {time_of_day}"


def entry_text(entry: SessionEntry) -> str:
    """An entry's whole text (a message's, a summary's), for copying; else the tree's one-line description."""
    from caddie.ai.messages import AssistantMessage
    from caddie.modes.interactive.render import content_text

    if isinstance(entry, MessageEntry):
        message = entry.message
        if isinstance(message, AssistantMessage):
            return message.text()
        content = getattr(message, "content", None)
        if content is not None:
            return content_text(content)
    summary = getattr(entry, "summary", None)
    if isinstance(summary, str):
        return summary
    described = describe_entry(entry)
    return described[1] if described is not None else entry.type
