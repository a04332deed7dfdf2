"""The context the session would build right now, with the entry behind each message.

Tools resolve spans and targets against this snapshot (the same messages the filter sees, before filtering)
and translate message indices into stable entry ids, which is what markers persist.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from caddie.extensions.api import AgentMessage, ExtensionContext, SessionEntry, entry_to_context_messages


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    entries: list[SessionEntry]
    messages: list[AgentMessage]
    owners: list[int]
    """For each message, the index in ``entries`` of the entry that produced it."""

    def entry_id_at(self, message_index: int) -> str | None:
        if not 0 <= message_index < len(self.owners):
            return None
        entry_id = self.entries[self.owners[message_index]].id
        return entry_id or None

    def entry_ids_of(self, message_indices: Collection[int]) -> list[str]:
        """The ids of the entries producing any of ``message_indices``, each once, in entry order."""
        owners = sorted({self.owners[i] for i in message_indices if 0 <= i < len(self.owners)})
        return [self.entries[k].id for k in owners if self.entries[k].id]


def snapshot_of(entries: Sequence[SessionEntry]) -> ContextSnapshot:
    messages: list[AgentMessage] = []
    owners: list[int] = []
    for k, entry in enumerate(entries):
        produced = entry_to_context_messages(entry)
        messages.extend(produced)
        owners.extend([k] * len(produced))
    return ContextSnapshot(list(entries), messages, owners)


def context_snapshot(ctx: ExtensionContext) -> ContextSnapshot:
    """Snapshot of ``ctx.session.context_entries()`` (compaction-aware)."""
    return snapshot_of(ctx.session.context_entries())
