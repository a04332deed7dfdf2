"""What extensions draw with in the interactive UI (Pi's ``ctx.ui`` components), and what a mode without a
screen answers for it.

A **component** is Pi's: an object with ``render(width) -> list[str]`` (lines, ANSI colours allowed), and
optionally ``handle_input(key)`` (the keys while it has the focus) and ``invalidate()`` (drop caches: the
theme changed). Factories receive a ``TuiHandle`` (``request_render()``, the screen size), the current
``ThemeView`` (``theme.fg("accent", text)`` …), the ``Keybindings`` view (``keybindings.matches(key,
"tui.select.confirm")``) and, for ``ui.custom``, ``done(value)`` that closes the component with its result.

``UnavailableUI`` is the base of every ``ExtensionUI`` without a terminal (print, json, RPC, ACP): each
call a mode cannot honour is a no-op that answers as Pi's RPC mode does (``custom`` → None, ``set_theme`` →
a failure with the reason, ``get_tools_expanded`` → False), and ``supports(feature)`` says beforehand
which features are there, so an extension can check instead of guessing (``ctx.has_ui`` style).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from caddie.config.key_names import canonical_key
from caddie.errors import ExtensionError

Feature: TypeAlias = Literal[
    "dialogs",
    "custom",
    "overlay",
    "widget_component",
    "footer",
    "header",
    "editor_component",
    "autocomplete",
    "terminal_input",
    "working_indicator",
    "hidden_thinking_label",
    "paste",
    "themes",
    "tools_expanded",
    "markdown_transformers",
]
"""What ``ui.supports(feature)`` can be asked about (``markdown_transformers``: ``api.register_markdown_transformer``
is applied; only the interactive UI draws markdown)."""
FEATURES: frozenset[str] = frozenset(Feature.__args__)  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class KeyInput:
    """One key press, as a component's ``handle_input`` gets it."""

    key: str
    """The key's name: ``enter``, ``escape``, ``up``, ``ctrl+c``, ``a``, ``shift+l`` …"""
    character: str | None = None
    """The character it types, if any."""


@runtime_checkable
class Component(Protocol):
    """Pi's component: lines for a width (ANSI colours allowed)."""

    def render(self, width: int) -> list[str]: ...


class TuiHandle(Protocol):
    """The screen as a component sees it."""

    @property
    def width(self) -> int: ...

    @property
    def height(self) -> int: ...

    def request_render(self) -> None:
        """Draw the component again (after its state changed outside ``handle_input``)."""
        ...

    def suspend(self) -> AbstractContextManager[None]:
        """``with tui.suspend(): subprocess.run(["vim", path])`` — the terminal for another program meanwhile
        (Pi's ``tui.stop()`` … ``tui.start()``): caddie's screen is put away and drawn again afterwards. Raises
        ``TerminalNotSuspendable`` where that cannot be done (no real terminal, as in tests)."""
        ...


class TerminalNotSuspendable(ExtensionError):
    """``tui.suspend()`` where the terminal cannot be handed to another program."""


class KeybindingsView(Protocol):
    def matches(self, key: str, binding_id: str) -> bool: ...

    def keys(self, binding_id: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class ThemeInfo:
    name: str
    path: str | None
    """The theme file (None: built in)."""


@dataclass(frozen=True, slots=True)
class ThemeResult:
    success: bool
    error: str | None = None


_SGR_RESET = "\x1b[0m"


class ThemeView:
    """Pi's ``theme`` for drawing: colour tokens (``accent``, ``muted``, ``dim``, ``success``, ``error``,
    ``warning``, ``text`` and Pi's others) as ANSI colours, and text styles."""

    def __init__(self, name: str, colors: dict[str, str], dark: bool = True) -> None:
        self.name = name
        self.colors = dict(colors)
        """Token → ``#rrggbb``."""
        self.dark = dark

    def _rgb(self, token: str) -> tuple[int, int, int] | None:
        value = self.colors.get(token) or self.colors.get(_FALLBACK_TOKENS.get(token, ""), "")
        if not value.startswith("#") or len(value) != 7:
            return None
        return int(value[1:3], 16), int(value[3:5], 16), int(value[5:7], 16)

    def fg(self, token: str, text: str) -> str:
        rgb = self._rgb(token)
        if token == "dim":
            return f"\x1b[2m{text}\x1b[22m"
        return text if rgb is None else f"\x1b[38;2;{rgb[0]};{rgb[1]};{rgb[2]}m{text}\x1b[39m"

    def bg(self, token: str, text: str) -> str:
        rgb = self._rgb(token)
        return text if rgb is None else f"\x1b[48;2;{rgb[0]};{rgb[1]};{rgb[2]}m{text}\x1b[49m"

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[22m"

    def italic(self, text: str) -> str:
        return f"\x1b[3m{text}\x1b[23m"

    def underline(self, text: str) -> str:
        return f"\x1b[4m{text}\x1b[24m"

    def strikethrough(self, text: str) -> str:
        return f"\x1b[9m{text}\x1b[29m"

    def inverse(self, text: str) -> str:
        return f"\x1b[7m{text}\x1b[27m"


_FALLBACK_TOKENS = {
    "toolTitle": "accent", "mdHeading": "accent", "customMessageLabel": "accent", "customMessageText": "text",
    "borderAccent": "accent", "border": "muted", "thinkingText": "muted", "userMessageText": "text",
}  # fmt: skip
DEFAULT_THEME = ThemeView(
    "dark",
    {"accent": "#0178d4", "muted": "#7a7a8c", "success": "#4ebf71", "error": "#e0585b", "warning": "#e0b341",
     "text": "#e0e0e0"},
)  # fmt: skip
"""The theme extensions see in a mode without a screen (Pi's dark colours)."""


@dataclass(slots=True)
class OverlayOptions:
    """Where ``ui.custom(..., overlay=True)`` floats (Pi's ``OverlayOptions``). Sizes and positions are
    cells or a percentage of the screen (``"50%"``); ``row`` / ``col`` as a percentage put the box that far
    between the top and bottom (left and right) edges."""

    anchor: Literal[
        "center",
        "top-left",
        "top-right",
        "bottom-left",
        "bottom-right",
        "top-center",
        "bottom-center",
        "left-center",
        "right-center",
        "top",
        "bottom",
    ] = "center"
    """Where the box sits when ``row`` / ``col`` are not given (``top`` and ``bottom``: caddie's names for
    ``top-center`` and ``bottom-center``)."""
    width: int | str | None = None
    """Cells, or a percentage of the screen (``"50%"``); None: 80 cells at most, as Pi."""
    min_width: int | None = None
    max_height: int | str | None = None
    """Rows, or a percentage of the screen; a taller component scrolls inside the box."""
    offset_x: int = 0
    """Cells to the right of where ``anchor`` / ``col`` put the box (negative: left)."""
    offset_y: int = 0
    """Rows below where ``anchor`` / ``row`` put the box (negative: up)."""
    row: int | str | None = None
    col: int | str | None = None
    margin: int | OverlayMargin = 1
    """Cells kept free at the screen's edges (one number for all four, or an ``OverlayMargin``)."""
    visible: Callable[[int, int], bool] | None = None
    """``visible(screen_width, screen_height)``: the box shows only while this is true."""
    non_capturing: bool = False
    """The keys stay with the editor while the box shows (``handle.focus()`` gives them to it)."""


@dataclass(frozen=True, slots=True)
class OverlayMargin:
    top: int = 0
    right: int = 0
    bottom: int = 0
    left: int = 0


OverlayOptionsSource: TypeAlias = "OverlayOptions | Callable[[], OverlayOptions]"
"""``ui.custom``'s ``overlay_options``: the options, or a function that gives them each time the overlay is
laid out (when the screen or the component changes), as Pi's."""


class OverlayHandle(Protocol):
    def focus(self) -> None: ...

    def unfocus(self) -> None: ...

    def is_focused(self) -> bool: ...

    def set_hidden(self, hidden: bool) -> None: ...

    def is_hidden(self) -> bool: ...

    def hide(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Suggestion:
    value: str
    label: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class Suggestions:
    prefix: str
    """The text before the cursor that accepting a suggestion replaces."""
    items: list[Suggestion] = field(default_factory=list)


class AutocompleteProvider(Protocol):
    """Pi's autocomplete provider, in Python: suggestions for the text before the cursor (None: none)."""

    def get_suggestions(self, lines: list[str], line: int, column: int) -> Any:
        """``Suggestions`` (or an awaitable of them), or None to let the provider below answer."""
        ...


def call_leading(function: Callable[..., Any], *args: Any) -> Any:
    """``function`` called with as many of ``args`` (from the first) as it takes: a factory or renderer
    written before Pi's later arguments (the footer data, a tool renderer's context) keeps working."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it everything
        return function(*args)
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return function(*args)
    return function(*args[: len(positional)])


ComponentFactory: TypeAlias = Callable[..., Any]
"""``(tui, theme) -> Component`` for widgets and the header, ``(tui, theme[, footer_data])`` for the footer
(``FooterData``: ``get_git_branch()``, ``get_extension_statuses()``, ``get_available_provider_count()``,
``on_branch_change(callback)``); ``(tui, theme, keybindings, done)``
for ``ui.custom``; ``(tui, theme, keybindings) -> CustomEditor`` for ``ui.set_editor_component``."""
AutocompleteFactory: TypeAlias = Callable[[AutocompleteProvider], AutocompleteProvider]
"""Receives the provider below it (the built-in one, or an earlier extension's) and returns its own."""
TerminalInputHandler: TypeAlias = Callable[[KeyInput], Any]
"""Sees every key first; returning True consumes it (Pi's ``{consume: true}``)."""


class CustomEditor:
    """The base of an editor an extension puts in place of caddie's (``ui.set_editor_component``; Pi's
    ``CustomEditor``): override ``handle_input`` and call ``super().handle_input(key)`` for the keys the
    built-in editor should handle (typing, app keys such as Esc, Ctrl+D, model switching); hand on another
    key (``super().handle_input(KeyInput("left"))`` for a vim ``h``) to have the built-in editor do that
    instead. ``mode_label`` is shown on the editor's top border, ``status_label`` on its bottom one."""

    def __init__(self, tui: TuiHandle, theme: ThemeView, keybindings: KeybindingsView) -> None:
        self.tui = tui
        self.theme = theme
        self.keybindings = keybindings
        self._default: Callable[[KeyInput], None] | None = None
        self.mode_label: str | None = None
        """Shown in the editor's top border (e.g. ``NORMAL`` for a vim mode; ANSI colours kept); None shows
        nothing."""
        self.status_label: str | None = None
        """Shown in the editor's bottom border (a model, a branch …); None shows nothing. Both labels are read
        again after every key and on ``tui.request_render()``."""

    def attach(self, default: Callable[[KeyInput], None]) -> None:
        """Called by the host with the built-in handling of a key."""
        self._default = default

    def handle_input(self, key: KeyInput) -> None:
        if self._default is not None:
            self._default(key)


class UnavailableUI:
    """The TUI-only calls of ``ExtensionUI`` for a mode without a screen (see the module docstring)."""

    available_features: frozenset[str] = frozenset({"dialogs"})
    """The features this UI honours (subclasses say which)."""

    def supports(self, feature: str) -> bool:
        return feature in self.available_features

    def on_terminal_input(self, handler: TerminalInputHandler) -> Callable[[], None]:
        return lambda: None

    def set_working_visible(self, visible: bool) -> None:
        pass

    def set_working_indicator(
        self, frames: Sequence[str] | None = None, interval_ms: int | None = None
    ) -> None:
        pass

    def set_hidden_thinking_label(self, label: str | None) -> None:
        pass

    def set_footer(self, factory: ComponentFactory | None) -> None:
        pass

    def set_header(self, factory: ComponentFactory | None) -> None:
        pass

    async def custom(
        self,
        factory: ComponentFactory,
        *,
        overlay: bool = False,
        overlay_options: OverlayOptionsSource | None = None,
        on_handle: Callable[[OverlayHandle], None] | None = None,
    ) -> Any:
        return None

    def paste_to_editor(self, text: str) -> None:
        setter = getattr(self, "set_editor_text", None)
        if callable(setter):
            setter(text)

    def add_autocomplete_provider(self, factory: AutocompleteFactory) -> None:
        pass

    def set_editor_component(self, factory: ComponentFactory | None) -> None:
        pass

    def get_editor_component(self) -> ComponentFactory | None:
        return None

    @property
    def theme(self) -> ThemeView:
        return DEFAULT_THEME

    def get_all_themes(self) -> list[ThemeInfo]:
        return []

    def get_theme(self, name: str) -> ThemeView | None:
        return None

    def set_theme(self, theme: str | ThemeView) -> ThemeResult:
        return ThemeResult(False, "Theme switching is not available in this mode (no terminal UI)")

    def get_tools_expanded(self) -> bool:
        return False

    def set_tools_expanded(self, expanded: bool) -> None:
        pass


def matches_key(key: KeyInput | str, spec: str) -> bool:
    """Whether a key press is ``spec`` (Pi's key names: ``ctrl+c``, ``escape``, ``shift+enter``, ``pageUp``)."""
    name = key.key if isinstance(key, KeyInput) else key
    return canonical_key(name) == canonical_key(spec)
