"""Key decoding the interactive mode needs beyond Textual's defaults.

Terminals without the kitty keyboard protocol (and tmux by default) send Alt+Enter as ESC CR, which
Textual reads as a plain Enter; Alt+Enter queues a follow-up, so it must stay distinguishable.
"""

from __future__ import annotations

import enum
from collections.abc import MutableMapping
from typing import Any, cast


class _ExtraKey(enum.StrEnum):
    ALT_ENTER = "alt+enter"


def enable_legacy_alt_enter() -> None:
    """Read ESC CR as ``alt+enter`` (idempotent; called when the interactive mode starts, not on import)."""
    from textual import _ansi_sequences

    table = cast(MutableMapping[str, Any], _ansi_sequences.ANSI_SEQUENCES_KEYS)
    table.setdefault("\x1b\r", (_ExtraKey.ALT_ENTER,))
