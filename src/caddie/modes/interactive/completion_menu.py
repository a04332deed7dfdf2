"""Suggestions shown under the editor: slash commands, their arguments, ``@`` files and paths, and what
extensions' autocomplete providers offer."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from caddie.modes.interactive.commands import Completion


class CompletionMenu(OptionList):
    """Command (or argument) suggestions above the editor; never takes focus."""

    DEFAULT_CSS = """
    CompletionMenu { height: auto; max-height: 8; border: none; padding: 0 1; display: none; }
    CompletionMenu.-visible { display: block; }
    """
    can_focus = False

    def __init__(self) -> None:
        super().__init__(id="completion")
        self.completions: list[Completion] = []
        self.for_text: str | None = None
        """The editor text the suggestions were made for (keys can arrive faster than they follow)."""

    @property
    def is_open(self) -> bool:
        return self.has_class("-visible") and bool(self.completions)

    def show(self, completions: list[Completion], for_text: str | None = None) -> None:
        self.completions = completions
        self.for_text = for_text
        options = []
        for c in completions:
            prompt = Text(c.label, style="bold")
            if c.description:
                prompt.append("  " + c.description, style="dim")
            prompt.truncate(max(20, self.size.width - 2 if self.size.width else 200), overflow="ellipsis")
            options.append(Option(prompt))
        self.set_options(options)
        self.set_class(bool(completions), "-visible")
        if completions:
            self.highlighted = 0

    def hide(self) -> None:
        self.completions = []
        self.remove_class("-visible")

    def current(self) -> Completion | None:
        if not self.is_open or self.highlighted is None:
            return None
        return self.completions[self.highlighted] if self.highlighted < len(self.completions) else None

    def move(self, step: int) -> None:
        if self.completions:
            self.highlighted = ((self.highlighted or 0) + step) % len(self.completions)
