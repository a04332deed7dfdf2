"""The window of a running ``AgentSession``: its next request as the extensions shape it, what they withhold,
and what they saved the bill (the ``savings`` event)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from caddie.ai.messages import (
    AgentMessage,
    BashExecutionMessage,
)
from caddie.extensions.api import EntryVisibility
from caddie.modes.context_stats.count import (
    ContextStats,
    attribute_entries,
    compute_context_stats,
)
from caddie.modes.savings import ask_savings, model_finder
from caddie.session.entries import CompactionEntry


async def stats_of_session(session: Any, registry: Any = None, *, live: bool = False) -> ContextStats:
    """``compute_context_stats`` for an ``AgentSession``: its next request as the extensions shape it, what
    they withhold, and what they saved.

    ``live=False`` (a session opened read-only, ``caddie context --stats``): the extensions' ``context``
    handlers run, so per-request additions (mulligan's nudges) are counted too — whatever state they change
    goes away with the view. ``live=True`` (``/context`` in a running session): only the side-effect-free
    ``entry_visibility`` answers are used, because a ``context`` handler may keep state about the requests it
    sees (mulligan's high-water latch and its stale-shrink retirement, which writes entries)."""
    from caddie.modes.export_html.visibility import branch_context, compacted_away

    store = session.store
    branch = store.branch()
    event = branch_context(branch)
    visibility: dict[str, EntryVisibility] = {}
    if session.extensions.has_handlers("entry_visibility"):
        await session.extensions.emit("entry_visibility", event)
        for entry_id, answer in event.answers.items():
            if isinstance(answer, EntryVisibility) and answer.state in ("hidden", "replaced"):
                visibility[entry_id] = answer
    if live:
        sent = apply_visibility(event.messages, event.entry_ids, visibility)
    else:
        sent = await session.context_for_next_request()
    compacted = compacted_away(branch)
    sent_ids = attribute_entries(sent, event.messages, event.entry_ids, visibility)
    # what convert_to_llm keeps (it drops ``!!`` bash runs)
    kept = [
        (m, i)
        for m, i in zip(sent, sent_ids, strict=True)
        if not (isinstance(m, BashExecutionMessage) and m.exclude_from_context)
    ]
    settings = session.settings
    reserve = settings.compaction_reserve_tokens if settings.compaction_enabled else 0
    order = {e.id: i for i, e in enumerate(store.entries())}
    on_branch = {e.id: i for i, e in enumerate(branch)}
    causes = [order.get(a.cause_entry_id or "", -1) for a in visibility.values()]

    def changed_after(entry_id: str | None) -> bool:
        if entry_id is None or entry_id not in order:
            return True
        at = order[entry_id]
        later_compaction = any(
            isinstance(e, CompactionEntry) for e in branch[on_branch.get(entry_id, len(branch)) + 1 :]
        )
        return later_compaction or any(c > at for c in causes)

    state = session.state()
    stats = compute_context_stats(
        changed_after=changed_after,
        system_prompt=state.system_prompt,
        tools=[t.as_provider_tool() for t in state.tools],
        sent=[m for m, _ in kept],
        sent_entry_ids=[i for _, i in kept],
        branch_messages=event.messages,
        entry_ids=event.entry_ids,
        visibility=visibility,
        model=session.model,
        reserve_tokens=reserve,
        savings=await ask_savings(session.extensions, branch, model_finder(registry, session.model)),
    )
    if compacted:
        stats.notes.append(f"{len(compacted)} earlier entries are summarised by a compaction.")
    if live:
        stats.notes.append(
            "Lines an extension adds to a single request (mulligan's nudges) are not shown here; "
            "caddie context --stats counts them."
        )
    return stats


def apply_visibility(
    messages: Sequence[AgentMessage], entry_ids: Sequence[str], visibility: Mapping[str, EntryVisibility]
) -> list[AgentMessage]:
    """The branch's context with what the extensions withhold applied: hidden entries left out, replaced ones
    swapped for what is sent instead."""
    out: list[AgentMessage] = []
    for message, entry_id in zip(messages, entry_ids, strict=True):
        answer = visibility.get(entry_id)
        if answer is None:
            out.append(message)
        elif answer.state == "replaced" and answer.replacement is not None:
            out.append(answer.replacement)
    return out
