"""Trim old tool results: a small extension that keeps context lean, and says what it saved.

Load it with ``caddie -e examples/extensions/trim_results.py`` (or copy it to ``~/.caddie/agent/extensions/``).
Every request keeps the two newest tool results whole; an older result longer than 2,000 characters is sent
as its first 20 lines and a line saying how much was left out. The session file keeps everything.

It uses three public events, the way a bundled extension does:
- ``context`` changes the request (the rule below);
- ``entry_visibility`` tells ``caddie export``, ``/context`` and the compaction summariser which entries the
  rule shortens (the same rule, no second copy of it);
- ``savings`` tells ``/context``, ``caddie session show --stats`` and the export what the rule saved the bill,
  request by request, computed from the session itself.

``examples/extensions/test_trim_results.py`` tests it with ``caddie.testing``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from caddie.extensions.api import (
    AgentMessage,
    AssistantMessage,
    ContextEvent,
    ContextResult,
    EntryVisibility,
    EntryVisibilityEvent,
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    Savings,
    SavingsEvent,
    SessionEntry,
    TextContent,
    ToolResultMessage,
    entry_to_context_messages,
    replace,
    utf16_message_chars,
)

KEEP_NEWEST = 2
LIMIT_CHARS = 2_000
HEAD_LINES = 20


# -- the rule (pure) -------------------------------------------------------------------------------


def trimmed(message: ToolResultMessage) -> ToolResultMessage | None:
    """The shortened result, or None when it is short enough to send whole."""
    text = "".join(b.text for b in message.content if isinstance(b, TextContent))
    if len(text) <= LIMIT_CHARS:
        return None
    head = "\n".join(text.splitlines()[:HEAD_LINES])
    note = f"\n[trim-results: {len(text) - len(head):,} more characters left out of this old result]"
    return replace(message, content=[TextContent(head + note)])


def apply_rule(messages: Sequence[AgentMessage]) -> dict[int, ToolResultMessage]:
    """Index → the shortened message, for every old tool result the rule shortens."""
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolResultMessage)]
    out: dict[int, ToolResultMessage] = {}
    for i in results[:-KEEP_NEWEST] if len(results) > KEEP_NEWEST else []:
        message = messages[i]
        assert isinstance(message, ToolResultMessage)
        short = trimmed(message)
        if short is not None:
            out[i] = short
    return out


def tokens(message: AgentMessage) -> int:
    return math.ceil(utf16_message_chars(message) / 4)


def savings_of(branch: Sequence[SessionEntry]) -> Savings:
    """What the rule kept off every request of the branch (each assistant message answers one request). The
    extension adds nothing to a request (no tools, no messages), so the net is the gross."""
    context: list[AgentMessage] = []
    series: list[tuple[str, int, int | None]] = []
    saved = lighter = 0
    for entry in branch:
        if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
            full = sum(map(tokens, context))
            kept_off = sum(tokens(context[i]) - tokens(short) for i, short in apply_rule(context).items())
            series.append((entry.id, full - kept_off, full))
            saved += kept_off
            lighter += kept_off > 0
        context.extend(entry_to_context_messages(entry))
    status = f"trim-results \u2212{saved:,} tok"
    return Savings(
        source="trim-results",
        tokens=saved,
        gross_tokens=saved,
        requests=lighter,
        requests_total=len(series),
        status=status,
        details=f"old tool results sent as their first {HEAD_LINES} lines",
        series=tuple(series),
    )


# -- the glue --------------------------------------------------------------------------------------


def register(api: ExtensionAPI) -> None:
    def on_context(event: ContextEvent, ctx: ExtensionContext) -> ContextResult | None:
        shorter = apply_rule(event.messages)
        if not shorter:
            return None
        return ContextResult([shorter.get(i, m) for i, m in enumerate(event.messages)])

    def on_visibility(event: EntryVisibilityEvent, ctx: ExtensionContext) -> None:
        for i, short in apply_rule(event.messages).items():
            event.mark(event.entry_ids[i], EntryVisibility("replaced", "trimmed by trim-results", short))

    def on_savings(event: SavingsEvent, ctx: ExtensionContext) -> None:
        event.report(savings_of(event.branch))

    api.on("context", on_context)
    api.on("entry_visibility", on_visibility)
    api.on("savings", on_savings)
