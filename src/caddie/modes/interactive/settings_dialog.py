"""/settings: the common settings with their current values; Enter on one offers its choices.

The app applies a choice at once (where it can) and writes it to the global ``settings.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from caddie.modes.interactive.dialogs import Choice, ListScreen


@dataclass(frozen=True, slots=True)
class SettingRow:
    key: str
    label: str
    value: str
    options: list[str]
    note: str = ""


class SettingsScreen(ListScreen):
    """One row per setting (``label  value``); picking one returns its key."""

    def __init__(self, rows: Sequence[SettingRow], initial: str | None = None) -> None:
        choices = []
        for row in rows:
            prompt = Text()
            prompt.append(f"{row.label:<22}", style="bold")
            prompt.append(row.value)
            if row.note:
                prompt.append(f"  ({row.note})", style="dim")
            choices.append(Choice(row.key, prompt, f"{row.label} {row.value}"))
        super().__init__(
            "Settings (saved to your settings.json)",
            choices,
            filter_placeholder=None,
            initial=initial,
            hint="↑↓ move · enter change · esc close",
        )
