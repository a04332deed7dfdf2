"""The human's commands: set and revoke checkpoints, and see the audit. Output goes to notifications only.

A checkpoint is a consent: while it is active the agent may rewind across the user's later prompts back to
it. It is a label on the last conversation message; a checkpoint rewind consumes it.
"""

from __future__ import annotations

import re

from caddie.extensions.api import (
    CommandContext,
    ExtensionAPI,
    ExtensionContext,
    LabelEntry,
    MessageEntry,
    UsageError,
)
from caddie.extensions.bundled.mulligan.audit import DEFAULT_TOP, build_audit, list_checkpoints
from caddie.extensions.bundled.mulligan.banner import reconcile_banner
from caddie.extensions.bundled.mulligan.markers import CHECKPOINT_LABEL_PREFIX
from caddie.extensions.bundled.mulligan.state import Mulligan
from caddie.extensions.bundled.mulligan.tools.audit import audit_view, safe_markers

CHECKPOINT_NAME = re.compile(r"[a-z0-9_-]{1,40}")
CHECKPOINT_DESCRIPTION = (
    "Set a Mulligan checkpoint — the agent may rewind across your subsequent prompts back to this point"
)
REVOKE_DESCRIPTION = "Revoke a Mulligan checkpoint"
AUDIT_DESCRIPTION = "Run the Mulligan context-bloat diagnostic — see what the model is carrying"
DISABLED = "Mulligan is disabled"


class CheckpointError(UsageError):
    """The checkpoint could not be set; the message says why."""


def valid_checkpoint_name(name: str) -> bool:
    return CHECKPOINT_NAME.fullmatch(name) is not None


def set_checkpoint(api: ExtensionAPI, ctx: ExtensionContext, name: str) -> str:
    """Label the branch's last conversation message; returns its entry id. Raises ``CheckpointError``."""
    try:
        target = next(
            (e.id for e in reversed(ctx.session.branch()) if isinstance(e, MessageEntry) and e.message.role),
            None,
        )
        if target is None:
            raise CheckpointError("no conversation message to checkpoint (emit a message first, then retry)")
        api.set_label(target, CHECKPOINT_LABEL_PREFIX + name)
        return target
    except CheckpointError:
        raise
    except Exception as e:
        raise CheckpointError(str(e)) from e


def clear_checkpoint_by_name(api: ExtensionAPI, ctx: ExtensionContext, name: str) -> bool:
    """Clear the label on every entry currently carrying this checkpoint; True if any was cleared."""
    needle = CHECKPOINT_LABEL_PREFIX + name
    try:
        entries = ctx.session.entries()
    except Exception:  # no readable session (torn down): nothing is labelled, so nothing to clear
        return False
    targets = dict.fromkeys(
        e.target_id for e in entries if isinstance(e, LabelEntry) and e.label == needle and e.target_id
    )
    cleared = False
    for target in targets:
        try:
            if ctx.session.get_label(target) == needle:
                api.set_label(target, None)
                cleared = True
        except Exception:  # one label that cannot be cleared must not stop clearing the others
            pass
    return cleared


def _notify(ctx: ExtensionContext, message: str, level: str) -> None:
    if ctx.has_ui:
        ctx.ui.notify(message, level)  # type: ignore[arg-type]


def checkpoint_command(m: Mulligan, args: str, ctx: CommandContext) -> None:
    try:
        name = (args or "").strip()
        if not m.config.enabled:
            _notify(ctx, DISABLED, "warning")
            return
        if not valid_checkpoint_name(name):
            _notify(
                ctx,
                f"Mulligan: invalid checkpoint name '{name}' (lowercase, digits, hyphen, underscore; max 40)",
                "warning",
            )
            return
        try:
            set_checkpoint(m.api, ctx, name)
        except CheckpointError as e:
            _notify(ctx, f"Mulligan: could not set checkpoint: {e}", "warning")
            return
        _notify(
            ctx,
            f"Mulligan: checkpoint '{name}' set. Until you revoke it, the agent may rewind across your subsequent "
            f"prompts back to this point (your prompts after here can be hidden). Revoke with "
            f"/mulligan_checkpoint_revoke {name}.",
            "warning",
        )
        reconcile_banner(m.config, ctx)
        m.bring_in_tools(ctx, "checkpoint")  # the model may now rewind to it: it needs the tools
    except Exception as e:
        _notify(ctx, f"Mulligan: unexpected error: {e}", "warning")


def revoke_command(m: Mulligan, args: str, ctx: CommandContext) -> None:
    try:
        name = (args or "").strip()
        if not m.config.enabled:
            _notify(ctx, DISABLED, "warning")
            return
        if not clear_checkpoint_by_name(m.api, ctx, name):
            _notify(ctx, f"Mulligan: no active checkpoint named '{name}'.", "info")
            return
        reconcile_banner(m.config, ctx)
        _notify(
            ctx,
            f"Mulligan: checkpoint '{name}' revoked. The agent can no longer rewind across your prompts to it.",
            "info",
        )
    except Exception as e:
        _notify(ctx, f"Mulligan: unexpected error: {e}", "warning")


def audit_command(m: Mulligan, args: str, ctx: CommandContext) -> None:
    """The same report as the tool (top 8), as an info notification; arguments are ignored."""
    try:
        if not m.config.enabled:
            _notify(ctx, DISABLED, "warning")
            return
        if not ctx.has_ui:
            return
        view, _source, confidence = audit_view(m, ctx)
        names = list_checkpoints(ctx.session.entries())
        audit = build_audit(view, safe_markers(ctx), names, m.config, confidence, DEFAULT_TOP)
        _notify(ctx, audit.report, "info")
    except Exception as e:
        _notify(ctx, f"Mulligan: unexpected error: {e}", "warning")
