"""The context window as a picture: what the next request carries, by category (``/context``,
``caddie context --stats``).

The host computes it from what it really sends: the system prompt, the active tools' schemas and the
messages after every extension's ``context`` handler (mulligan's filter and nudges included). Which entry
each message comes from, and what an extension hides or shrinks, is asked of the extensions with the
``entry_visibility`` event (the same answer ``caddie export`` shows), and what they saved with the ``savings``
event; the host knows no extension's rules.

Counting: every part is measured in characters as it goes over the wire — text, thinking, a tool call's name
and compact-JSON arguments, a tool schema as compact JSON ``{name, description, parameters}``, an image as
4,800 — in UTF-16 code units, and ``tokens = chars / 4``. When the provider reported the size of the last
request (input + cache read + cache write), every category is scaled by how far that report was from this
estimate for the same request, and the view says so; otherwise the figures are estimates.
"""

from caddie.modes.context_stats.count import (
    Category,
    ContextStats,
    Item,
    Withheld,
    attribute_entries,
    compute_context_stats,
    message_parts,
    tool_schema_chars,
)
from caddie.modes.context_stats.gather import apply_visibility, stats_of_session
from caddie.modes.context_stats.picture import grid_cells, render_stats

__all__ = [
    "Category",
    "ContextStats",
    "Item",
    "Withheld",
    "apply_visibility",
    "attribute_entries",
    "compute_context_stats",
    "grid_cells",
    "message_parts",
    "render_stats",
    "stats_of_session",
    "tool_schema_chars",
]
