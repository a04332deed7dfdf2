"""Loaded into every task's ``caddie`` process by ``caddie batch`` (``-e``): the batch's stop signal.

When the file named by ``CADDIE_BATCH_STOP_FILE`` exists (the batch's spend cap was reached, or Ctrl+C),
the run ends after the current turn — at the same point where a goal's own budget check stops it: the
reply's tool calls still run and no further model request is made. The goal stays active in the session,
so the next ``caddie batch`` run continues it.
"""

from __future__ import annotations

import os

from caddie.extensions.api import AssistantMessage, ExtensionAPI, ExtensionContext, MessageEndEvent

STOP_FILE_ENV = "CADDIE_BATCH_STOP_FILE"


def register(api: ExtensionAPI) -> None:
    path = os.environ.get(STOP_FILE_ENV)
    if not path:
        return

    def on_message_end(event: MessageEndEvent, ctx: ExtensionContext) -> None:
        if isinstance(event.message, AssistantMessage) and os.path.exists(path):
            ctx.stop_after_turn()

    api.on("message_end", on_message_end)
