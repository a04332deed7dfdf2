"""What the model is sent of each entry, as the extensions answer it (the ``entry_visibility`` event).

Entries a compaction summarises are the host's own answer. For the rest, the host builds, for each branch, the context it would send from that branch's leaf (compaction-aware, one
message per entry, each message carrying the id of its entry) and asks every extension which entries its
``context`` handler hides or sends in another form. The host knows nothing about any extension's rules.

An entry shared by several branches is decided on the active branch when it lies on it, otherwise on the
newest branch through it.
"""

from __future__ import annotations

from collections.abc import Mapping

from caddie.ai.messages import AgentMessage, copy_messages
from caddie.extensions.api import EntryVisibility, EntryVisibilityEvent
from caddie.extensions.runner import ExtensionRunner
from caddie.session.context import context_entries_of_path
from caddie.session.entries import CompactionEntry, SessionEntry, entry_to_context_messages
from caddie.session.store import SessionStore

Visibility = Mapping[str, EntryVisibility]
"""Entry id → how the model is sent it; entries not in it are sent as they are."""


def branch_ends(store: SessionStore) -> list[str]:
    """The active leaf first, then every other leaf of the tree, newest first."""
    parents = {e.parent_id for e in store.entries() if e.parent_id}
    leaves = [e.id for e in store.entries() if e.id not in parents]
    ends = [store.leaf_id] if store.leaf_id else []
    ends.extend(leaf for leaf in reversed(leaves) if leaf != store.leaf_id)
    return ends


def branch_context(branch: list[SessionEntry]) -> EntryVisibilityEvent:
    """The event for one branch: its entries, the context built from them, and each message's entry id."""
    messages: list[AgentMessage] = []
    entry_ids: list[str] = []
    for entry in context_entries_of_path(branch):
        for message in entry_to_context_messages(entry):
            messages.append(message)
            entry_ids.append(entry.id)
    return EntryVisibilityEvent(branch, copy_messages(messages), entry_ids)


def compacted_away(branch: list[SessionEntry]) -> dict[str, EntryVisibility]:
    """The host's own part: entries of the branch that its latest compaction summarises instead of sending."""
    kept = {e.id for e in context_entries_of_path(branch)}
    compaction = next((e for e in reversed(branch) if isinstance(e, CompactionEntry)), None)
    if compaction is None:
        return {}
    answer = EntryVisibility("hidden", "summarized by a compaction", cause_entry_id=compaction.id)
    return {e.id: answer for e in branch if e.id not in kept and entry_to_context_messages(e)}


async def collect_visibility(
    store: SessionStore, runner: ExtensionRunner | None = None
) -> dict[str, EntryVisibility]:
    """What the model is sent of each entry: compactions (the host's), then the extensions' answers."""
    out: dict[str, EntryVisibility] = {}
    ask = runner is not None and runner.has_handlers("entry_visibility")
    decided: set[str] = set()
    for leaf_id in branch_ends(store):
        branch = store.branch(leaf_id)
        new = [e.id for e in branch if e.id not in decided]
        if not new:
            continue
        answers = compacted_away(branch)
        if ask:
            assert runner is not None
            event = branch_context(branch)
            await runner.emit("entry_visibility", event)
            for entry_id, answer in event.answers.items():
                if isinstance(answer, EntryVisibility) and answer.state in ("hidden", "replaced"):
                    answers.setdefault(entry_id, answer)
        for entry_id in new:
            decided.add(entry_id)
            if entry_id in answers:
                out[entry_id] = answers[entry_id]
    return out
