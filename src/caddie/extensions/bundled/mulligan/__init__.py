"""mulligan — a second shot: the model sheds context it produced by mistake, behind a self-written note.

Tools: ``mulligan_rewind`` (hide a span), ``mulligan_shrink`` (replace a big result with a summary),
``mulligan_cancel`` (retract either), ``mulligan_audit`` (what am I carrying?). Commands:
``/mulligan_checkpoint``, ``/mulligan_checkpoint_revoke``, ``/mulligan_audit``. Markers are persisted as
``custom`` entries and applied on every ``context`` event to the copy sent to the model; nothing on disk is
ever deleted. Configured by the ``mulligan`` settings block (re-read on every ``session_start``).
"""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import (
    CommandContext,
    ContextEvent,
    ContextResult,
    EntryVisibilityEvent,
    ExtensionAPI,
    ExtensionContext,
    SavingsEvent,
    SessionShutdownEvent,
    SessionStartEvent,
    SessionTreeEvent,
    ToolResultEvent,
    ToolResultPatch,
    TurnEndEvent,
)
from caddie.extensions.bundled.mulligan.banner import reconcile_banner
from caddie.extensions.bundled.mulligan.commands import (
    AUDIT_DESCRIPTION,
    CHECKPOINT_DESCRIPTION,
    REVOKE_DESCRIPTION,
    audit_command,
    checkpoint_command,
    revoke_command,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig, config_from_settings
from caddie.extensions.bundled.mulligan.filter import context_handler
from caddie.extensions.bundled.mulligan.nudges import bloat_reminder_handler, turn_end_metric_handler
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.status import SavingsStatus
from caddie.extensions.bundled.mulligan.tool_gate import ToolGate
from caddie.extensions.bundled.mulligan.tools.audit import make_audit_tool
from caddie.extensions.bundled.mulligan.tools.cancel import make_cancel_tool
from caddie.extensions.bundled.mulligan.tools.rewind import make_rewind_tool
from caddie.extensions.bundled.mulligan.tools.shrink import make_shrink_tool
from caddie.extensions.bundled.mulligan.visibility import visibility_handler

__all__ = ["Mulligan", "register"]


def register(api: ExtensionAPI) -> Mulligan:
    """Register the tools, commands and handlers; returns the extension's shared state (for tests)."""
    m = Mulligan(api)
    tools = [make_rewind_tool(m), make_shrink_tool(m), make_audit_tool(m), make_cancel_tool(m)]
    for tool in tools:
        api.register_tool(tool)
    gate = ToolGate(m)
    m.bring_in_tools = gate.bring_in

    def on_checkpoint(args: str, ctx: CommandContext) -> None:
        checkpoint_command(m, args, ctx)

    def on_revoke(args: str, ctx: CommandContext) -> None:
        revoke_command(m, args, ctx)

    def on_audit(args: str, ctx: CommandContext) -> None:
        audit_command(m, args, ctx)

    api.register_command("mulligan_checkpoint", on_checkpoint, description=CHECKPOINT_DESCRIPTION)
    api.register_command("mulligan_checkpoint_revoke", on_revoke, description=REVOKE_DESCRIPTION)
    api.register_command("mulligan_audit", on_audit, description=AUDIT_DESCRIPTION)

    def on_context(event: ContextEvent, ctx: ExtensionContext) -> ContextResult | None:
        return context_handler(m, event, ctx)

    def on_entry_visibility(event: EntryVisibilityEvent, ctx: ExtensionContext) -> None:
        visibility_handler(m, event, ctx)

    def on_tool_result(event: ToolResultEvent, ctx: ExtensionContext) -> ToolResultPatch | None:
        return bloat_reminder_handler(m, event, ctx)

    status = SavingsStatus(m, api, tools)

    def on_turn_end(event: TurnEndEvent, ctx: ExtensionContext) -> None:
        reminded = gate.holding and bool(m.runtime(ctx).pending_bloat_hits)
        turn_end_metric_handler(m, event, ctx)
        gate.after_turn(ctx, reminded)
        status.refresh(ctx)

    def on_session_start(event: SessionStartEvent, ctx: ExtensionContext) -> None:
        # Every reason (startup, reload, new, resume, fork): fresh settings, fresh control state.
        m.set_config(_settings_config(ctx))
        m.runtimes.reset(ctx.session.session_id)
        gate.sync(ctx)
        reconcile_banner(m.config, ctx)
        status.reset()
        status.refresh(ctx)

    def on_session_tree(event: SessionTreeEvent, ctx: ExtensionContext) -> None:
        gate.sync(ctx)

    def on_savings(event: SavingsEvent, ctx: ExtensionContext) -> None:
        status.answer(event, ctx)

    def on_session_shutdown(event: SessionShutdownEvent, ctx: ExtensionContext) -> None:
        m.runtimes.clear()
        status.reset()

    api.on("context", on_context)
    api.on("entry_visibility", on_entry_visibility)
    api.on("savings", on_savings)
    api.on("tool_result", on_tool_result)
    api.on("turn_end", on_turn_end)
    api.on("session_start", on_session_start)
    api.on("session_tree", on_session_tree)
    api.on("session_shutdown", on_session_shutdown)
    return m


def _settings_config(ctx: Any) -> MulliganConfig:
    try:
        return config_from_settings(ctx.settings())
    except Exception:  # settings the host cannot give mean the defaults; mulligan never breaks a turn
        return MulliganConfig()
