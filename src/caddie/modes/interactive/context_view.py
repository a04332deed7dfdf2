"""``/context``: the context window as a picture, in the conversation (``caddie context --stats`` headless).

The picture (``caddie.modes.context_stats``): a grid coloured by category, tokens and % per category, the
ten largest messages with their entry ids (for ``mulligan_shrink`` targets and ``/tree``), what mulligan
hides or shrinks, and what it saved. Computed from the next request as the extensions shape it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType

from caddie.modes.context_stats import ContextStats, render_stats, stats_of_session
from caddie.modes.interactive.conversation import InfoBlock

if TYPE_CHECKING:
    from caddie.modes.interactive.host import Shell


class ContextBlock(InfoBlock):
    """The ``/context`` picture; ``stats`` holds the numbers it shows."""

    def __init__(self, content: RenderableType, stats: ContextStats) -> None:
        super().__init__(content, "info")
        self.stats = stats


async def show_context(app: Shell) -> ContextStats | None:
    session = app.session
    if session is None:
        return None
    stats = await stats_of_session(session, app.registry, live=True)
    app.conversation.add(ContextBlock(render_stats(stats, color=True), stats))
    return stats
