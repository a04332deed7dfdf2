"""What mulligan saved, computed from the session itself: per request, the tokens it did not resend, and their price.

Call ``session_savings(ctx.session, model=ctx.model, config=...)`` from an extension handler or command, or
``compute_savings(entries, branch, model=...)`` with a session's entries (file order) and a branch (root →
leaf) from anywhere (``caddie session show --stats``, the HTML export). Both are pure: nothing is written.

How it is computed, for every assistant message on the branch (each answers exactly one model request):

1. The request's context is rebuilt as the host built it: the branch up to that message, compaction-aware.
2. The mulligan markers that existed then (every ``mulligan:*`` entry written before that message, in file
   order, cancels applied) are run through the very ``filter_pipeline`` the ``context`` handler runs, on the
   same branch. The difference between the two lists is what mulligan did not resend on that request.
3. Tokens are mulligan's estimate (characters / 4), per message and rounded up per message, so the numbers
   add up: ``saved_tokens`` = hidden messages + (shrunk originals − their stamped summaries).
   ``overhead_tokens`` is what mulligan's own work cost on that request: its notes, its tool calls and their
   results, still in view. The net saving is ``saved_tokens − overhead_tokens``. Nudges (never persisted)
   and the tool schemas are not counted.
4. Price, from the model's ``cost`` fields (dollars per million tokens): when the model has a cache-read
   price, prompts are taken to be prefix-cached, so in each world (with and without the markers) the
   messages a request shares, from the start, with the previous request of that world are priced at the
   cache-read rate and the rest at the input rate. Hiding content therefore saves the cache-read price of
   content that would have been re-read, and costs the input price of what follows a newly hidden span on the
   first request after it (the cache breaks there); ``saved_cost`` is the net of both. Without a cache-read
   price every token is priced at the input rate. Cache-write surcharges are not counted.

Only requests where the markers changed the view are listed (``requests``); totals are their sums.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from caddie.extensions.api import (
    AgentMessage,
    AssistantMessage,
    CompactionEntry,
    CustomMessage,
    MessageEntry,
    Model,
    ReadonlySession,
    SessionEntry,
    ToolCall,
    ToolResultMessage,
    entry_to_context_messages,
)
from caddie.extensions.mulligan.config import MulliganConfig
from caddie.extensions.mulligan.markers import MarkerIndex
from caddie.extensions.mulligan.tokens import estimate_message_tokens
from caddie.extensions.mulligan.transforms import filter_pipeline

__all__ = ["ModelLookup", "RequestSavings", "SessionSavings", "compute_savings", "session_savings"]

ModelLookup = Callable[[str, str], Model | None]
"""``(provider, model id) → Model``: how the model of each request is found (e.g. a registry's ``find``)."""


@dataclass(frozen=True, slots=True)
class RequestSavings:
    """One request on which mulligan's markers changed what the model was sent."""

    entry_id: str
    """The assistant message entry that answered the request."""
    provider: str
    model: str
    sent_tokens: int
    """Estimated tokens of the messages actually sent (the filtered view; nudges excluded)."""
    unfiltered_tokens: int
    """The same request's messages had the markers not existed."""
    overhead_tokens: int
    """Mulligan's own notes, tool calls and results among the messages sent."""
    sent_cost: float | None
    """Dollars the sent messages cost (see the module docstring); None when the model has no prices."""
    unfiltered_cost: float | None

    @property
    def saved_tokens(self) -> int:
        """Tokens not resent on this request (hidden, or replaced by a shorter summary)."""
        return self.unfiltered_tokens - self.sent_tokens

    @property
    def saved_cost(self) -> float | None:
        if self.sent_cost is None or self.unfiltered_cost is None:
            return None
        return self.unfiltered_cost - self.sent_cost


@dataclass(frozen=True, slots=True)
class SessionSavings:
    requests: tuple[RequestSavings, ...] = ()
    requests_total: int = 0
    """Every request on the branch (assistant messages), changed or not."""
    priced: bool = field(default=False)
    """True when every listed request had a model with prices (so ``cost`` is complete)."""

    @property
    def tokens(self) -> int:
        """Tokens not resent, summed over the requests (what the footer shows as ``−48k tok``)."""
        return sum(r.saved_tokens for r in self.requests)

    @property
    def overhead_tokens(self) -> int:
        return sum(r.overhead_tokens for r in self.requests)

    @property
    def net_tokens(self) -> int:
        """``tokens`` minus what mulligan's own notes, calls and results cost on those requests."""
        return self.tokens - self.overhead_tokens

    @property
    def cost(self) -> float:
        """Dollars saved (requests without a priced model count 0)."""
        return sum(r.saved_cost or 0.0 for r in self.requests)


def session_savings(
    session: ReadonlySession,
    *,
    model: Model | ModelLookup | None = None,
    config: MulliganConfig | None = None,
) -> SessionSavings:
    """``compute_savings`` for the session's current branch (``ctx.session`` in a handler)."""
    return compute_savings(session.entries(), session.branch(), model=model, config=config)


def compute_savings(
    entries: Sequence[SessionEntry],
    branch: Sequence[SessionEntry],
    *,
    model: Model | ModelLookup | None = None,
    config: MulliganConfig | None = None,
) -> SessionSavings:
    """Savings of every request on ``branch`` since a mulligan marker took effect (see the module docstring).

    ``entries``: the whole session in file order (markers are read from it, all branches, as the filter
    reads them). ``branch``: the entries from the root to the leaf. ``model``: one ``Model`` for every
    request, or a lookup by the (provider, model id) each assistant message records; None gives tokens only.
    ``config``: mulligan's settings (protected roles; ``enabled: false`` means nothing is filtered).
    """
    config = config or MulliganConfig()
    order = {e.id: i for i, e in enumerate(entries)}
    markers = MarkerIndex()
    messages_of: dict[str, list[AgentMessage]] = {}
    tokens_of: dict[int, int] = {}
    previous: dict[str, list[AgentMessage]] = {}  # world → messages of its previous request
    out: list[RequestSavings] = []
    total = 0
    priced = True

    def tokens(message: AgentMessage) -> int:
        key = id(message)
        n = tokens_of.get(key)
        if n is None:
            n = tokens_of[key] = estimate_message_tokens(message)
        return n

    for k, entry in enumerate(branch):
        if not (isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage)):
            continue
        total += 1
        prefix = branch[:k]
        messages: list[AgentMessage] = []
        for e in _context_entries(prefix):
            produced = messages_of.get(e.id)
            if produced is None:
                produced = messages_of[e.id] = entry_to_context_messages(e)
            messages.extend(produced)
        view = messages
        if config.enabled:
            at = order.get(entry.id, len(entries))
            bundle = markers.update(entries[:at]).bundle()
            if bundle.rewinds or bundle.shrinks:
                view = filter_pipeline(
                    messages, bundle.rewinds, bundle.shrinks, config.rewind.protected_roles, prefix
                )
        cost = _cost_of(model, entry.message)
        sent_cost = _price(view, previous.get("sent"), cost, tokens)
        unfiltered_cost = _price(messages, previous.get("unfiltered"), cost, tokens)
        previous["sent"], previous["unfiltered"] = view, messages
        if view is messages:
            continue
        sent = sum(tokens(m) for m in view)
        unfiltered = sum(tokens(m) for m in messages)
        if sent == unfiltered and len(view) == len(messages):
            continue
        if cost is None:
            priced = False
        out.append(
            RequestSavings(
                entry_id=entry.id,
                provider=entry.message.provider,
                model=entry.message.model,
                sent_tokens=sent,
                unfiltered_tokens=unfiltered,
                overhead_tokens=sum(tokens(m) for m in view if _is_overhead(m)),
                sent_cost=sent_cost,
                unfiltered_cost=unfiltered_cost,
            )
        )
    return SessionSavings(tuple(out), total, priced and bool(out))


def _context_entries(path: Sequence[SessionEntry]) -> Sequence[SessionEntry]:
    """The compaction-aware selection the host builds a context from: [latest compaction, the entries it kept
    before itself, every entry after it], or the whole path."""
    for i in range(len(path) - 1, -1, -1):
        compaction = path[i]
        if isinstance(compaction, CompactionEntry):
            kept: list[SessionEntry] = [compaction]
            found = False
            for e in path[:i]:
                found = found or e.id == compaction.first_kept_entry_id
                if found:
                    kept.append(e)
            kept.extend(path[i + 1 :])
            return kept
    return path


@dataclass(frozen=True, slots=True)
class _Rates:
    input: float
    cache_read: float


def _cost_of(model: Model | ModelLookup | None, message: AssistantMessage) -> _Rates | None:
    found: Model | None
    if model is None:
        return None
    if isinstance(model, Model):
        found = model
    else:
        try:
            found = model(message.provider, message.model)
        except Exception:
            found = None
    if found is None:
        return None
    c = found.cost
    if not (c.input or c.cache_read):
        return None
    return _Rates(c.input, c.cache_read)


def _price(
    messages: Sequence[AgentMessage],
    previous: Sequence[AgentMessage] | None,
    rates: _Rates | None,
    tokens: Callable[[AgentMessage], int],
) -> float | None:
    """Dollars for ``messages``: the prefix shared with ``previous`` at the cache-read rate (when the model has
    one), the rest at the input rate."""
    if rates is None:
        return None
    shared = 0
    if rates.cache_read and previous:
        for a, b in zip(messages, previous, strict=False):
            if a is not b and a != b:
                break
            shared += 1
    cached = sum(tokens(m) for m in messages[:shared])
    fresh = sum(tokens(m) for m in messages[shared:])
    return (cached * rates.cache_read + fresh * rates.input) / 1_000_000


def _is_overhead(message: AgentMessage) -> bool:
    """Mulligan's own messages: its notes, assistant messages that only call mulligan tools, their results."""
    if isinstance(message, CustomMessage):
        return message.custom_type.startswith("mulligan:")
    if isinstance(message, ToolResultMessage):
        return message.tool_name.startswith("mulligan_")
    if isinstance(message, AssistantMessage):
        calls = [b for b in message.content if isinstance(b, ToolCall)]
        return bool(calls) and all(c.name.startswith("mulligan_") for c in calls)
    return False
