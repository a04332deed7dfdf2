"""The active-checkpoint banner above the editor: a standing reminder while a user-set checkpoint is armed."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from caddie.extensions.api import ExtensionContext, SessionEntry
from caddie.extensions.bundled.mulligan.audit import list_checkpoints
from caddie.extensions.bundled.mulligan.config import MulliganConfig

BANNER_WIDGET_KEY = "mulligan:active-checkpoint"
logger = logging.getLogger("caddie.ext.mulligan")


def banner_line(name: str) -> str:
    return (
        f'⚠ Mulligan checkpoint active: "{name}" (you set it). The agent may rewind across your subsequent '
        f"prompts back to this point. Revoke: /mulligan_checkpoint_revoke {name}"
    )


def reconcile_banner(
    config: MulliganConfig, ctx: ExtensionContext, entries: Sequence[SessionEntry] | None = None
) -> None:
    """Show one line per active checkpoint, or clear the widget. No-op without a UI; never raises.

    ``entries`` (at least every label entry, in file order) spares a read of the session when given.
    """
    try:
        if not ctx.has_ui:
            return
        if not config.ui.active_checkpoint_banner:
            ctx.ui.set_widget(BANNER_WIDGET_KEY, None)
            return
        names = list_checkpoints(ctx.session.entries() if entries is None else entries)
        if not names:
            ctx.ui.set_widget(BANNER_WIDGET_KEY, None)
            return
        ctx.ui.set_widget(BANNER_WIDGET_KEY, [banner_line(n) for n in names], placement="aboveEditor")
    except Exception as e:
        try:
            logger.warning(f"[mulligan] banner: failed to reconcile: {e}")
        except Exception:  # the logging call itself failed: the banner is cosmetic, nothing else to do
            pass
