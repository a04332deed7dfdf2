"""Modal dialogs: confirm, select (with a filter for long lists), one-line input and a multi-line editor.

Each is a ``ModalScreen`` whose result is what the matching ``ExtensionUI`` call returns. Esc (and
Ctrl+C, handled by the app) cancels: ``False`` for confirm, ``None`` for the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from caddie.modes.interactive.editor import NEWLINE_KEYS
from caddie.modes.interactive.keymap import Keybindings, keyed, textual_keymap

DIALOG_CSS = """
CancellableScreen { align: center middle; }
CancellableScreen > #dialog {
    width: 90%; max-width: 110; height: auto; max-height: 95%;
    border: round $accent; background: $surface; padding: 0 1;
}
CancellableScreen #title { text-style: bold; }
CancellableScreen #message { margin-bottom: 1; }
CancellableScreen #hint { color: $text-muted; }
CancellableScreen OptionList {
    height: auto; max-height: 70vh; border: none; padding: 0; background: $surface;
}
CancellableScreen OptionList:focus { border: none; }
CancellableScreen Input { border: none; padding: 0 1; height: 1; background: $boost; margin-bottom: 1; }
CancellableScreen Input:focus { border: none; }
CancellableScreen TextArea { height: auto; min-height: 3; max-height: 50vh; border: none; }
CancellableScreen TextArea:focus { border: none; }
"""


def keys_in_force(node: DOMNode) -> Keybindings:
    """The running app's key bindings (keybindings.json, read again on /reload); Pi's defaults outside one."""
    try:
        keys = getattr(node.app, "keys", None)
    except (RuntimeError, AttributeError):  # NoActiveAppError: built outside a running app
        return Keybindings()
    return keys if isinstance(keys, Keybindings) else Keybindings()


class CancellableScreen(ModalScreen[Any]):
    """A modal that Esc or Ctrl+C (Pi's ``tui.select.cancel``) closes with ``cancel_value``.

    Its keys and its subclasses' are bindings by Pi's ids (``keyed``): when it opens, the keys of the
    user's keybindings.json replace Pi's defaults (Textual's keymap)."""

    DEFAULT_CSS = DIALOG_CSS
    BINDINGS: ClassVar[list[BindingType]] = [keyed("tui.select.cancel", "cancel")]
    cancel_value: Any = None

    def on_mount(self) -> None:
        self.app.set_keymap(textual_keymap(keys_in_force(self)))

    def key_hint(self, binding_id: str) -> str:
        """The first key of ``binding_id`` as hints write it (``ctrl+s``), or ``unbound``."""
        return keys_in_force(self).hint(binding_id).lower()

    def action_cancel(self) -> None:
        self.dismiss(self.cancel_value)

    def start_countdown(self, seconds: float) -> None:
        """Show the seconds left after the title, as Pi's timed dialogs do: ``Title (5s)``."""
        title = self.query("#title").first(Static)
        base = str(title.render())
        left = [max(0, round(seconds))]

        def tick() -> None:
            title.update(Text(f"{base} ({left[0]}s)"))
            left[0] = max(0, left[0] - 1)

        tick()
        self.set_interval(1.0, tick)


@dataclass(slots=True)
class Choice:
    """One row of a list dialog."""

    id: str
    prompt: Text | str
    search: str = ""
    """What the filter matches against (defaults to the prompt's plain text)."""
    folded: str = field(init=False, repr=False)
    """``search`` (or the prompt's plain text) lowercased once, when the row is made: the filter compares
    against it at every keystroke."""

    def __post_init__(self) -> None:
        plain = self.prompt if isinstance(self.prompt, str) else self.prompt.plain
        self.folded = (self.search or plain).lower()


def _one_row(prompt: Text | str, width: int) -> Text:
    """Rows stay one line high: long ones end in an ellipsis."""
    text = Text(prompt) if isinstance(prompt, str) else prompt.copy()
    text.truncate(width, overflow="ellipsis")
    return text


WINDOW = 400
"""Rows a list dialog holds at once (see ``ListScreen._show_window``)."""
EDGE = 20
"""Moving this close to the edge of the window shows the rows beyond it."""


def matches(query: str, folded: str) -> bool:
    """Every whitespace-separated word of the query occurs in ``folded`` (a lowercased haystack, as
    ``Choice.folded``): case-insensitive."""
    return all(word in folded for word in query.lower().split())


class ListScreen(CancellableScreen):
    """A title, an optional filter line and a list; Enter picks the highlighted row's id."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *CancellableScreen.BINDINGS,
        keyed("tui.select.up", "move(-1)"),
        keyed("tui.select.down", "move(1)"),
        keyed("tui.select.pageUp", "move(-10)"),
        keyed("tui.select.pageDown", "move(10)"),
        keyed("tui.select.confirm", "confirm"),
    ]

    filter_input_class: type[Input] = Input
    """The filter line's widget (a picker can take some keys away from typing)."""

    def __init__(
        self,
        title: str,
        choices: Sequence[Choice],
        *,
        filter_placeholder: str | None = "type to filter",
        initial: str | None = None,
        hint: str = "↑↓ move · enter select · esc cancel",
        message: str | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.choices = list(choices)
        self.shown: list[Choice] = list(choices)
        self.window_start = 0
        """Index in ``shown`` of the list widget's first row (a long list shows a window of it)."""
        self.with_filter = filter_placeholder is not None
        self.filter_placeholder = filter_placeholder or ""
        self.initial = initial
        self.hint = hint
        self.message = message

    def compose(self) -> Any:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text), id="title")
            if self.message:
                yield Static(Text(self.message), id="message")
            if self.with_filter:
                yield self.filter_input_class(placeholder=self.filter_placeholder, id="filter")
            yield OptionList(id="choices")
            yield Static(Text(self.hint), id="hint")

    def on_mount(self) -> None:
        self.refill(self.initial)
        if self.with_filter:
            self.query_one("#filter", Input).focus()
        else:
            self.query_one("#choices", OptionList).focus()

    @property
    def option_list(self) -> OptionList:
        return self.query_one("#choices", OptionList)

    def refill(self, keep: str | None = None) -> None:
        query = self.query_one("#filter", Input).value if self.with_filter else ""
        self.shown = [
            c for c in self.choices if matches(query, c.folded)
        ] if query.strip() else list(self.choices)  # fmt: skip
        index = next((i for i, c in enumerate(self.shown) if c.id == keep), 0)
        self._show_window(index)

    def _show_window(self, index: int) -> None:
        """Fill the list widget and highlight ``shown[index]``. A list longer than ``WINDOW`` rows is shown
        as the ``WINDOW`` rows around the highlighted one (moving past them shows the next ones): Textual's
        list measures every row it holds on each change, seconds for the tree of a large session."""
        options = self.option_list
        width = max(20, min(110, int((self.app.size.width or 80) * 0.9)) - 7)  # the dialog's inside
        self.window_start = max(0, min(index - WINDOW // 2, len(self.shown) - WINDOW))
        rows = self.shown[self.window_start : self.window_start + WINDOW]
        options.set_options([Option(_one_row(c.prompt, width), id=str(i)) for i, c in enumerate(rows)])
        # Rows are one line each. A long list fills the dialog's maximum anyway: saying so spares the
        # layout from measuring every row.
        rows_max = max(1, int((self.app.size.height or 24) * 0.7))
        options.styles.height = rows_max if len(rows) > rows_max else "auto"
        if rows:
            options.highlighted = index - self.window_start

    @property
    def highlighted_index(self) -> int | None:
        """The index in ``shown`` of the highlighted row."""
        highlighted = self.option_list.highlighted
        return None if highlighted is None else highlighted + self.window_start

    def highlight(self, index: int) -> None:
        """Highlight ``shown[index]``, moving the window when it is outside (or near the edge) of it."""
        if not self.shown:
            return
        index = max(0, min(len(self.shown) - 1, index))
        inside = index - self.window_start
        rows = len(self.option_list.options)
        near_edge = (inside < EDGE and self.window_start > 0) or (
            inside >= rows - EDGE and self.window_start + rows < len(self.shown)
        )
        if 0 <= inside < rows and not near_edge:
            self.option_list.highlighted = inside
        else:
            self._show_window(index)

    @on(Input.Changed, "#filter")
    def _filter_changed(self) -> None:
        self.refill()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.pick()

    @on(OptionList.OptionSelected, "#choices")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.pick(event.option_index + self.window_start)

    def action_confirm(self) -> None:
        self.pick()

    def action_move(self, step: int) -> None:
        current = self.highlighted_index
        self.highlight((current if current is not None else 0) + step)

    def highlighted_choice(self) -> Choice | None:
        index = self.highlighted_index
        return self.shown[index] if index is not None and 0 <= index < len(self.shown) else None

    def pick(self, index: int | None = None) -> None:
        if index is not None and 0 <= index < len(self.shown):
            self.dismiss(self.shown[index].id)
            return
        choice = self.highlighted_choice()
        if choice is not None:
            self.dismiss(choice.id)


class SelectScreen(ListScreen):
    """``ui.select``: the chosen option's text, or None."""

    def __init__(self, title: str, options: Sequence[str]) -> None:
        super().__init__(
            title,
            [Choice(o, o) for o in options],
            filter_placeholder="type to filter" if len(options) > 8 else None,
        )


class ConfirmScreen(ListScreen):
    """``ui.confirm``: Yes / No (keys y and n work too); Esc answers No."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *ListScreen.BINDINGS,
        Binding("y", "answer(True)", show=False),
        Binding("n", "answer(False)", show=False),
    ]
    cancel_value = False

    def __init__(self, title: str, message: str) -> None:
        super().__init__(
            title,
            [Choice("yes", "Yes"), Choice("no", "No")],
            filter_placeholder=None,
            message=message or None,
            hint="y yes · n no · enter select · esc no",
        )

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def pick(self, index: int | None = None) -> None:
        chosen = self.shown[index] if index is not None else self.highlighted_choice()
        self.dismiss(chosen is not None and chosen.id == "yes")


class InputScreen(CancellableScreen):
    """``ui.input``: one line of text, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *CancellableScreen.BINDINGS,
        keyed("tui.select.confirm", "confirm"),
    ]

    def __init__(self, title: str, placeholder: str | None = None, value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder or ""
        self.value = value

    def compose(self) -> Any:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text), id="title")
            yield Input(self.value, placeholder=self.placeholder, id="value")
            yield Static(Text("enter accept · esc cancel"), id="hint")

    def on_mount(self) -> None:
        self.query_one("#value", Input).focus()

    @on(Input.Submitted, "#value")
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_confirm(self) -> None:
        self.dismiss(self.query_one("#value", Input).value)


class DialogEditor(TextArea):
    """A TextArea where Enter submits and Shift+Enter / Alt+Enter / Ctrl+J insert a newline."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            screen = self.screen
            if isinstance(screen, EditorScreen):
                screen.dismiss(self.text)
            return
        if event.key in NEWLINE_KEYS or event.key == "alt+enter":
            event.stop()
            event.prevent_default()
            start, end = self.selection
            self.replace("\n", start, end)
            return
        await super()._on_key(event)


class EditorScreen(CancellableScreen):
    """``ui.editor``: multi-line text, or None."""

    def __init__(self, title: str, prefill: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.prefill = prefill or ""

    def compose(self) -> Any:
        with Vertical(id="dialog"):
            yield Static(Text(self.title_text), id="title")
            yield DialogEditor(self.prefill, id="text", soft_wrap=True)
            yield Static(Text("enter accept · shift+enter newline · esc cancel"), id="hint")

    def on_mount(self) -> None:
        editor = self.query_one("#text", DialogEditor)
        editor.focus()
        editor.move_cursor(editor.document.end)


class SecretInputScreen(InputScreen):
    """``InputScreen`` whose field shows dots, never the text."""

    def on_mount(self) -> None:
        field = self.query_one("#value", Input)
        field.password = True
        field.focus()
