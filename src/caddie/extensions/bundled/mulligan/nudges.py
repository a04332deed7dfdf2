"""Advisory nudges: the bloat reminder on a big tool result, the per-turn drift nudge, the high-water signal.

None costs a model request: the reminder rides the tool result; the drift and high-water lines are appended to
the filtered copy of the context (never persisted, recomputed every fire so they never stack). The turn-end
handler persists one ``mulligan:turn-metric`` per turn, which the next fire's drift gate reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from caddie.extensions.api import (
    AgentMessage,
    CustomMessage,
    ExtensionContext,
    TextContent,
    ToolResultEvent,
    ToolResultPatch,
    TurnEndEvent,
    UserMessage,
    approx_tokens,
    estimate_message_tokens_utf16,
    is_finite_number,
    now_ms,
    result_bytes,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.markers import HIGH_WATER, NUDGE, MarkerBundle, TurnMetric
from caddie.extensions.bundled.mulligan.notes import (
    DriftNudgeInput,
    render_bloat_reminder,
    render_drift_nudge,
    render_high_water_nudge,
    valid_bloat_hits,
)
from caddie.extensions.bundled.mulligan.state import BloatHit, Mulligan, SessionRuntime


def estimate_agent_tokens(messages: Sequence[AgentMessage]) -> int:
    """The agent-attributable share: per-message estimates of every message that is not a user message."""
    return sum(estimate_message_tokens_utf16(m) for m in messages if not isinstance(m, UserMessage))


def bloat_threshold_for(tool_name: str | None, config: MulliganConfig) -> float:
    """The per-tool threshold if one is configured for this tool, else the global one."""
    default = config.nudges.bloat_threshold_bytes
    if not tool_name:
        return default
    return config.nudges.bloat_threshold_bytes_by_tool.get(tool_name, default)


def _window_deltas(recent_metrics: Sequence[TurnMetric], config: MulliganConfig) -> list[float]:
    window = recent_metrics[: config.nudges.drift_window_turns]
    return [m.delta_tokens for m in window if is_finite_number(m.delta_tokens)]


def should_nudge(recent_metrics: Sequence[TurnMetric], config: MulliganConfig) -> bool:
    """The mean delta over the newest ``drift_window_turns`` metrics reaches the threshold (``>=``).

    Only when no metric in the window has a delta (first turn, after a reload) does a bloated result fire it.
    """
    window = recent_metrics[: config.nudges.drift_window_turns]
    deltas = _window_deltas(recent_metrics, config)
    if not deltas:
        return any(m.bloat_hit for m in window)
    return sum(deltas) / len(deltas) >= config.nudges.drift_threshold_tokens


def drift_nudge_input(
    metric: TurnMetric, recent_metrics: Sequence[TurnMetric] | None, config: MulliganConfig | None
) -> DriftNudgeInput:
    """What the nudge says; notes sustained growth when the window average, not the latest turn, tripped it."""
    sustained = 0
    latest = metric.delta_tokens if is_finite_number(metric.delta_tokens) else None
    if recent_metrics is not None and config is not None and latest is not None:
        threshold = config.nudges.drift_threshold_tokens
        deltas = _window_deltas(recent_metrics, config)
        if deltas and latest < threshold and sum(deltas) / len(deltas) >= threshold:
            sustained = len(deltas)
    return DriftNudgeInput(metric.delta_tokens, len(valid_bloat_hits(metric.bloat_hits)), sustained)


def inject_nudge(
    messages: Sequence[AgentMessage],
    metric: TurnMetric,
    recent_metrics: Sequence[TurnMetric] | None = None,
    config: MulliganConfig | None = None,
) -> list[AgentMessage]:
    """A new list: ``messages`` plus one ephemeral ``mulligan:nudge``."""
    line = render_drift_nudge(drift_nudge_input(metric, recent_metrics, config))
    nudge = CustomMessage(NUDGE, line, False, {"ephemeral": True, "turnIndex": metric.turn_index}, now_ms())
    return [*messages, nudge]


def suppress_check(metric: TurnMetric, recent_metrics: Sequence[TurnMetric], markers: MarkerBundle) -> bool:
    """Did the agent already rewind or shrink during the metric's turn, i.e. ``ts ∈ (previous.ts, metric.ts]``?"""
    upper = metric.ts if metric.ts is not None else 0
    previous = recent_metrics[1] if len(recent_metrics) >= 2 else None
    lower = previous.ts if previous is not None and previous.ts is not None else 0
    stamps = [r.ts for r in markers.rewinds] + [s.ts for s in markers.shrinks]
    return any(ts is not None and lower < ts <= upper for ts in stamps)


def should_high_water(
    total_tokens: float, window_tokens: float, rt: SessionRuntime, config: MulliganConfig
) -> bool:
    """Edge-triggered: true once when the filtered total first reaches the fraction; re-arms below it.

    An unknown window (``<= 0``) never fires and leaves the latch alone.
    """
    if window_tokens <= 0:
        return False
    if total_tokens / window_tokens >= config.nudges.high_water_fraction:
        if not rt.above_high_water:
            rt.above_high_water = True
            return True
        return False
    rt.above_high_water = False
    return False


def inject_high_water_nudge(
    messages: Sequence[AgentMessage], total_tokens: int, window_tokens: int
) -> list[AgentMessage]:
    """A new list: ``messages`` plus one ephemeral ``mulligan:high-water``."""
    details = {"ephemeral": True, "totalFilteredTokens": total_tokens, "windowTokens": window_tokens}
    line = render_high_water_nudge(total_tokens, window_tokens)
    return [*messages, CustomMessage(HIGH_WATER, line, False, details, now_ms())]


# --------------------------------------------------------------------------------------------------
# Handlers


def bloat_reminder_handler(
    m: Mulligan, event: ToolResultEvent, ctx: ExtensionContext
) -> ToolResultPatch | None:
    """Append the reminder to a result at or above its tool's threshold, and record the hit for the turn."""
    session_id = ""
    try:
        session_id = ctx.session.session_id
        config = m.config
        if not config.enabled or not config.nudges.bloat_reminder:
            return None
        if event.tool_name.startswith("mulligan_"):
            return None
        num_bytes = result_bytes(event.content)
        if num_bytes < bloat_threshold_for(event.tool_name, config):
            return None
        content = [*event.content, TextContent(render_bloat_reminder(num_bytes))]
        m.runtimes.get(session_id).pending_bloat_hits.append(
            BloatHit(event.tool_name, approx_tokens(num_bytes))
        )
        return ToolResultPatch(content=content)
    except Exception as e:
        m.log.error("nudge.bloat", session_id, {"error": str(e)})
        return None


def turn_end_metric_handler(m: Mulligan, event: TurnEndEvent, ctx: ExtensionContext) -> None:
    """Persist this turn's metric: agent-attributable growth since the last turn end, and its bloat hits."""
    session_id = ""
    try:
        session_id = ctx.session.session_id
        config = m.config
        rt = m.runtimes.get(session_id)
        hits, rt.pending_bloat_hits = rt.pending_bloat_hits, []
        if not config.enabled or not config.nudges.per_turn_drift:
            return
        if rt.last_filtered is not None:
            now = rt.agent_tokens.estimate(rt.last_filtered)
        else:
            usage = ctx.get_context_usage()
            now = usage.tokens if usage is not None and usage.tokens is not None else 0
        delta = None if rt.token_baseline is None else now - rt.token_baseline
        m.writer(ctx).turn_metric(
            {
                "deltaTokens": delta,
                "bloatHit": bool(hits),
                "bloatHits": [h.to_json() for h in hits],
                "grewOverThreshold": delta is not None and delta > config.nudges.drift_threshold_tokens,
                "turnIndex": event.turn_index,
            }
        )
        rt.token_baseline = now
        rt.last_turn_index = event.turn_index
    except Exception as e:
        m.log.error("nudge.turn_end", session_id, {"error": str(e)})
