"""Large pastes collapse to markers in the editor, as in Pi: ``[paste #1 +120 lines]`` (over 10 lines) or
``[paste #2 1532 chars]`` (over 1,000 characters); the message sent, the external editor and the history get
the pasted text in their place. Pure: the editor widget keeps one ``PasteBook``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_LINES = 10
MAX_CHARS = 1000
_MARKER = re.compile(r"\[paste #(\d+)( (\+\d+ lines|\d+ chars))?\]")


def clean_paste(text: str, before: str = "") -> str:
    """Pasted text as Pi inserts it: line endings normalised, control characters other than newlines and
    tabs dropped; a path (``/``, ``~``, ``.``) pasted right after a word gets a space before it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(ch for ch in text if ch in "\n\t" or ord(ch) >= 32)
    if text[:1] in ("/", "~", ".") and before[-1:].isalnum():
        text = " " + text
    return text


@dataclass
class PasteBook:
    """The large pastes of the text being edited, by id."""

    pastes: dict[int, str] = field(default_factory=dict)
    counter: int = 0

    def add(self, text: str) -> str | None:
        """The marker to insert for ``text`` (recorded), or None when it is small enough to insert as is."""
        lines = text.split("\n")
        if len(lines) <= MAX_LINES and len(text) <= MAX_CHARS:
            return None
        self.counter += 1
        self.pastes[self.counter] = text
        size = f"+{len(lines)} lines" if len(lines) > MAX_LINES else f"{len(text)} chars"
        return f"[paste #{self.counter} {size}]"

    def expand(self, text: str) -> str:
        """``text`` with each marker of a recorded paste replaced by the paste."""
        if not self.pastes or "[paste #" not in text:
            return text

        def replace(match: re.Match[str]) -> str:
            return self.pastes.get(int(match.group(1)), match.group(0))

        return _MARKER.sub(replace, text)

    def clear(self) -> None:
        self.pastes.clear()
        self.counter = 0
