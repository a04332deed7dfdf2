"""The extension UI over ACP: what maps, maps; what does not answers at once, never a hang.

``notify`` → an agent message; ``set_title`` → a ``session_info_update``; ``confirm`` and ``select`` → a
``session/request_permission`` whose options are the answers. ``input`` and ``editor`` have no ACP
counterpart: they answer "cancelled" at once and tell the user so. Status lines and widgets are kept
(extensions may read them back) but not shown: ACP has no place for them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from acp import helpers
from caddie.ai.abort import AbortSignal
from caddie.extensions.api import NotifyLevel
from caddie.modes.acp.convert import text_content
from caddie.runtime.ui import HeadlessUI

Send = Callable[[Any], None]
"""Queue one ``session/update`` (in order with everything else the session sends)."""
Ask = Callable[[ToolCallUpdate, list[PermissionOption], float | None], Awaitable[str | None]]
"""Ask the client to choose: the option id picked, or None (cancelled, timed out, no client)."""

_PREFIX: dict[str, str] = {"info": "", "warning": "Warning: ", "error": "Error: "}


class AcpUI(HeadlessUI):
    """HeadlessUI's bookkeeping (statuses, widgets, title, editor text), with what ACP can show sent."""

    def __init__(self, send: Send, ask: Ask) -> None:
        super().__init__()
        self._send = send
        self._ask = ask

    def notify(self, message: str, level: NotifyLevel = "info") -> None:
        self._send(helpers.update_agent_message_text(f"\n\n{_PREFIX.get(level, '')}{message}\n\n"))

    def set_title(self, title: str) -> None:
        from acp.schema import SessionInfoUpdate

        super().set_title(title)
        self._send(SessionInfoUpdate(session_update="session_info_update", title=title))

    async def _choose(
        self, title: str, message: str | None, options: list[PermissionOption], timeout: float | None
    ) -> str | None:
        call_id = f"ui-{uuid.uuid4().hex[:12]}"
        self._send(
            helpers.start_tool_call(
                call_id,
                title,
                kind="other",
                status="pending",
                content=[text_content(message)] if message else None,
            )
        )
        try:
            picked = await self._ask(
                ToolCallUpdate(tool_call_id=call_id, title=title, kind="other", status="pending"),
                options,
                timeout,
            )
        except asyncio.CancelledError:
            self._send(helpers.update_tool_call(call_id, status="failed"))
            raise
        label = next((o.name for o in options if o.option_id == picked), None)
        self._send(
            helpers.update_tool_call(
                call_id,
                status="completed" if picked is not None else "failed",
                content=[text_content(f"{message}\n\n→ {label}" if message else f"→ {label}")]
                if label
                else None,
            )
        )
        return picked

    async def confirm(
        self, title: str, message: str, timeout: float | None = None, *, signal: AbortSignal | None = None
    ) -> bool:
        options = [
            PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
            PermissionOption(option_id="no", name="No", kind="reject_once"),
        ]
        return await self._choose(title, message, options, timeout) == "yes"

    async def select(
        self,
        title: str,
        options: Sequence[str],
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        choices = [
            PermissionOption(option_id=str(i), name=o, kind="allow_once") for i, o in enumerate(options)
        ]
        choices.append(PermissionOption(option_id="cancel", name="Cancel", kind="reject_once"))
        picked = await self._choose(title, None, choices, timeout)
        if picked is None or picked == "cancel":
            return None
        return options[int(picked)] if picked.isdigit() and int(picked) < len(options) else None

    def _no_text_input(self, title: str) -> None:
        self.notify(
            f"{title}: this needs typed input, which the editor cannot show over ACP; answered as cancelled. "
            "Run caddie in the terminal (caddie -c continues this session) to answer it.",
            "warning",
        )

    async def input(
        self,
        title: str,
        placeholder: str | None = None,
        timeout: float | None = None,
        *,
        signal: AbortSignal | None = None,
    ) -> str | None:
        self._no_text_input(title)
        return None

    async def editor(
        self, title: str, prefill: str | None = None, *, signal: AbortSignal | None = None
    ) -> str | None:
        self._no_text_input(title)
        return None


def picked_option(outcome: Any) -> str | None:
    return outcome.option_id if isinstance(outcome, AllowedOutcome) else None
