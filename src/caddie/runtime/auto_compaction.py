"""The compaction engine: automatic and manual compaction, overflow recovery and branch summaries, live.

A ``CompactionEngine`` is built by the session it serves (``SessionOptions.compactor``, set by
``caddie.runtime.factory.open_session``) and sees it only through ``CompactionHost``
(``caddie.runtime.compaction_port``). The decisions are Pi 0.84.4's (``caddie.session.compaction`` holds the pure part):

- **threshold** — context tokens > window − ``compaction.reserveTokens``: checked before a prompt is sent,
  after each low-level run and between the turns of a run (after the tools ran, before the next request;
  the loop then continues from the summary and the kept messages);
- **overflow** — the provider rejected the request as too long: the failed reply leaves the transcript (it
  stays in the file), the session is compacted and the turn retried, once per user message (a successful
  reply re-arms it); a second overflow ends with an error. A reply that silently overflowed is compacted
  without a retry;
- **manual** — ``/compact [instructions]``, ``ctx.compact()``, RPC ``compact``: aborts a running turn
  first; raises ``CompactionError`` when there is nothing to compact, ``SummaryFailed`` when the summary
  fails, returns None when an extension (or an abort) cancelled it.

Extensions see ``session_before_compact`` (cancel, or supply the compaction) and ``session_compact``.
Subscribers see ``CompactionStartEvent`` / ``CompactionEndEvent``. After a compaction the agent transcript
is rebuilt from the session file.

No resurrection (mulligan's E7 leak, closed)
    The summariser must read the context *as the model sees it*, after every extension's ``context``
    handler — otherwise content an extension hid (a mulligan rewind) or shrank comes back through the
    summary. ``visible_context`` asks the extensions, through the public ``entry_visibility`` event (the
    same question ``caddie export`` and ``/context`` ask), which entries of the branch their ``context``
    handler hides from the model or sends in another form. The event carries each message's entry id
    explicitly, so the answers map straight back to entries: a hidden entry shows nothing, a replaced one
    shows its replacement, every other entry shows its messages as they are. Answering is side-effect free
    (no handler state changes, nothing is written), so compaction never disturbs an extension's view.
    An extension whose ``context`` handler hides or rewrites history answers ``entry_visibility`` too
    (docs/extensions.md); per-request additions (nudges) are not history and are not summarised.

    ``prepare_compaction`` then takes that view: the cut still follows the raw entries (a tool call and its
    result stay together) but weighs entries by their visible size, and the summariser, the file lists and
    the previous summary come from the view only. Without ``entry_visibility`` handlers the result is
    exactly Pi's.

Where caddie deliberately differs from Pi 0.84.4
    * A new prompt re-arms overflow recovery *before* the pre-prompt check, so a context that overflowed on
      the previous prompt is compacted before the new one is sent (Pi re-arms only once the prompt starts
      and reports "recovery failed" again instead).
    * When nothing new is visible before the cut, the previous summary is kept as the history part (Pi
      writes "No prior history." for a split turn and loses it). No model call is made for an empty history.
    * Whether a cut splits a turn is decided by the first *message* kept, not by a label or model-change
      entry that was pulled to the kept side with it.
    * With ``context`` handlers, a branch summary reads the left branch as the model saw it; entries that
      were compacted away are represented by their compaction summary instead of being read again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

from caddie.agent.loop import CompletedTurn
from caddie.ai import errors as ai_errors
from caddie.ai.abort import AbortController, AbortSignal
from caddie.ai.messages import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    Usage,
    UserMessage,
    text_of,
)
from caddie.ai.model import Context, Model, StreamOptions, ThinkingLevel
from caddie.ai.stream import error_message_for
from caddie.ai.stream_events import final_message
from caddie.ai.tokens import context_tokens_of_usage, estimate_context_tokens
from caddie.errors import Aborted, ProviderError, UsageError
from caddie.extensions.api import (
    EntryVisibility,
    EntryVisibilityEvent,
    SessionBeforeCompactEvent,
    SessionCompactEvent,
    SessionCompactFailedEvent,
    SummaryUsageEvent,
)
from caddie.runtime.compaction_port import Compacted, CompactionHost, CompactionReason
from caddie.runtime.session_events import CompactionEndEvent, CompactionStartEvent
from caddie.session.branch_summary import (
    BRANCH_SUMMARY_MAX_TOKENS,
    BRANCH_SUMMARY_PREAMBLE,
    NO_CONTENT,
    branch_summary_prompt,
    collect_entries_for_branch_summary,
    navigation_leaf,
    prepare_branch_entries,
)
from caddie.session.compaction import (
    NO_PRIOR_HISTORY,
    SUMMARIZATION_SYSTEM_PROMPT,
    CompactionPreparation,
    CompactionResult,
    CompactionSettings,
    ContextView,
    combine_usage,
    compute_file_lists,
    estimate_messages_tokens,
    file_details,
    format_file_operations,
    merge_split_turn,
    prepare_compaction,
    should_compact,
    summarization_failure,
    summary_max_tokens,
    summary_prompt,
    turn_prefix_prompt,
)
from caddie.session.context import context_entries_of_path
from caddie.session.entries import (
    BranchSummaryEntry,
    CompactionEntry,
    SessionEntry,
    entry_to_context_messages,
    iso_to_ms,
    new_session_id,
)

Reason = CompactionReason

OVERFLOW_RECOVERY_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
COMPACTING_NOW = (
    "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
)


class CompactionError(UsageError):
    """A compaction that cannot be made now (one is running, no model, nothing new to summarise); the
    message says why (shown to the user)."""


class SummaryFailed(ProviderError):
    """The model did not write a usable summary (an error, a reply cut off at the token cap, a tool call);
    the message says which."""


# ==================================================================================================
# The context as the model sees it


async def visible_context(session: CompactionHost, path: Sequence[SessionEntry]) -> ContextView | None:
    """Entry id → the messages the model is sent for it, as the extensions answer ``entry_visibility``;
    None when no extension answers (every entry is then sent as it is)."""
    if not session.runner.has_handlers("entry_visibility"):
        return None
    messages: list[AgentMessage] = []
    entry_ids: list[str] = []
    for entry in context_entries_of_path(path):
        for message in entry_to_context_messages(entry):
            messages.append(message)
            entry_ids.append(entry.id)
    event = EntryVisibilityEvent(list(path), list(messages), entry_ids)
    await session.runner.emit("entry_visibility", event)
    view: dict[str, list[AgentMessage]] = {}
    for message, entry_id in zip(messages, entry_ids, strict=True):
        answer = event.answers.get(entry_id)
        shown = view.setdefault(entry_id, [])
        if not isinstance(answer, EntryVisibility):
            shown.append(message)
        elif answer.state == "replaced":  # one replacement stands for the entry's messages
            if answer.replacement is None:
                shown.append(message)
            elif not shown:
                shown.append(answer.replacement)
    return view


# ==================================================================================================
# The engine


def compaction_settings(session: CompactionHost) -> CompactionSettings:
    s = session.settings
    return CompactionSettings(
        s.compaction_enabled, s.compaction_reserve_tokens, s.compaction_keep_recent_tokens
    )


def _latest_compaction(path: Sequence[SessionEntry]) -> CompactionEntry | None:
    for entry in reversed(path):
        if isinstance(entry, CompactionEntry):
            return entry
    return None


def _last_assistant(messages: Sequence[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


def _last_usable_index(messages: Sequence[AgentMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if (
            isinstance(m, AssistantMessage)
            and m.stop_reason not in ("error", "aborted")
            and context_tokens_of_usage(m.usage) > 0
        ):
            return i
    return None


async def _final(stream: AsyncIterator[Any], model: Model) -> AssistantMessage:
    last: AssistantMessage | None = None
    try:
        async for event in stream:
            message = final_message(event)
            if message is not None:
                last = message
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    return last or error_message_for(model, "The provider stream ended without a result")


class CompactionEngine:
    """Implements the session's ``Compactor`` hooks (see the module docstring)."""

    def __init__(self, host: CompactionHost) -> None:
        self.host = host
        self._controller: AbortController | None = None
        self._manual = False
        self.overflow_recovery_attempted = False
        self._from_extension = False
        """The compaction under way uses a summary a ``session_before_compact`` handler supplied."""
        """A compact-and-retry after an overflow was tried for the current user message."""

    def reset(self) -> None:
        self.overflow_recovery_attempted = False

    @property
    def is_compacting(self) -> bool:
        """A compaction or branch summary is being made right now."""
        return self._controller is not None

    def abort(self) -> None:
        """Cancel the compaction or branch summary in progress (the session file is left unchanged)."""
        if self._controller is not None:
            self._controller.abort()

    # -- hooks ----------------------------------------------------------------------------------------
    async def before_prompt(self) -> None:
        session = self.host
        if self._manual:
            raise UsageError(COMPACTING_NOW)
        # A new user message re-arms overflow recovery; a reply that overflowed is compacted before it is sent.
        self.overflow_recovery_attempted = False
        last = _last_assistant(session.messages)
        if last is not None:
            await self._check(session, last, include_aborted=True)
        self.overflow_recovery_attempted = False  # the prompt about to be sent gets its own attempt

    async def after_run(self, last: AssistantMessage) -> Literal["retry", "none"]:
        return "retry" if await self._check(self.host, last, include_aborted=False) else "none"

    async def between_turns(self, turn: CompletedTurn) -> None:
        session = self.host
        if turn.message.stop_reason not in ("error", "length"):
            self.overflow_recovery_attempted = False
        model = session.model
        settings = compaction_settings(session)
        if model is None or not settings.enabled or self.is_compacting:
            return
        tokens = estimate_context_tokens(turn.context.messages)
        if not should_compact(tokens, model.context_window, settings):
            return
        entry = await self._auto(session, "threshold", will_retry=False)
        if entry is not None:
            # The loop goes on with its own list: continue from the summary and the kept messages.
            turn.context.messages[:] = list(session.messages)

    async def compact(self, custom_instructions: str | None = None) -> Compacted | None:
        """Compact now (``/compact``, ``ctx.compact()``, RPC ``compact``): abort a running turn first; raises
        ``CompactionError`` when it cannot be done now, ``SummaryFailed`` when the model wrote no usable
        summary, returns None when cancelled."""
        session = self.host
        if self.is_compacting:
            raise CompactionError("A compaction is already running; wait for it to finish.")
        session.abort()
        await session.wait_until_stopped()  # the aborted run winds down (its reply ends "aborted")
        controller = AbortController()
        self._controller, self._manual = controller, True
        await session.publish_event(CompactionStartEvent("manual"))
        try:
            if session.model is None:
                raise CompactionError("No model is configured, so there is no one to write the summary.")
            outcome = await self._compact_path(
                session, session.store.branch(), "manual", custom_instructions, False, controller.signal
            )
        except Aborted:
            outcome = None
        except Exception as e:
            self._controller, self._manual = None, False
            await self._end(
                session, CompactionEndEvent("manual", None, False, False, f"Compaction failed: {e}")
            )
            raise
        self._controller, self._manual = None, False
        if outcome is None:
            await self._end(session, CompactionEndEvent("manual", None, True, False))
            return None
        entry, result = outcome
        await self._end(session, CompactionEndEvent("manual", result, False, False))
        return Compacted(entry, result)

    async def summarize_branch(
        self,
        old_leaf: str | None,
        target_id: str,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
    ) -> BranchSummaryEntry | None:
        """Summarise the branch being left and attach the summary where the navigation lands.

        Called before the leaf moves. Returns None when there is nothing to summarise; raises
        ``Aborted`` when aborted and ``SummaryFailed`` when the summary fails (the navigation
        should then not happen)."""
        session = self.host
        store = session.store
        target = store.get_entry(target_id)
        if target is None:
            raise UsageError(f"No entry {target_id} in this session.")
        if old_leaf == target_id:
            return None
        model = session.model
        if model is None:
            raise UsageError("No model is configured, so the branch cannot be summarized.")
        collected = collect_entries_for_branch_summary(store, old_leaf, target_id)
        if not collected.entries:
            return None
        controller = AbortController()
        self._controller = controller
        try:
            view = await visible_context(session, store.branch(old_leaf))
            window = model.context_window or 128_000
            prep = prepare_branch_entries(
                collected.entries, window - session.settings.branch_summary_reserve_tokens, view
            )
            usage: Usage | None = None
            details: Any = None
            if not prep.messages:
                summary = NO_CONTENT
            else:
                text, usage = await self._summarize(
                    session,
                    model,
                    branch_summary_prompt(prep.messages, custom_instructions, replace_instructions),
                    BRANCH_SUMMARY_MAX_TOKENS,
                    controller.signal,
                    "Branch summarization",
                    "branch_summary",
                    reasoning=False,
                )
                read, modified = compute_file_lists(prep.file_ops)
                summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read, modified)
                details = file_details(read, modified)
        finally:
            self._controller = None
        entry_id = store.branch_with_summary(
            navigation_leaf(target), summary or "No summary generated", details, False, usage
        )
        entry = store.get_entry(entry_id)
        assert isinstance(entry, BranchSummaryEntry)
        return entry

    # -- automatic compaction -------------------------------------------------------------------------
    async def _check(self, session: CompactionHost, last: AssistantMessage, *, include_aborted: bool) -> bool:
        """Pi's ``_checkCompaction``: compact if needed. True when the interrupted turn should be retried."""
        settings = compaction_settings(session)
        model = session.model
        if not settings.enabled or model is None or self.is_compacting:
            return False
        if last.stop_reason == "aborted" and not include_aborted:
            return False
        latest = _latest_compaction(session.store.branch())
        if latest is not None and last.timestamp <= iso_to_ms(latest.timestamp):
            return False  # its usage describes the context before that compaction
        same_model = last.provider == model.provider and last.model == model.id
        if same_model and ai_errors.is_context_overflow(last, model.context_window):
            if last.stop_reason == "stop":  # it went through (silently truncated): compact, keep the reply
                await self._auto(session, "overflow", will_retry=False)
                return False
            if self.overflow_recovery_attempted:
                await self._end(
                    session, CompactionEndEvent("overflow", None, False, False, OVERFLOW_RECOVERY_FAILED)
                )
                return False
            self.overflow_recovery_attempted = True
            self._drop_failed_reply(session)
            if await self._auto(session, "overflow", will_retry=True) is None:
                return False
            self._drop_failed_reply(session)  # the rebuilt transcript may end with it again
            return True
        if last.stop_reason not in ("error", "length"):
            self.overflow_recovery_attempted = False

        tokens = context_tokens_of_usage(last.usage)
        if last.stop_reason == "error" or tokens == 0:
            messages = session.messages
            index = _last_usable_index(messages)
            if (
                index is not None
                and latest is not None
                and messages[index].timestamp <= iso_to_ms(latest.timestamp)
            ):
                return False
            tokens = estimate_context_tokens(messages)
        if should_compact(tokens, model.context_window, settings):
            await self._auto(session, "threshold", will_retry=False)
        return False

    @staticmethod
    def _drop_failed_reply(session: CompactionHost) -> None:
        messages = session.messages
        if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason != "stop":
            messages.pop()

    async def _auto(
        self, session: CompactionHost, reason: Reason, *, will_retry: bool
    ) -> CompactionEntry | None:
        """Threshold or overflow compaction: publishes its start and end; never raises. Not in a run an
        extension stopped (``stop_after_turn``, e.g. a goal budget): that run makes no further model call,
        and the next prompt compacts first if it still needs to."""
        if session.model is None or self.is_compacting or session.stop_requested:
            return None
        path = session.store.branch()
        if prepare_compaction(path, compaction_settings(session)) is None:
            return None
        controller = AbortController()
        self._controller = controller
        await session.publish_event(CompactionStartEvent(reason))
        try:
            outcome = await self._compact_path(session, path, reason, None, will_retry, controller.signal)
        except Aborted:
            outcome = None
        except Exception as e:
            self._controller = None
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            await self._end(session, CompactionEndEvent(reason, None, False, False, f"{prefix}: {e}"))
            return None
        self._controller = None
        if outcome is None:
            await self._end(session, CompactionEndEvent(reason, None, True, False))
            return None
        entry, result = outcome
        await self._end(session, CompactionEndEvent(reason, result, False, will_retry))
        return entry

    async def _end(self, session: CompactionHost, event: CompactionEndEvent) -> None:
        """Publish a compaction's end; a failed or cancelled one is also ``session_compact_failed`` (Pi)."""
        await session.publish_event(event)
        if event.result is None:
            failed = SessionCompactFailedEvent(
                event.reason, event.aborted, event.will_retry, self._from_extension, event.error_message
            )
            await session.runner.emit("session_compact_failed", failed)
        self._from_extension = False

    # -- one compaction -------------------------------------------------------------------------------
    async def _compact_path(
        self,
        session: CompactionHost,
        path: list[SessionEntry],
        reason: Reason,
        custom_instructions: str | None,
        will_retry: bool,
        signal: AbortSignal,
    ) -> tuple[CompactionEntry, CompactionResult] | None:
        """Prepare (over the visible context), let extensions decide, summarise, append, rebuild.
        None when cancelled."""
        if path and isinstance(path[-1], CompactionEntry):
            raise CompactionError("Already compacted: nothing new since the last compaction.")
        settings = compaction_settings(session)
        view = await visible_context(session, path)
        preparation = prepare_compaction(path, settings, view)
        if preparation is None:
            raise CompactionError("Nothing to compact yet: the session is too small.")
        decision = await session.runner.emit(
            "session_before_compact",
            SessionBeforeCompactEvent(
                preparation, list(path), custom_instructions, reason, will_retry, signal
            ),
        )
        if decision is not None and getattr(decision, "cancel", False):
            return None
        spec = getattr(decision, "compaction", None) if decision is not None else None
        self._from_extension = spec is not None
        if spec is not None:
            result = CompactionResult(
                spec.summary, spec.first_kept_entry_id, spec.tokens_before, None, spec.usage, spec.details
            )
        else:
            result = await self._generate(session, preparation, custom_instructions, signal)
        if signal.aborted:
            return None
        store = session.store
        entry_id = store.append_compaction(
            result.summary,
            result.first_kept_entry_id,
            result.tokens_before,
            result.details,
            spec is not None,
            result.usage,
        )
        entry = store.get_entry(entry_id)
        assert isinstance(entry, CompactionEntry)
        messages = store.build_context().messages
        session.replace_messages(messages)
        result.estimated_tokens_after = estimate_messages_tokens(messages)
        await session.runner.emit(
            "session_compact", SessionCompactEvent(entry, spec is not None, reason, will_retry)
        )
        return entry, result

    async def _generate(
        self,
        session: CompactionHost,
        prep: CompactionPreparation,
        custom_instructions: str | None,
        signal: AbortSignal,
    ) -> CompactionResult:
        """The summary (history, plus the turn prefix when the cut splits a turn) and the file lists."""
        model = session.model
        assert model is not None
        reserve = prep.settings.reserve_tokens
        usage: Usage | None = None
        if prep.messages_to_summarize:
            summary, usage = await self._summarize(
                session,
                model,
                summary_prompt(prep.messages_to_summarize, prep.previous_summary, custom_instructions),
                summary_max_tokens(reserve, model.max_tokens),
                signal,
                "Summarization",
                "compaction",
            )
        else:  # nothing new is visible before the cut: the previous summary still says it all
            summary = prep.previous_summary or NO_PRIOR_HISTORY
        if prep.is_split_turn and prep.turn_prefix_messages:
            if session.stop_requested:  # an extension ended the run (a goal budget): no further model call
                raise Aborted("Compaction cancelled: the run was told to stop")
            prefix, prefix_usage = await self._summarize(
                session,
                model,
                turn_prefix_prompt(prep.turn_prefix_messages),
                summary_max_tokens(reserve, model.max_tokens, 0.5),
                signal,
                "Turn prefix summarization",
                "turn_prefix",
            )
            summary = merge_split_turn(summary, prefix)
            usage = prefix_usage if usage is None else combine_usage(usage, prefix_usage)
        read, modified = compute_file_lists(prep.file_ops)
        return CompactionResult(
            summary + format_file_operations(read, modified),
            prep.first_kept_entry_id,
            prep.tokens_before,
            None,
            usage,
            file_details(read, modified),
        )

    async def _summarize(
        self,
        session: CompactionHost,
        model: Model,
        prompt: str,
        max_tokens: int,
        signal: AbortSignal,
        label: str,
        kind: Literal["compaction", "turn_prefix", "branch_summary"],
        *,
        reasoning: bool = True,
    ) -> tuple[str, Usage]:
        """One summariser call with the session's model, retried like a turn on transient failures. Each
        call's cost goes to the extensions (``summary_usage``) as soon as it is known, whatever the outcome."""
        level: ThinkingLevel = session.thinking_level
        context = Context(SUMMARIZATION_SYSTEM_PROMPT, [UserMessage([TextContent(prompt)])])
        settings = session.settings
        attempt = 0
        while True:
            options = StreamOptions(
                signal=signal,
                api_key=session.api_key_for(model),
                max_tokens=max_tokens,
                reasoning=level if reasoning and model.reasoning and level != "off" else None,
                session_id=new_session_id(),  # a fresh routing id; nothing worth caching
                cache_retention="none",
                timeout_s=settings.http_idle_timeout_ms / 1000,
            )
            reply = await _final(session.stream_fn(model, context, options), model)
            await session.runner.emit(
                "summary_usage",
                SummaryUsageEvent(kind, reply.usage, model.provider, model.id, reply.stop_reason),
            )
            if reply.stop_reason == "aborted" or signal.aborted:
                raise Aborted(f"{label} cancelled")
            if (
                reply.stop_reason == "error"
                and settings.retry_enabled
                and attempt < settings.retry_max_retries
                and ai_errors.is_retryable(reply, model.context_window)
                and not session.stop_requested
            ):
                attempt += 1
                delay = ai_errors.retry_delay_ms(
                    attempt, settings.retry_base_delay_ms, settings.retry_max_delay_ms, reply.retry_after_ms
                )
                try:
                    await asyncio.wait_for(signal.wait(), delay / 1000)
                    raise Aborted(f"{label} cancelled")
                except TimeoutError:
                    continue
            failure = summarization_failure(reply, label)
            if failure is not None:
                raise SummaryFailed(failure)
            return text_of(reply.content), reply.usage
