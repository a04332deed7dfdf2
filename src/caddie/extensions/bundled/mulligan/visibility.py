"""The ``entry_visibility`` handler: which entries of a branch the ``context`` filter hides or shrinks.

It runs the very pipeline the ``context`` handler runs (same config, same markers, same protected roles,
same branch indexing) with a trace, so a view such as ``caddie export`` marks exactly what the model is sent.
Nothing is written and no runtime state is touched: markers are read with a fresh index.
"""

from __future__ import annotations

from caddie.extensions.api import EntryVisibility, EntryVisibilityEvent, ExtensionContext
from caddie.extensions.bundled.mulligan.markers import MarkerIndex, marker_uuid
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.transforms import FilterTrace, filter_pipeline


def visibility_handler(m: Mulligan, event: EntryVisibilityEvent, ctx: ExtensionContext) -> None:
    config = m.config
    if not config.enabled:
        return  # the context handler passes every message through
    entries = ctx.session.entries()
    markers = MarkerIndex().update(entries).bundle()
    if not markers.rewinds and not markers.shrinks:
        return
    trace = FilterTrace()
    filter_pipeline(
        event.messages,
        markers.rewinds,
        markers.shrinks,
        config.rewind.protected_roles,
        event.branch,
        trace=trace,
    )
    if not trace.hidden and not trace.shrunk:
        return
    marker_entries: dict[str, str] = {}
    for entry in entries:
        uuid = marker_uuid(entry)
        if uuid is not None:
            marker_entries[uuid] = entry.id
    ids = event.entry_ids
    for index, rewind in trace.hidden.items():
        if 0 <= index < len(ids):
            how = rewind.granularity or "rewind"
            if rewind.checkpoint:
                how = f"{how} {rewind.checkpoint}"
            event.mark(
                ids[index],
                EntryVisibility(
                    "hidden",
                    f"hidden by mulligan_rewind ({how})",
                    cause_entry_id=marker_entries.get(rewind.id or ""),
                ),
            )
    for index, (shrink, message) in trace.shrunk.items():
        if 0 <= index < len(ids):
            event.mark(
                ids[index],
                EntryVisibility(
                    "replaced",
                    "shrunk by mulligan_shrink",
                    replacement=message,
                    cause_entry_id=marker_entries.get(shrink.id or ""),
                ),
            )
