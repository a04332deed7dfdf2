"""Key decoding the interactive mode needs beyond Textual's defaults.

Terminals without the kitty keyboard protocol (and tmux by default) send Alt+Enter as ESC CR, which
Textual reads as a plain Enter; Alt+arrows, Alt+Home/End/Delete as xterm's ``CSI 1;3 X``, which Textual
reads as Esc followed by the plain key (so Alt+Up would first abort the agent); Ctrl+Alt+] as ESC GS.
Each must stay distinguishable: Alt+Enter queues a follow-up, Alt+Up restores queued messages, Alt+Left
and Alt+Right move by words, Ctrl+Alt+] jumps backward to a character.
"""

from __future__ import annotations

import enum
from collections.abc import MutableMapping
from typing import Any, cast


class _ExtraKey(enum.StrEnum):
    ALT_ENTER = "alt+enter"
    ALT_UP = "alt+up"
    ALT_DOWN = "alt+down"
    ALT_LEFT = "alt+left"
    ALT_RIGHT = "alt+right"
    ALT_HOME = "alt+home"
    ALT_END = "alt+end"
    ALT_DELETE = "alt+delete"
    ALT_SHIFT_LEFT = "alt+shift+left"
    ALT_SHIFT_RIGHT = "alt+shift+right"
    CTRL_ALT_UP = "ctrl+alt+up"
    CTRL_ALT_DOWN = "ctrl+alt+down"
    CTRL_ALT_LEFT = "ctrl+alt+left"
    CTRL_ALT_RIGHT = "ctrl+alt+right"
    CTRL_ALT_SQUARE_CLOSE = "ctrl+alt+right_square_bracket"


LEGACY_SEQUENCES: dict[str, _ExtraKey] = {
    "\x1b\r": _ExtraKey.ALT_ENTER,
    "\x1b[1;3A": _ExtraKey.ALT_UP,
    "\x1b[1;3B": _ExtraKey.ALT_DOWN,
    "\x1b[1;3C": _ExtraKey.ALT_RIGHT,
    "\x1b[1;3D": _ExtraKey.ALT_LEFT,
    "\x1b[1;3H": _ExtraKey.ALT_HOME,
    "\x1b[1;3F": _ExtraKey.ALT_END,
    "\x1b[3;3~": _ExtraKey.ALT_DELETE,
    "\x1b[1;4C": _ExtraKey.ALT_SHIFT_RIGHT,
    "\x1b[1;4D": _ExtraKey.ALT_SHIFT_LEFT,
    "\x1b[1;7A": _ExtraKey.CTRL_ALT_UP,
    "\x1b[1;7B": _ExtraKey.CTRL_ALT_DOWN,
    "\x1b[1;7C": _ExtraKey.CTRL_ALT_RIGHT,
    "\x1b[1;7D": _ExtraKey.CTRL_ALT_LEFT,
    "\x1b\x1b[A": _ExtraKey.ALT_UP,
    "\x1b\x1b[B": _ExtraKey.ALT_DOWN,
    "\x1b\x1b[C": _ExtraKey.ALT_RIGHT,
    "\x1b\x1b[D": _ExtraKey.ALT_LEFT,
    "\x1b\x1d": _ExtraKey.CTRL_ALT_SQUARE_CLOSE,
}
"""Escape sequences of legacy terminals → the key they mean."""


def enable_legacy_keys() -> None:
    """Read the sequences above as their keys (idempotent; called when the interactive mode starts, not on
    import)."""
    from textual import _ansi_sequences  # Textual offers no public way to add a key sequence

    table = cast(MutableMapping[str, Any], _ansi_sequences.ANSI_SEQUENCES_KEYS)
    for sequence, key in LEGACY_SEQUENCES.items():
        table[sequence] = (key,)
