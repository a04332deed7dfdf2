"""Key names, one spelling per key: Pi's (``shift+ctrl+P``, ``pageUp``, ``ctrl+]``, as keybindings.json and
extensions write them) and Textual's (``ctrl+shift+p``, ``pageup``, ``ctrl+right_square_bracket``, ``L`` for
Shift+L, as the terminal reports them) compare equal once canonical."""

from __future__ import annotations

_MODIFIERS = ("ctrl", "alt", "shift", "super")
_BASE_ALIASES = {
    "esc": "escape", "return": "enter", "pageup": "pageup", "pagedown": "pagedown", "del": "delete",
    "ins": "insert", "-": "minus", "=": "equals_sign", "[": "left_square_bracket",
    "]": "right_square_bracket", "\\": "backslash", ";": "semicolon", "'": "apostrophe", ",": "comma",
    ".": "full_stop", "/": "slash", "`": "grave_accent", "!": "exclamation_mark", "@": "at",
    "#": "number_sign", "$": "dollar_sign", "%": "percent_sign", "^": "circumflex_accent",
    "&": "ampersand", "*": "asterisk", "(": "left_parenthesis", ")": "right_parenthesis",
    "_": "underscore", "+": "plus", "|": "vertical_line", "~": "tilde", "{": "left_curly_bracket",
    "}": "right_curly_bracket", ":": "colon", "<": "less_than_sign", ">": "greater_than_sign",
    "?": "question_mark", "meta": "super",
}  # fmt: skip
EQUIVALENT = {"ctrl+minus": "ctrl+underscore", "ctrl+shift+minus": "ctrl+underscore"}
"""Keys terminals send as another: Ctrl+- arrives as Ctrl+_ without the kitty keyboard protocol."""


def canonical_key(key: str) -> str:
    """One spelling per key, for Pi's names (``shift+ctrl+P``, ``pageUp``, ``ctrl+]``) and Textual's
    (``ctrl+shift+p``, ``pageup``, ``ctrl+right_square_bracket``, ``L`` for Shift+L) alike."""
    text = key.strip()
    if text.endswith("++"):  # "ctrl++": the plus key
        parts = [*text[:-2].split("+"), "+"]
    else:
        parts = text.split("+") if text != "+" else ["+"]
    *mods, base = parts
    modifiers = {m.lower() for m in mods if m}
    if len(base) == 1 and base.isalpha() and base.isupper():
        modifiers.add("shift")
    base = base if len(base) == 1 and not base.isalpha() else base.lower()
    base = _BASE_ALIASES.get(base, base)
    if "meta" in modifiers:
        modifiers.discard("meta")
        modifiers.add("super")
    ordered = [m for m in _MODIFIERS if m in modifiers]
    return "+".join([*ordered, base])


def textual_key(key: str) -> str:
    """``key`` as Textual names it (for Pilot, hints and Textual bindings)."""
    canonical = canonical_key(key)
    return EQUIVALENT.get(canonical, canonical)


def display_key(key: str) -> str:
    """``Ctrl+Shift+P``, ``PageUp``, ``Alt+Enter``: how a key is written for people."""
    names = {"pageup": "PageUp", "pagedown": "PageDown", "escape": "Esc", "minus": "-",
             "right_square_bracket": "]", "left_square_bracket": "[", "backspace": "Backspace"}  # fmt: skip
    return "+".join(
        names.get(p, p.capitalize() if len(p) > 1 else p.upper()) for p in canonical_key(key).split("+")
    )
