"""What mulligan saved the bill, computed from the session itself: per request, what it kept off, what it added,
and their price.

Call ``session_savings(ctx.session, model=ctx.model, config=...)`` from an extension handler or command, or
``compute_savings(entries, branch, model=...)`` with a session's entries (file order) and a branch (root →
leaf). Both are pure: nothing is written. For a figure refreshed after every turn (the footer, ``--mode json``
events) keep one ``SavingsTracker`` per session and call ``tracker.update(entries, branch)``: it only processes
the requests made since its last call.

Every assistant message on the branch answers one model request. For each, two requests are compared:

- **sent**: what mulligan's session sent — the context after the markers that existed then (every
  ``mulligan:*`` entry written before that message, in file order, cancels applied, run through the very
  ``filter_pipeline`` the ``context`` handler runs), plus the drift and high-water lines the ``context``
  handler appended (recomputed from the persisted turn metrics), plus mulligan's four tool schemas when the
  request carried them (always; with ``tools: "when-needed"`` from the ``mulligan:tools`` entry on);
- **without mulligan**: the same context with nothing hidden and nothing of mulligan's in it — no notes, no
  mulligan calls or results, no bloat reminders, no schemas. A request that only exists because the model's
  previous reply called nothing but mulligan tools has no counterpart: all of it is mulligan's cost.

The **net** saving is the difference (what the bill shows, and what the footer, ``/context``, ``caddie session
show --stats`` and the export report); the **gross** is what the markers kept off (unfiltered − filtered
messages). Tokens are mulligan's estimate (characters / 4, rounded up per message), so the figures add up.
The system prompt and the other tools (the base) are the same in both requests and cancel out, except in a
request that has no counterpart and in pricing; the caller gives their size (``base``) when it knows it, and it
is applied when the figures are read, so a tracker and a fresh computation asked at the same time agree.

Prices come from the model's ``cost`` fields (dollars per million tokens). Prompt caching is priced where the
provider reports it: when some request of the branch reports a cache read or write, every request is priced as
prefix-cached — in each world the start a request shares with that world's previous request (the tools and system prompt, then the messages up
to the first that differs) is priced at the cache-read rate, the rest at the input rate (the cache-write rate
when the provider reported cache writes for that request). Hiding content therefore saves the cache-read
price of what would have been re-read, and costs the full price of what follows a newly hidden span once; a
change of the tool list (``"when-needed"`` bringing the tools in) makes the whole request fresh once. The
output tokens of mulligan's own calls are priced at the output rate and count against the saving.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from caddie.extensions.api import (
    CHARS_PER_TOKEN,
    AgentMessage,
    AssistantMessage,
    CompactionEntry,
    CustomEntry,
    CustomMessage,
    MessageEntry,
    Model,
    ReadonlySession,
    SessionEntry,
    TextContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
    entry_to_context_messages,
    utf16_len,
    utf16_message_chars,
)
from caddie.extensions.bundled.mulligan.config import MulliganConfig
from caddie.extensions.bundled.mulligan.markers import TOOLS, EntryPrefix, MarkerBundle, MarkerIndex
from caddie.extensions.bundled.mulligan.notes import (
    BLOAT_REMINDER_MARK,
    render_drift_nudge,
    render_high_water_nudge,
)
from caddie.extensions.bundled.mulligan.nudges import drift_nudge_input, should_nudge, suppress_check
from caddie.extensions.bundled.mulligan.transforms import BranchIndexer, FilterTrace, filter_pipeline

__all__ = [
    "ModelLookup",
    "RequestSavings",
    "SavingsTracker",
    "SessionSavings",
    "compute_savings",
    "schema_tokens",
    "session_savings",
]

ModelLookup = Callable[[str, str], Model | None]
"""``(provider, model id) → Model``: how the model of each request is found (e.g. a registry's ``find``)."""


def _tokens(chars: int) -> int:
    """``ceil(chars / 4)``, in integers."""
    return -(-chars // CHARS_PER_TOKEN)


def schema_tokens(tools: Sequence[ToolDefinition]) -> int:
    """The estimated size of tool schemas on a request: the compact JSON of each tool as the OpenAI-compatible
    APIs send it (``{"type": "function", "function": {name, description, parameters, strict}}``; Anthropic's
    shape is a few characters shorter), characters / 4."""
    if not tools:
        return 0
    shapes = []
    for tool in tools:
        t = tool.as_provider_tool()
        function = {"name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
        shapes.append({"type": "function", "function": function})
    return _tokens(utf16_len(json.dumps(shapes, separators=(",", ":"), ensure_ascii=False)))


@dataclass(slots=True)
class RequestSavings:
    """One request on the branch: what mulligan's session sent, and what it would have sent without it (treat
    it as read-only: not frozen, because a frozen dataclass is several times slower to build, and a session
    makes one per request)."""

    entry_id: str
    """The assistant message entry that answered the request."""
    provider: str
    model: str
    sent_tokens: int
    """Messages sent (the filtered view; mulligan's own messages in it included)."""
    unfiltered_tokens: int
    """The same request's messages had no marker existed."""
    overhead_tokens: int
    """Of ``unfiltered_tokens``: mulligan's own messages (notes, its calls and their results) and the bloat
    reminders appended to results — everything a session without mulligan would not have carried."""
    nudge_tokens: int = 0
    """The drift and high-water lines appended to this request."""
    schema_tokens: int = 0
    """Mulligan's tool schemas, when this request carried them."""
    extra: bool = False
    """The model's previous reply called only mulligan tools: without mulligan this request would not exist."""
    sent_cost: float | None = None
    """Dollars of the request as sent beyond the system prompt and the other tools, prefix-cached; None when the
    model has no prices."""
    without_cost: float | None = None
    """Dollars of the request without mulligan, the same way (0 for an ``extra`` request)."""
    sent_cost_uncached: float | None = None
    """``sent_cost`` with every token at the input rate (a provider that reports no caching)."""
    without_cost_uncached: float | None = None
    base_rate: float = 0.0
    """Dollars saved per token of the system prompt and the other tools (the base) on this request, prefix-
    cached: the base is the same in both requests, but not always priced the same (a request with no
    counterpart, a cache break only one world has)."""
    base_rate_uncached: float = 0.0
    output_cost: float = 0.0
    """Dollars of the output tokens mulligan's calls in the answering reply took."""
    lighter: bool = False
    """The markers changed what this request sent."""

    @property
    def gross_tokens(self) -> int:
        """Tokens the markers kept off this request (hidden, or replaced by a shorter summary)."""
        return self.unfiltered_tokens - self.sent_tokens

    @property
    def with_tokens(self) -> int:
        """What mulligan's session sent, beyond the system prompt and the other tools."""
        return self.sent_tokens + self.nudge_tokens + self.schema_tokens

    @property
    def without_tokens(self) -> int | None:
        """What a session without mulligan sent instead (None: it made no such request)."""
        return None if self.extra else self.unfiltered_tokens - self.overhead_tokens

    def net_tokens(self, base: int = 0) -> int:
        """Tokens saved on this request, everything counted (negative: mulligan cost more than it saved);
        ``base``: the tokens of the system prompt and the other tools."""
        without = self.without_tokens
        if without is None:
            return -(self.with_tokens + base)
        return without - self.with_tokens

    def net_cost(self, cached: bool = True, base: int = 0) -> float | None:
        """Dollars saved on this request (``cached``: with the prompt cache priced)."""
        if cached:
            sent, without, rate = self.sent_cost, self.without_cost, self.base_rate
        else:
            sent, without, rate = self.sent_cost_uncached, self.without_cost_uncached, self.base_rate_uncached
        if sent is None or without is None:
            return None
        return without - sent + base * rate - self.output_cost


@dataclass(frozen=True, slots=True)
class SavingsTotals:
    """The figures of a branch, summed (what the footer, the event and the views show)."""

    tokens: int
    """Net tokens saved."""
    gross_tokens: int
    cost: float
    """Net dollars saved (0 without prices)."""
    priced: bool
    cached: bool
    lighter: int
    requests_total: int

    @property
    def overhead_tokens(self) -> int:
        return self.gross_tokens - self.tokens


@dataclass(frozen=True, slots=True)
class SessionSavings:
    requests: tuple[RequestSavings, ...] = ()
    """Every request on the branch, in order."""
    priced: bool = False
    """True when every request had a model with prices (so ``cost`` is complete)."""
    cached: bool = False
    """True when the provider reported prompt caching (a cache read or write) on some request of the branch:
    then every request is priced prefix-cached."""
    base: int = 0
    """Tokens of the system prompt and the other tools (as they are now)."""

    @property
    def requests_total(self) -> int:
        return len(self.requests)

    @property
    def lighter(self) -> int:
        """Requests the markers made lighter."""
        return sum(1 for r in self.requests if r.lighter)

    @property
    def tokens(self) -> int:
        """Net tokens saved: what the bill shows (the footer's ``−48k tok``)."""
        return sum(r.net_tokens(self.base) for r in self.requests)

    @property
    def gross_tokens(self) -> int:
        """Tokens the markers kept off the requests, before mulligan's own costs."""
        return sum(r.gross_tokens for r in self.requests)

    @property
    def overhead_tokens(self) -> int:
        """What mulligan added: its schemas, nudges, messages still sent, and requests made only for it."""
        return self.gross_tokens - self.tokens

    @property
    def cost(self) -> float:
        """Net dollars saved (requests without a priced model count 0)."""
        return sum(r.net_cost(self.cached, self.base) or 0.0 for r in self.requests)

    def totals(self) -> SavingsTotals:
        return SavingsTotals(
            self.tokens,
            self.gross_tokens,
            self.cost,
            self.priced,
            self.cached,
            self.lighter,
            self.requests_total,
        )

    @property
    def series(self) -> tuple[tuple[str, int, int | None], ...]:
        """Every request: (answering entry id, tokens sent with mulligan, tokens without it or None)."""
        return tuple((r.entry_id, r.with_tokens, r.without_tokens) for r in self.requests)


def session_savings(
    session: ReadonlySession,
    *,
    model: Model | ModelLookup | None = None,
    config: MulliganConfig | None = None,
    schema: int = 0,
    base: int = 0,
) -> SessionSavings:
    """``compute_savings`` for the session's current branch (``ctx.session`` in a handler)."""
    return compute_savings(
        session.entries(), session.branch(), model=model, config=config, schema=schema, base=base
    )


def compute_savings(
    entries: Sequence[SessionEntry],
    branch: Sequence[SessionEntry],
    *,
    model: Model | ModelLookup | None = None,
    config: MulliganConfig | None = None,
    schema: int = 0,
    base: int = 0,
) -> SessionSavings:
    """Savings of every request on ``branch`` (see the module docstring).

    ``entries``: the whole session in file order (markers are read from it, all branches, as the filter
    reads them). ``branch``: the entries from the root to the leaf. ``model``: one ``Model`` for every
    request, or a lookup by the (provider, model id) each assistant message records; None gives tokens only.
    ``config``: mulligan's settings (protected roles, nudges, ``tools``; ``enabled: false`` means nothing is
    filtered). ``schema``: tokens of mulligan's tool schemas (``schema_tokens``); ``base``: tokens of the
    system prompt and the other tools.
    """
    return SavingsTracker(model=model, config=config, schema=schema, base=base).update(entries, branch)


_NO_MARKERS = MarkerBundle()


@dataclass(frozen=True, slots=True)
class _Rates:
    input: float
    output: float
    cache_read: float
    cache_write: float
    window: int


class _World:
    """The requests of one world (with or without mulligan), for pricing the prefix each shares with the
    previous one."""

    __slots__ = ("started", "tools")

    def __init__(self) -> None:
        self.started = False
        self.tools: object = None

    def cached(self, tools: object) -> bool:
        """Whether this request can reuse the previous one's cache (same tools), and remember it."""
        reuse = self.started and tools == self.tools
        self.started, self.tools = True, tools
        return reuse


class SavingsTracker:
    """``compute_savings`` kept up to date: ``update(entries, branch)`` processes only the assistant messages
    added since the previous call (when ``branch`` extends the previous one; otherwise it starts over)."""

    def __init__(
        self,
        *,
        model: Model | ModelLookup | None = None,
        config: MulliganConfig | None = None,
        schema: int = 0,
        base: int = 0,
    ) -> None:
        self._model = model
        self._config = config or MulliganConfig()
        self._schema = schema
        self.base = base
        """Tokens of the system prompt and the other tools: applied to every request when the figures are read
        (so the footer and a view asked at the same time agree, whatever changed the tools since)."""
        self._reset()

    def _reset(self) -> None:
        self._depth = 0
        self._leaf_id: str | None = None
        self._markers = MarkerIndex()
        self._indexer = BranchIndexer()
        self._messages: list[AgentMessage] = []
        self._cum_chars = [0]  # characters of self._messages[:i]
        self._cum = [0]  # tokens (rounded up per message) of self._messages[:i]
        self._cum_overhead = [0]  # of those, mulligan's own
        self._order: dict[str, int] = {}
        self._order_seen = 0
        self._requests: list[RequestSavings] = []
        self._priced = True
        self._caching = False
        self._tools_on = self._config.tools == "always"
        self._mulligan_reply = False  # the last reply called only mulligan tools (and nothing came after it)
        self._high_water = False
        # pricing: each world's previous request
        self._with = _World()
        self._without = _World()
        self._previous_view: list[AgentMessage] | None = (
            None  # None: the previous view was the unfiltered one
        )
        self._previous_length = 0  # messages of the previous request (unfiltered)
        self._without_previous = 0  # tokens of the previous request without mulligan
        # running sums: net tokens and dollars without the base, requests with no counterpart, base rates
        self._sums = [0.0] * 6
        self._gross = self._lighter = 0

    def update(self, entries: Sequence[SessionEntry], branch: Sequence[SessionEntry]) -> SessionSavings:
        self.advance(entries, branch)
        return self.savings()

    def savings(self) -> SessionSavings:
        """The figures as of the last ``advance`` (``update``'s result)."""
        priced = self._priced and bool(self._requests)
        return SessionSavings(tuple(self._requests), priced, self._caching, self.base)

    def totals(self) -> tuple[int, float, bool]:
        """``(net tokens, net cost, priced)`` of ``savings()``, without building it."""
        tokens, extras, cached, uncached, rate, rate_uncached = self._sums
        base = self.base
        cost = cached + base * rate if self._caching else uncached + base * rate_uncached
        return round(tokens - extras * base), cost, self._priced and bool(self._requests)

    def summary(self) -> SavingsTotals:
        """``savings().totals()`` without building it (constant time: what a footer refreshed every turn reads)."""
        tokens, cost, priced = self.totals()
        return SavingsTotals(
            tokens, self._gross, cost, priced, self._caching, self._lighter, len(self._requests)
        )

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
            if isinstance(entry, CustomEntry) and entry.custom_type == TOOLS:
                self._tools_on = True
                continue
            if isinstance(entry, MessageEntry) and isinstance(entry.message, AssistantMessage):
                self._request(entries, branch, k, entry.id, entry.message)
            self._extend(entry_to_context_messages(entry))
        self._depth = len(branch)
        self._leaf_id = branch[-1].id if branch else None

    def _extend(self, produced: Sequence[AgentMessage]) -> None:
        messages, cum_chars, cum, cum_overhead = (
            self._messages,
            self._cum_chars,
            self._cum,
            self._cum_overhead,
        )
        for m in produced:
            messages.append(m)
            chars = utf16_message_chars(m)
            n = -(-chars // CHARS_PER_TOKEN)
            cum_chars.append(cum_chars[-1] + chars)
            cum.append(cum[-1] + n)
            kind = m.__class__
            if kind is UserMessage:
                cum_overhead.append(cum_overhead[-1])
                self._mulligan_reply = False
                continue
            cum_overhead.append(cum_overhead[-1] + _overhead(m, chars, n))
            if kind is AssistantMessage:
                self._mulligan_reply = _only_mulligan_calls(m)  # type: ignore[arg-type]
            elif kind is CustomMessage and not m.custom_type.startswith("mulligan:"):  # type: ignore[union-attr]
                self._mulligan_reply = False

    def _rebuild(self, path: Sequence[SessionEntry]) -> None:
        self._messages, self._cum_chars, self._cum, self._cum_overhead = [], [0], [0], [0]
        for e in _context_entries(path):
            self._extend(entry_to_context_messages(e))
        self._previous_view = []  # nothing after the system prompt and tools matches the new context's start
        self._previous_length = 0
        self._without_previous = 0

    def _request(
        self,
        entries: Sequence[SessionEntry],
        branch: Sequence[SessionEntry],
        k: int,
        entry_id: str,
        message: AssistantMessage,
    ) -> None:
        messages = self._messages
        n = len(messages)
        view = messages
        trace = FilterTrace()
        config = self._config
        bundle = MarkerBundle()
        if config.enabled:
            # The markers written before this request (file order): read on from the last request's.
            markers = self._markers.update(EntryPrefix(entries, self._order.get(entry_id, len(entries))))
            bundle = _NO_MARKERS if markers.is_empty() else markers.bundle()
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
        unfiltered = self._cum[n]
        sent, sent_chars = unfiltered, self._cum_chars[n]
        for i in trace.hidden:
            sent -= self._cum[i + 1] - self._cum[i]
            sent_chars -= self._cum_chars[i + 1] - self._cum_chars[i]
        for i, (_, replacement) in trace.shrunk.items():
            if i in trace.hidden:
                continue
            chars = utf16_message_chars(replacement)
            sent += _tokens(chars) - (self._cum[i + 1] - self._cum[i])
            sent_chars += chars - (self._cum_chars[i + 1] - self._cum_chars[i])
        rates = _rates_of(self._model, message)
        if rates is None:
            self._priced = False
        nudges = (
            self._nudges(bundle, sent_chars, rates)
            if config.enabled and (bundle.recent_metrics or (rates is not None and rates.window > 0))
            else []
        )
        nudge_tokens = sum(_tokens(utf16_len(text)) for text in nudges)
        usage = message.usage
        self._caching = self._caching or bool(usage.cache_read or usage.cache_write)
        schema = self._schema if self._tools_on and config.enabled else 0
        extra = self._mulligan_reply
        overhead = self._cum_overhead[n]

        sent_cost = without_cost = sent_flat = without_flat = None
        output_cost = base_rate = base_rate_flat = 0.0
        if rates is not None:
            fresh_rate = rates.cache_write if usage.cache_write and rates.cache_write else rates.input
            read_rate = rates.cache_read or rates.input

            def price(total: int, cached: int) -> float:
                return (cached * read_rate + (total - cached) * fresh_rate) / 1_000_000

            # with mulligan: the base (priced through ``base_rate``), mulligan's tools, then the messages shared
            # with the previous view
            total = schema + sent + nudge_tokens
            reuse = self._with.cached(schema)
            cached = schema + self._shared_tokens(view, n, sent) if reuse else 0
            sent_cost, sent_flat = price(total, cached), total * rates.input / 1_000_000
            base_with = read_rate if reuse else fresh_rate
            base_without = base_without_flat = 0.0
            if extra:
                without_cost = without_flat = 0.0
            else:
                total = unfiltered - overhead
                reuse = self._without.cached(0)
                cached = self._without_previous if reuse else 0
                without_cost, without_flat = price(total, cached), total * rates.input / 1_000_000
                base_without, base_without_flat = (read_rate if reuse else fresh_rate), rates.input
            base_rate = (base_without - base_with) / 1_000_000
            base_rate_flat = (base_without_flat - rates.input) / 1_000_000
            output_cost = _output_tokens(message) * rates.output / 1_000_000
        self._previous_view = None if view is messages else view
        self._previous_length = n
        if not extra:
            self._without_previous = unfiltered - overhead
        request = RequestSavings(
            entry_id=entry_id,
            provider=message.provider,
            model=message.model,
            sent_tokens=sent,
            unfiltered_tokens=unfiltered,
            overhead_tokens=overhead,
            nudge_tokens=nudge_tokens,
            schema_tokens=schema,
            extra=extra,
            sent_cost=sent_cost,
            without_cost=without_cost,
            sent_cost_uncached=sent_flat,
            without_cost_uncached=without_flat,
            base_rate=base_rate,
            base_rate_uncached=base_rate_flat,
            output_cost=output_cost,
            lighter=view is not messages and (sent != unfiltered or bool(trace.hidden)),
        )
        self._requests.append(request)
        self._gross += request.gross_tokens
        self._lighter += request.lighter
        sums = self._sums
        sums[0] += request.net_tokens()
        sums[1] += request.extra
        sums[2] += request.net_cost(True) or 0.0
        sums[3] += request.net_cost(False) or 0.0
        sums[4] += request.base_rate
        sums[5] += request.base_rate_uncached

    def _shared_tokens(self, view: list[AgentMessage], n: int, sent: int) -> int:
        """Tokens of the messages ``view`` (``sent`` tokens) shares, from the start, with the previous
        request's view."""
        previous = self._previous_view
        if previous is None and view is self._messages:
            return self._cum[min(self._previous_length, n)]  # both unfiltered: the previous one is a prefix
        before = previous if previous is not None else self._messages[: self._previous_length]
        shared = 0
        for a, b in zip(view, before, strict=False):
            if a is not b and a != b:
                break
            shared += 1
        if view is self._messages:
            return self._cum[shared]
        return sent - sum(_tokens(utf16_message_chars(m)) for m in view[shared:])

    def _nudges(self, bundle: MarkerBundle, sent_chars: int, rates: _Rates | None) -> list[str]:
        """The lines the ``context`` handler appended to this request: the drift nudge (from the persisted
        turn metrics, as the handler decides it) and the one-time high-water line."""
        config = self._config
        out: list[str] = []
        metric = bundle.metric
        if (
            config.nudges.per_turn_drift
            and metric is not None
            and should_nudge(bundle.recent_metrics, config)
            and not suppress_check(metric, bundle.recent_metrics, bundle)
        ):
            out.append(render_drift_nudge(drift_nudge_input(metric, bundle.recent_metrics, config)))
        window = rates.window if rates is not None else 0
        if window > 0:
            total = _tokens(sent_chars + sum(utf16_len(t) for t in out))
            if total / window >= config.nudges.high_water_fraction:
                if not self._high_water:
                    self._high_water = True
                    out.append(render_high_water_nudge(total, window))
            else:
                self._high_water = False
        return out


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


def _rates_of(model: Model | ModelLookup | None, message: AssistantMessage) -> _Rates | None:
    found: Model | None
    if model is None:
        return None
    if isinstance(model, Model):
        found = model
    else:
        try:
            found = model(message.provider, message.model)
        except Exception:  # a lookup that fails prices nothing; the tokens still count
            found = None
    if found is None:
        return None
    c = found.cost
    if not (c.input or c.cache_read):
        return None
    return _Rates(c.input, c.output, c.cache_read, c.cache_write, found.context_window or 0)


def _is_mulligan_call(block: object) -> bool:
    return isinstance(block, ToolCall) and block.name.startswith("mulligan_")


def _only_mulligan_calls(message: AssistantMessage) -> bool:
    called = False
    for block in message.content:
        if block.__class__ is ToolCall:
            if not block.name.startswith("mulligan_"):
                return False
            called = True
    return called


def _output_tokens(message: AssistantMessage) -> int:
    """Output tokens the reply spent on mulligan's calls: all of them when it called nothing else."""
    if _only_mulligan_calls(message) and message.usage.output > 0:
        return message.usage.output
    calls = [b for b in message.content if _is_mulligan_call(b)]
    return _tokens(utf16_message_chars(_Holder(calls))) if calls else 0


class _Holder:
    """A message-shaped holder of blocks (to count some blocks of a message)."""

    __slots__ = ("content",)

    def __init__(self, content: list[Any]) -> None:
        self.content = content


def _overhead(message: AgentMessage, chars: int, tokens: int) -> int:
    """Of a message's tokens, what is mulligan's own: all of a note, of a reply that only calls mulligan tools,
    of a mulligan tool's result, and of the calls in a mixed reply; the bloat reminder appended to a result."""
    if isinstance(message, CustomMessage):
        return tokens if message.custom_type.startswith("mulligan:") else 0
    if isinstance(message, ToolResultMessage):
        if message.tool_name.startswith("mulligan_"):
            return tokens
        content = message.content
        last = content[-1] if content else None
        if isinstance(last, TextContent) and BLOAT_REMINDER_MARK in last.text:
            return tokens - _tokens(chars - utf16_len(last.text))
        return 0
    if isinstance(message, AssistantMessage):
        calls = [b for b in message.content if _is_mulligan_call(b)]
        if not calls:
            return 0
        if _only_mulligan_calls(message):
            return tokens
        return tokens - _tokens(chars - utf16_message_chars(_Holder(calls)))
    return 0
