"""What mulligan saved, computed from the session itself: per request, the tokens it did not resend, and their price.

Call ``session_savings(ctx.session, model=ctx.model, config=...)`` from an extension handler or command, or
``compute_savings(entries, branch, model=...)`` with a session's entries (file order) and a branch (root →
leaf) from anywhere (``caddie session show --stats``, the HTML export). Both are pure: nothing is written.
For a figure refreshed after every turn (the footer, ``--mode json`` events) keep one ``SavingsTracker`` per
session and call ``tracker.update(entries, branch)``: it only processes the requests made since its last call
(1,000 requests over 2,000 messages: ~30 ms from scratch).

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

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

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
    estimate_message_tokens_utf16,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.markers import MarkerBundle, MarkerIndex
from caddie.extensions.bundled.mulligan.transforms import BranchIndexer, FilterTrace, filter_pipeline

__all__ = [
    "ModelLookup",
    "RequestSavings",
    "SavingsTracker",
    "SessionSavings",
    "compute_savings",
    "session_savings",
]

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
    series: tuple[tuple[str, int, int], ...] = ()
    """Every request on the branch, in order: (answering entry id, tokens sent, tokens without the markers)
    — messages only, as above (the HTML export's chart)."""

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

    Each request costs one filter pass (linear in its messages); for a figure refreshed after every turn keep
    a ``SavingsTracker``, which only looks at the requests made since its last update.
    """
    return SavingsTracker(model=model, config=config).update(entries, branch)


class SavingsTracker:
    """``compute_savings`` kept up to date: ``update(entries, branch)`` processes only the assistant messages
    added since the previous call (when ``branch`` extends the previous one; otherwise it starts over)."""

    def __init__(
        self, *, model: Model | ModelLookup | None = None, config: MulliganConfig | None = None
    ) -> None:
        self._model = model
        self._config = config or MulliganConfig()
        self._generation = 0
        """Changes whenever ``_requests`` does (``totals`` sums them again then)."""
        self._totals: tuple[int, float] = (0, 0.0)
        self._totals_of = -1
        self._reset()

    def _reset(self) -> None:
        self._depth = 0
        self._leaf_id: str | None = None
        self._markers = MarkerIndex()
        self._indexer = BranchIndexer()
        self._messages: list[AgentMessage] = []
        self._cum = [0]  # tokens of self._messages[:i]
        self._cum_overhead = [0]
        self._built_at = 0  # messages already in the context when the last compaction was met (rebuilt)
        self._previous_view: list[AgentMessage] | None = None
        self._previous_length: int | None = None  # messages of the previous request's unfiltered context
        self._order: dict[str, int] = {}
        self._order_seen = 0
        self._requests: list[RequestSavings] = []
        self._series: list[tuple[str, int, int]] = []
        self._total = 0
        self._priced = True
        self._generation += 1  # ``_requests`` is a new list

    def update(self, entries: Sequence[SessionEntry], branch: Sequence[SessionEntry]) -> SessionSavings:
        self.advance(entries, branch)
        return self.savings()

    def savings(self) -> SessionSavings:
        """The figures as of the last ``advance`` (``update``'s result)."""
        return SessionSavings(
            tuple(self._requests), self._total, self._priced and bool(self._requests), tuple(self._series)
        )

    def totals(self) -> tuple[int, float, bool]:
        """``(tokens, cost, priced)`` of ``savings()``, without building it: summed again only when a
        request was listed since the last call (what a footer refreshed after every turn needs)."""
        if self._totals_of != self._generation:
            listed = SessionSavings(tuple(self._requests))
            self._totals = (listed.tokens, listed.cost)
            self._totals_of = self._generation
        return (*self._totals, self._priced and bool(self._requests))

    def advance(self, entries: Sequence[SessionEntry], branch: Sequence[SessionEntry]) -> None:
        """Process the assistant messages added since the last call (``update`` without its result)."""
        depth = self._depth
        if not (0 < depth <= len(branch) and branch[depth - 1].id == self._leaf_id) and depth:
            self._reset()
            depth = 0
        for i in range(self._order_seen, len(entries)):
            self._order[entries[i].id] = i
        self._order_seen = len(entries)
        for k in range(depth, len(branch)):
            entry = branch[k]
            if isinstance(entry, CompactionEntry):
                self._rebuild(branch[: k + 1])
                continue
            if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                self._request(entries, branch, k, entry.id, entry.message)
            self._extend(entry_to_context_messages(entry))
        self._depth = len(branch)
        self._leaf_id = branch[-1].id if branch else None

    def _extend(self, produced: Sequence[AgentMessage]) -> None:
        for m in produced:
            self._messages.append(m)
            n = estimate_message_tokens_utf16(m)
            self._cum.append(self._cum[-1] + n)
            self._cum_overhead.append(self._cum_overhead[-1] + (n if _is_overhead(m) else 0))

    def _rebuild(self, path: Sequence[SessionEntry]) -> None:
        self._messages, self._cum, self._cum_overhead = [], [0], [0]
        for e in _context_entries(path):
            self._extend(entry_to_context_messages(e))
        self._previous_length = None  # the cache holds nothing that matches the new context's start

    def _request(
        self,
        entries: Sequence[SessionEntry],
        branch: Sequence[SessionEntry],
        k: int,
        entry_id: str,
        message: AssistantMessage,
    ) -> None:
        self._total += 1
        messages = self._messages
        n = len(messages)
        view = messages
        trace = FilterTrace()
        config = self._config
        if config.enabled:
            # The markers written before this request (file order): read on from the last request's.
            markers = self._markers.update(_Prefix(entries, self._order.get(entry_id, len(entries))))
            bundle = markers.bundle() if markers.has_rewinds_or_shrinks() else MarkerBundle()
            if bundle.rewinds or bundle.shrinks:
                # The branch is indexed only for a request that has markers to apply; the index then catches
                # up on the entries since its last use (it is the same either way: see BranchIndexer).
                prefix = branch[:k]
                tail = self._indexer.tail(prefix)
                view = filter_pipeline(
                    messages,
                    bundle.rewinds,
                    bundle.shrinks,
                    config.rewind.protected_roles,
                    prefix,
                    tail=tail,
                    trace=trace,
                )
        # the unfiltered world only grows, so its previous request is a prefix (until a compaction)
        shared = self._previous_length if self._previous_length is not None else 0
        previous_view, self._previous_view, self._previous_length = self._previous_view, view, n
        if view is messages:
            self._series.append((entry_id, self._cum[n], self._cum[n]))
            return
        rates = _cost_of(self._model, message)
        unfiltered_cost = _rate(self._cum[shared], self._cum[n] - self._cum[shared], rates)
        unfiltered = self._cum[n]
        sent, overhead = unfiltered, self._cum_overhead[n]
        for i in trace.hidden:
            sent -= self._cum[i + 1] - self._cum[i]
            overhead -= self._cum_overhead[i + 1] - self._cum_overhead[i]
        for i, (_, replacement) in trace.shrunk.items():
            if i in trace.hidden:
                continue
            n_new = estimate_message_tokens_utf16(replacement)
            sent += n_new - (self._cum[i + 1] - self._cum[i])
            overhead += (n_new if _is_overhead(replacement) else 0) - (
                self._cum_overhead[i + 1] - self._cum_overhead[i]
            )
        self._series.append((entry_id, sent, unfiltered))
        if sent == unfiltered and not trace.hidden:
            return
        sent_cost = _price(view, previous_view, rates, sent)
        if rates is None:
            self._priced = False
        self._generation += 1
        self._requests.append(
            RequestSavings(
                entry_id=entry_id,
                provider=message.provider,
                model=message.model,
                sent_tokens=sent,
                unfiltered_tokens=unfiltered,
                overhead_tokens=overhead,
                sent_cost=sent_cost,
                unfiltered_cost=unfiltered_cost,
            )
        )


class _Prefix(Sequence[SessionEntry]):
    """The first ``n`` entries of a list, without copying them (``MarkerIndex.update`` reads only the end)."""

    __slots__ = ("_entries", "_n")

    def __init__(self, entries: Sequence[SessionEntry], n: int) -> None:
        self._entries = entries
        self._n = min(n, len(entries))

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[SessionEntry]:
        return itertools.islice(self._entries, self._n)

    @overload
    def __getitem__(self, index: int) -> SessionEntry: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[SessionEntry]: ...

    def __getitem__(self, index: int | slice) -> SessionEntry | Sequence[SessionEntry]:
        if isinstance(index, slice):
            return self._entries[slice(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(index)
        return self._entries[index]


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


def _rate(cached: int, fresh: int, rates: _Rates | None) -> float | None:
    if rates is None:
        return None
    if not rates.cache_read:
        cached, fresh = 0, cached + fresh
    return (cached * rates.cache_read + fresh * rates.input) / 1_000_000


def _price(
    messages: Sequence[AgentMessage],
    previous: Sequence[AgentMessage] | None,
    rates: _Rates | None,
    total: int,
) -> float | None:
    """Dollars for ``messages`` (``total`` tokens): the prefix shared with ``previous`` at the cache-read rate
    (when the model has one), the rest at the input rate."""
    if rates is None:
        return None
    shared = 0
    if rates.cache_read and previous:
        for a, b in zip(messages, previous, strict=False):
            if a is not b and a != b:
                break
            shared += 1
    fresh = sum(estimate_message_tokens_utf16(m) for m in messages[shared:])
    return _rate(total - fresh, fresh, rates)


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


def format_tokens(n: int) -> str:
    """950, 1.2k, 48k, 1.5M."""
    if n < 1000:
        return str(n)
    if n < 10_000:
        return f"{n / 1000:.1f}k"
    if n < 1_000_000:
        return f"{round(n / 1000)}k"
    return f"{n / 1_000_000:.1f}M"


def format_savings_status(tokens: int, cost: float | None) -> str:
    """``mulligan −48k tok · −$0.14`` (the cost part only when the model has prices)."""
    text = f"mulligan \u2212{format_tokens(tokens)} tok"
    if cost is not None:
        sign = "\u2212" if cost >= 0 else "+"
        amount = abs(cost)
        text += f" · {sign}${amount:.2f}" if amount >= 0.01 or amount == 0 else f" · {sign}${amount:.3f}"
    return text


def savings_json(savings: SessionSavings) -> dict[str, object]:
    """The figures as the ``mulligan_savings`` event carries them (``--mode json``, RPC)."""
    return {
        "tokens": savings.tokens,
        "netTokens": savings.net_tokens,
        "overheadTokens": savings.overhead_tokens,
        "cost": round(savings.cost, 6) if savings.priced else None,
        "requests": len(savings.requests),
        "requestsTotal": savings.requests_total,
        "status": format_savings_status(savings.tokens, savings.cost if savings.priced else None),
    }
