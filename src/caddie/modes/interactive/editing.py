"""The editor's plain-data parts: the kill ring, the prompt history and text positions (no widgets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

KILL_RING_SIZE = 60


@dataclass
class KillRing:
    """Text deleted by the kill keys, newest last (Pi's kill ring)."""

    entries: list[str] = field(default_factory=list)

    def add(self, text: str, *, backward: bool, join: bool) -> None:
        """Record a kill; ``join`` (the previous key was a kill too) extends the newest entry instead."""
        if not text:
            return
        if join and self.entries:
            self.entries[-1] = text + self.entries[-1] if backward else self.entries[-1] + text
        else:
            self.entries.append(text)
            del self.entries[:-KILL_RING_SIZE]

    def latest(self) -> str | None:
        return self.entries[-1] if self.entries else None

    def rotate(self) -> str | None:
        """Make the entry before the newest the newest (for Alt+Y) and return it."""
        if len(self.entries) > 1:
            self.entries.insert(0, self.entries.pop())
        return self.latest()


class History:
    """Prompt history, newest last; browsing keeps the unsent draft to come back to."""

    def __init__(self, entries: Sequence[str] = (), limit: int = 500) -> None:
        self.entries: list[str] = [e for e in entries if e.strip()][-limit:]
        self.limit = limit
        self._index: int | None = None
        self._draft = ""

    @property
    def browsing(self) -> bool:
        return self._index is not None

    def add(self, text: str) -> None:
        if text.strip() and (not self.entries or self.entries[-1] != text):
            self.entries.append(text)
            del self.entries[: -self.limit]
        self.reset()

    def reset(self) -> None:
        self._index = None
        self._draft = ""

    def previous(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self._index is None:
            self._draft = current
            self._index = len(self.entries) - 1
        elif self._index > 0:
            self._index -= 1
        else:
            return None
        return self.entries[self._index]

    def next(self) -> str | None:
        if self._index is None:
            return None
        if self._index < len(self.entries) - 1:
            self._index += 1
            return self.entries[self._index]
        draft = self._draft
        self.reset()
        return draft


def index_of(text: str, location: tuple[int, int]) -> int:
    """The offset in ``text`` of a (row, column) location."""
    row, col = location
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[:row]) + col


def location_of(text: str, index: int) -> tuple[int, int]:
    """The (row, column) location of an offset in ``text``."""
    before = text[:index]
    return before.count("\n"), index - (before.rfind("\n") + 1)


def jump_target(text: str, offset: int, character: str, forward: bool) -> int | None:
    """Where Pi's jump keys (Ctrl+] then a character) land: the next (or previous) occurrence of
    ``character`` after (before) ``offset``; None when there is none."""
    if forward:
        found = text.find(character, offset + 1)
    else:
        found = text.rfind(character, 0, max(0, offset))
    return None if found < 0 else found
