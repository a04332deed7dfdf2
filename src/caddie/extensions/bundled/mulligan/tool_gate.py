"""``tools: "when-needed"``: mulligan's four tools reach the model only once they can help.

With ``"always"`` (the default, pi-mulligan's behaviour) nothing here acts. With ``"when-needed"`` the tools
are left out of the requests until the first nudge (a bloat reminder on a result, the drift line, the
high-water line) or a user checkpoint, and from then on they stay: the tool list changes once per branch, so
the prompt cache breaks at most once. The point where they came in is a ``mulligan:tools`` entry on the
branch, so a resumed or forked session, the savings figure and the export all know which requests carried
them. Turn ends decide for the next request (the host takes the tool list between turns): a reminder appended
during the turn, or a drift or high-water line the next request will carry, brings them in for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from caddie.extensions.api import CustomEntry, ExtensionContext, SessionEntry, now_ms
from caddie.extensions.bundled.mulligan.markers import TOOLS
from caddie.extensions.bundled.mulligan.nudges import should_nudge, suppress_check
from caddie.extensions.bundled.mulligan.state import Mulligan

TOOL_NAMES = ("mulligan_rewind", "mulligan_shrink", "mulligan_audit", "mulligan_cancel")


def brought_in(branch: Sequence[SessionEntry]) -> bool:
    """Whether the branch has the entry from which the tools are sent."""
    return any(isinstance(e, CustomEntry) and e.custom_type == TOOLS for e in branch)


class ToolGate:
    def __init__(self, m: Mulligan) -> None:
        self._m = m
        self._held: list[str] = []
        """The tools left out (those that were active when they were held back)."""

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def sync(self, ctx: ExtensionContext) -> None:
        """At session start and after a move in the tree: hold the tools back unless this branch brought them
        in (or the setting is ``"always"``). Never raises."""
        try:
            config = self._m.config
            if not config.enabled or config.tools != "when-needed" or brought_in(ctx.session.branch()):
                self._release()
                return
            api = self._m.api
            active = api.get_active_tools()
            held = [n for n in active if n in TOOL_NAMES]
            if held:
                self._held = [*self._held, *(n for n in held if n not in self._held)]
                api.set_active_tools([n for n in active if n not in TOOL_NAMES])
        except Exception as e:
            self._m.log.error("tools.sync", "", {"error": str(e)})

    def bring_in(self, ctx: ExtensionContext, reason: str) -> None:
        """From the next request on, send the tools; the entry records where (``reason``: what brought them)."""
        if not self._held:
            return
        try:
            self._m.api.append_entry(
                TOOLS,
                {"schema": "caddie-mulligan", "v": 1, "kind": "tools", "reason": reason, "ts": now_ms()},
            )
        except Exception as e:
            self._m.log.error("tools.bring_in", "", {"error": str(e)})
        self._release()

    def after_turn(self, ctx: ExtensionContext, reminded: bool) -> None:
        """At a turn end: bring the tools in when this turn's results got a reminder, or when the next request
        will carry the drift or the high-water line."""
        if not self._held:
            return
        try:
            reason = "bloat-reminder" if reminded else self._next_nudge(ctx)
        except Exception as e:
            self._m.log.error("tools.after_turn", "", {"error": str(e)})
            reason = None
        if reason is not None:
            self.bring_in(ctx, reason)

    def _next_nudge(self, ctx: ExtensionContext) -> str | None:
        config = self._m.config
        rt = self._m.runtime(ctx)
        markers = rt.marker_index.update(ctx.session.entries()).bundle()
        metric = markers.metric
        if (
            config.nudges.per_turn_drift
            and metric is not None
            and should_nudge(markers.recent_metrics, config)
            and not suppress_check(metric, markers.recent_metrics, markers)
        ):
            return "drift"
        usage = ctx.get_context_usage()
        if (
            usage is not None
            and usage.tokens is not None
            and usage.context_window > 0
            and usage.tokens / usage.context_window >= config.nudges.high_water_fraction
        ):
            return "high-water"
        return None

    def _release(self) -> None:
        if not self._held:
            return
        api = self._m.api
        active = api.get_active_tools()
        api.set_active_tools([*active, *(n for n in self._held if n not in active)])
        self._held = []
