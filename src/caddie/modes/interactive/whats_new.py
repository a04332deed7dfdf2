"""``/changelog`` and the start-up "What's New" on screen; what they show comes from ``config/changelog.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from caddie.runtime.session import AgentSession


class ChangelogHost(Protocol):
    @property
    def session(self) -> AgentSession | None: ...

    def show_info(self, content: Any, level: str = "info") -> None: ...


def whats_new(markdown: str) -> RenderableType:
    """Pi's block: a bold "What's New" over the entries."""
    from rich.markdown import Markdown  # after the first frame, as every rich.markdown import here

    grid = Table.grid()
    grid.add_row(Text("What's New", style="bold"))
    grid.add_row(Markdown(markdown))
    return grid


def show_whats_new(host: ChangelogHost) -> None:
    """At start-up, as Pi: the changelog entries newer than the version last seen (or one line, with
    ``collapseChangelog``); nothing for a resumed session or a first run."""
    from caddie.config.changelog import take_startup_changelog

    session = host.session
    if session is None:
        return
    shown = take_startup_changelog(session.settings, session_has_messages=bool(session.messages))
    if shown.text is not None:
        host.show_info(Text(shown.text) if shown.collapsed else whats_new(shown.text))
