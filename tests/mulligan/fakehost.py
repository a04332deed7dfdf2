"""The mulligan extension on ``caddie.testing``'s fake host, for deterministic tests of its handlers and tools.

``Harness(settings)`` registers the bundled extension with a ``mulligan`` settings block (applied through a
session start, as the host applies it) and adds mulligan's own readers: its runtime, its markers, its notes.
Everything else — the session tree, the UI, the host, the message builders, failure injection through
``host.fail`` — is ``caddie.testing``'s, the same fake host any extension author uses.
"""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import CustomMessageEntry, TextContent, ToolResult
from caddie.extensions.bundled.mulligan import Mulligan, register
from caddie.testing import (
    Failures,
    FakeContext,
    FakeHost,
    FakeSession,
    FakeUI,
    assistant,
    assistant_text,
    call,
    custom,
    result,
    text_of,
    user,
)
from caddie.testing import Harness as ExtensionHarness

__all__ = [
    "NOTE",
    "Failures",
    "FakeContext",
    "FakeHost",
    "FakeSession",
    "FakeUI",
    "Harness",
    "assistant",
    "assistant_text",
    "call",
    "custom",
    "result",
    "result_text",
    "text_of",
    "user",
]


class Harness(ExtensionHarness):
    """mulligan registered on a bound API; ``settings`` is its ``mulligan`` block (None: no session start)."""

    def __init__(self, settings: dict[str, Any] | None = None, session_id: str = "session-1") -> None:
        super().__init__(register, name="mulligan", session_id=session_id)
        self.mulligan: Mulligan = self.state
        if settings is not None:
            self.configure(settings)

    def configure(self, settings: dict[str, Any]) -> None:
        """Apply a ``mulligan`` settings block the way the host does: through a session start."""
        super().configure({"mulligan": settings})

    def tool(self, name: str) -> Any:  # the tests read its JSON Schema parameters as plain dicts
        return super().tool(name)

    @property
    def rt(self) -> Any:
        return self.mulligan.runtimes.get(self.session.session_id)

    def markers_data(self, custom_type: str) -> list[dict[str, Any]]:
        return [e.data for e in self.custom_entries(custom_type)]

    def notes(self) -> list[CustomMessageEntry]:
        return [
            e
            for e in self.session.all
            if isinstance(e, CustomMessageEntry) and e.custom_type == "mulligan:note"
        ]


def result_text(out: ToolResult) -> str:
    block = out.content[0]
    assert isinstance(block, TextContent)
    return block.text


NOTE = {"what_happened": "went wrong", "true_current_state": "state", "next": "do next"}
