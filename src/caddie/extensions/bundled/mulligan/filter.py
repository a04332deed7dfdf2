"""The ``context`` handler: on every inference, rewrite the copy of the messages the model is about to see.

Reads the markers and the branch once, indexes the branch once, runs the pure pipeline, appends the drift and
high-water nudges, caches the view for the audit, retires stale shrinks, refreshes the banner. Any failure
passes the messages through untouched (the turn is never broken).
"""

from __future__ import annotations

import math

from caddie.extensions.api import (
    CHARS_PER_TOKEN,
    ContextEvent,
    ContextResult,
    ExtensionContext,
    LabelEntry,
    now_ms,
)
from caddie.extensions.bundled.mulligan.banner import reconcile_banner
from caddie.extensions.bundled.mulligan.markers import MarkerBundle
from caddie.extensions.bundled.mulligan.nudges import (
    inject_high_water_nudge,
    inject_nudge,
    should_high_water,
    should_nudge,
    suppress_check,
)
from caddie.extensions.bundled.mulligan.state import Mulligan, SessionRuntime
from caddie.extensions.bundled.mulligan.transforms import (
    BranchTail,
    RewindDiag,
    filter_pipeline,
    stable_sort_by_seq,
)


def context_handler(m: Mulligan, event: ContextEvent, ctx: ExtensionContext) -> ContextResult | None:
    session_id = "unknown"
    try:
        session_id = ctx.session.session_id
        config = m.config
        if not config.enabled:
            return None
        rt = m.runtimes.get(session_id)
        labels: list[LabelEntry] | None
        try:
            markers = rt.marker_index.update(ctx.session.entries()).bundle()
            labels = rt.marker_index.labels
        except Exception:  # never break a turn (as the reference): unreadable markers hide nothing
            markers, labels = MarkerBundle(), None
        branch = ctx.session.branch()
        tail = rt.branch_index.tail(branch)
        original = event.messages
        diag: list[RewindDiag] | None = [] if m.log.enabled else None
        base = filter_pipeline(
            original, markers.rewinds, markers.shrinks, config.rewind.protected_roles, branch, diag, tail
        )
        view = base
        if diag is not None:
            _log_invariant(m, session_id, len(original), len(base), diag)

        metric = markers.metric
        if (
            rt.rewind_refused_turn_index is not None
            and metric is not None
            and rt.rewind_refused_turn_index != metric.turn_index
        ):
            rt.rewind_refused_turn_index = None
        if (
            config.nudges.per_turn_drift
            and metric is not None
            and should_nudge(markers.recent_metrics, config)
            and not suppress_check(metric, markers.recent_metrics, markers)
            and not (
                rt.rewind_refused_turn_index is not None and rt.rewind_refused_turn_index == metric.turn_index
            )
        ):
            view = inject_nudge(view, metric, markers.recent_metrics, config)

        total = window = 0
        try:
            usage = ctx.get_context_usage()
            window = usage.context_window if usage is not None else 0
            if window > 0:  # the estimate is only needed when there is a window to compare with
                chars = rt.tokens.chars_extending(base) + rt.tokens.chars(view[len(base) :])
                total = math.ceil(chars / CHARS_PER_TOKEN)
        except Exception:  # only an estimate for the drift line: without it the line is left out
            total = window = 0
        if should_high_water(total, window, rt, config):
            view = inject_high_water_nudge(view, total, window)

        rt.last_filtered = view
        rt.last_filter_ts = now_ms()
        if m.log.enabled:
            m.log.info(
                "filter.fire",
                session_id,
                {
                    "before": rt.tokens.estimate(original),
                    "after": rt.tokens.estimate(view),
                    "rewinds": len(markers.rewinds),
                    "shrinks": len(markers.shrinks),
                    "hasMetric": metric is not None,
                },
            )
        try:
            _retire_shrinks(m, ctx, rt, markers, tail, len(original))
        except Exception as e:
            m.log.warn("filter.retire", session_id, {"error": str(e)})
        reconcile_banner(config, ctx, labels)
        return ContextResult(messages=view)
    except Exception as e:
        m.log.error("filter.fire", session_id, {"error": str(e)})
        return None


def _retire_shrinks(
    m: Mulligan,
    ctx: ExtensionContext,
    rt: SessionRuntime,
    markers: MarkerBundle,
    tail: BranchTail,
    message_count: int,
) -> None:
    """Cancel pinned shrinks whose target has been missing for ``stale_after_fires`` fires, and the oldest
    shrink when more than ``max_active`` are active (one per fire). The cancels apply from the next fire."""
    config = m.config
    writer = m.writer(ctx)
    for sh in markers.shrinks:
        if not sh.pinned_entry_id or not sh.id:
            continue
        if tail.message_index(sh.pinned_entry_id, message_count) is not None:
            rt.shrink_miss_counts[sh.id] = 0
            continue
        misses = rt.shrink_miss_counts.get(sh.id, 0) + 1
        rt.shrink_miss_counts[sh.id] = misses
        if misses >= config.shrink.stale_after_fires:
            writer.cancel(sh.id)
    if len(markers.shrinks) > config.shrink.max_active:
        oldest = stable_sort_by_seq(markers.shrinks)[0]
        if oldest.id:
            writer.cancel(oldest.id)


def _log_invariant(m: Mulligan, session_id: str, in_len: int, out_len: int, diag: list[RewindDiag]) -> None:
    """Log what each rewind hid; warn on the replay signature (a rewind hiding the freshest messages)."""
    try:
        tail_touch = [
            d for d in diag if d.remove and d.resolved_len >= 5 and max(d.remove) >= d.resolved_len - 3
        ]
        data: dict[str, object] = {
            "inLen": in_len,
            "outLen": out_len,
            "rewinds": [
                {
                    "seq": d.seq,
                    "mode": d.mode,
                    "granularity": d.granularity,
                    "removeCount": len(d.remove),
                    "maxIdx": max(d.remove) if d.remove else -1,
                    "resolvedLen": d.resolved_len,
                }
                for d in diag
            ],
        }
        if tail_touch:
            data["tailTouch"] = [
                {"seq": d.seq, "mode": d.mode, "maxIdx": max(d.remove), "resolvedLen": d.resolved_len}
                for d in tail_touch
            ]
        m.log.write("warn" if tail_touch else "debug", "filter.invariant", session_id, data)
    except Exception:  # a diagnostic log line only; the filter's output is already decided
        pass
