"""The extension's live state and its event handlers: thin glue between the host's events and the pure
logic in ``accounting``, ``branch``, ``parsing`` and ``render``.

The session file holds the truth (``goal:state`` / ``loop:state`` entries); this object holds the current
goal and loop as read from the branch, plus control state that only matters inside one process: what the
current run did, whether a continuation is queued, the loop timers.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from typing import Any

from caddie.extensions.api import (
    AgentEndEvent,
    AgentMessage,
    AgentSettledEvent,
    AgentStartEvent,
    AssistantMessage,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CustomMessage,
    ExtensionAPI,
    ExtensionContext,
    InputEvent,
    InputResult,
    MessageEndEvent,
    SessionCompactEvent,
    SessionShutdownEvent,
    SessionStartEvent,
    SessionTreeEvent,
    SummaryUsageEvent,
    ToolDefinition,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from caddie.extensions.bundled.goal.accounting import (
    TurnFacts,
    add_tokens,
    counted_tokens,
    end_goal_turn,
    exit_code,
    resume_goal,
    set_budget,
    status_after_failure,
)
from caddie.extensions.bundled.goal.branch import restore, turn_was_cut_off
from caddie.extensions.bundled.goal.model import (
    CONTINUE_MESSAGE,
    GOAL_ENTRY,
    LOOP_ENTRY,
    Goal,
    GoalStatus,
    LoopState,
    cleared_json,
)
from caddie.extensions.bundled.goal.parsing import (
    UsageError,
    check_objective,
    parse_token_count,
    prompt_requests_goal,
)
from caddie.extensions.bundled.goal.render import (
    STANDING_ORDERS,
    ContinuationKind,
    approx,
    continuation_text,
    goal_status_text,
    loop_status_text,
    standing_orders_block,
)
from caddie.extensions.bundled.goal.timing import GoalOptions

log = logging.getLogger("caddie.extensions.bundled.goal")

GOAL_TOOLS = ("create_goal", "get_goal", "update_goal")
CHANGE_TOOLS = ("edit", "write")
STATUS_KEY = "goal"
LOOP_STATUS_KEY = "loop"
HEADLESS_MODES = ("print", "json")

RUNAWAY_NOTICE = (
    "Goal paused: the same answer came back 3 times in a row without a tool call. Change the objective or "
    "the approach, then /goal resume."
)


@dataclass
class RunFacts:
    """What the current low-level run (one goal turn) did."""

    had_tool_call: bool = False
    had_change: bool = False
    blocked_reported: bool = False


def failure_notice(status: GoalStatus, message: AssistantMessage) -> str:
    reason = message.error_message or "no details"
    if message.stop_reason == "aborted":
        return "Goal paused because the run was stopped. /goal resume continues it."
    if status == "usage_limited":
        return f"Goal stopped by usage limits ({reason}). /goal resume once the limit has reset."
    return f"Goal paused: the run ended with an error ({reason}). /goal resume continues it."


def _flag_text(value: str | bool | None) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _last_assistant(messages: list[AgentMessage]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


class GoalRuntime:
    def __init__(self, api: ExtensionAPI, options: GoalOptions) -> None:
        self.api = api
        self.options = options
        self.goal: Goal | None = None
        self.saved: Goal | None = None
        """The goal as of the last ``goal:state`` entry (``goal`` may be ahead of it in memory)."""
        self.loop: LoopState | None = None
        self.orders_tool: ToolDefinition | None = None
        """The goal tool whose prompt guidelines carry the standing orders while a goal exists."""
        self.last_output: str | None = None
        self.notes_pending = False
        """The next continuation repeats the notes (set by a compaction, a reopen or a tree move)."""
        self.prompt_requested = False
        self.continuation_queued = False
        self.dirty = False
        """The goal changed in memory (spend, time, counters) since the last ``goal:state`` entry."""
        self.pending_reason: str | None = None
        self.run = RunFacts()
        self.last_assistant: AssistantMessage | None = None
        self.turn_started: float | None = None
        self.pursued = False
        """A goal was active in this process (headless exit codes only report those)."""
        self.flags_applied = False
        self.prompt_arrived = False
        self.loop_generation = 0
        self.timers: set[asyncio.Task[Any]] = set()
        self.tasks: set[asyncio.Task[Any]] = set()

    # ==============================================================================================
    # State

    def new_goal(self, objective: str, budget: int | None, check: str | None) -> Goal:
        self.last_output = None
        self.notes_pending = False
        return Goal(
            id=secrets.token_hex(4),
            objective=objective,
            token_budget=budget,
            check=check,
            created_at=self.options.timing.now_ms(),
        )

    def commit(self, ctx: ExtensionContext, goal: Goal | None, reason: str) -> None:
        """Make ``goal`` current (None clears it), persist it, and update everything that shows it."""
        previous = self.saved
        if goal is None:
            current = self.goal or previous
            if current is None:
                return
            self.api.append_entry(GOAL_ENTRY, cleared_json(current))
        else:
            self.api.append_entry(GOAL_ENTRY, goal.to_json())
        self.goal = self.saved = goal
        self.dirty = False
        self.pending_reason = None
        if goal is not None and goal.status == "active":
            self.pursued = True
        self.api.publish(
            "goal_state",
            {
                "reason": reason,
                "previousStatus": previous.status if previous is not None else None,
                "goal": goal.to_json() if goal is not None else None,
            },
        )
        self.sync_tools()
        self.show(ctx)

    def flush(self, ctx: ExtensionContext, reason: str = "progress") -> None:
        if self.goal is not None and (self.dirty or self.pending_reason):
            self.commit(ctx, self.goal, self.pending_reason or reason)

    def show(self, ctx: ExtensionContext) -> None:
        ctx.ui.set_status(STATUS_KEY, goal_status_text(self.goal) if self.goal is not None else None)
        ctx.ui.set_status(LOOP_STATUS_KEY, loop_status_text(self.loop) if self.loop is not None else None)

    def sync_tools(self) -> None:
        """Goal tools active only while a goal exists or the current prompt asks for one; standing orders
        (the tools' prompt guidelines) only while a goal exists. Otherwise the extension adds nothing."""
        want = self.goal is not None or self.prompt_requested
        orders = list(STANDING_ORDERS) if self.goal is not None else []
        changed = False
        if self.orders_tool is not None and self.orders_tool.prompt_guidelines != orders:
            self.orders_tool.prompt_guidelines = orders
            changed = True
        active = self.api.get_active_tools()
        if want:
            names = [*active, *(n for n in GOAL_TOOLS if n not in active)]
        else:
            names = [n for n in active if n not in GOAL_TOOLS]
        if changed or names != active:
            self.api.set_active_tools(names)

    def queue_continuation(self, ctx: ExtensionContext, kind: ContinuationKind) -> None:
        """Queue exactly one continuation (a follow-up that triggers a turn; starts a run when idle)."""
        goal = self.goal
        if goal is None or self.continuation_queued:
            return
        include_notes = self.notes_pending and bool(goal.notes)
        text = continuation_text(goal, kind, include_notes=include_notes)
        if include_notes:
            self.notes_pending = False
        self.continuation_queued = True
        self.api.send_message(
            CONTINUE_MESSAGE,
            text,
            display=True,
            details={"goalId": goal.id, "kind": kind},
            deliver_as="follow_up",
            trigger_turn=True,
        )

    def start_pursuit(self, ctx: ExtensionContext, kind: ContinuationKind) -> None:
        """After a command made the goal active: continue now when idle; a running turn continues by itself."""
        if self.goal is not None and self.goal.status == "active" and ctx.is_idle():
            self.queue_continuation(ctx, kind)

    def spawn(self, coro: Coroutine[Any, Any, None], *, timer: bool = True) -> asyncio.Task[None]:
        """Run ``coro`` in the background; loop timers (``timer``) die with the loop, everything with the session."""
        task = asyncio.ensure_future(coro)
        (self.timers if timer else self.tasks).add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.timers.discard(task)
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("goal background task failed: %s", task.exception())

    def cancel_timers(self) -> None:
        self.loop_generation += 1
        for task in list(self.timers):
            task.cancel()
        self.timers.clear()

    def cancel_all(self) -> None:
        self.cancel_timers()
        for task in list(self.tasks):
            task.cancel()
        self.tasks.clear()

    # ==============================================================================================
    # Session events

    def on_session_start(self, event: SessionStartEvent, ctx: ExtensionContext) -> None:
        self.cancel_all()
        branch = ctx.session.branch()
        state = restore(branch)
        self.goal, self.loop, self.last_output = state.goal, state.loop, state.last_output
        self.saved = self.goal
        self.run = RunFacts()
        self.continuation_queued = False
        self.prompt_requested = False
        self.pending_reason = None
        self.dirty = False
        self.notes_pending = event.reason != "reload" and self.goal is not None and bool(self.goal.notes)
        self.sync_tools()
        self.show(ctx)
        if state.unsaved_tokens and self.goal is not None:
            self.commit(ctx, self.goal, "recovered")  # spend of a turn the last process never saved
        started = False
        if not self.flags_applied and event.reason in ("startup", "resume"):  # not again on /reload
            self.flags_applied = True
            started = self.apply_flags(ctx)
        goal = self.goal
        if (
            not started
            and event.reason in ("startup", "resume")
            and ctx.has_ui
            and goal is not None
            and goal.status == "active"
            and turn_was_cut_off(branch)
        ):
            self.pursued = True
            self.queue_continuation(ctx, "resume")
        if ctx.has_ui:
            self.arm_loop(ctx)

    def on_session_tree(self, event: SessionTreeEvent, ctx: ExtensionContext) -> None:
        self.cancel_timers()
        state = restore(ctx.session.branch())
        self.goal, self.loop, self.last_output = state.goal, state.loop, state.last_output
        self.saved = self.goal
        self.notes_pending = self.goal is not None and bool(self.goal.notes)
        self.dirty = False
        self.pending_reason = None
        self.sync_tools()
        self.show(ctx)
        if ctx.has_ui:
            self.arm_loop(ctx)

    def on_session_shutdown(self, event: SessionShutdownEvent, ctx: ExtensionContext) -> None:
        self.cancel_all()

    def on_session_compact(self, event: SessionCompactEvent, ctx: ExtensionContext) -> None:
        self.notes_pending = True

    def apply_flags(self, ctx: ExtensionContext) -> bool:
        """``--goal`` / ``--goal-budget`` / ``--goal-check``: create (or continue) the goal and start on it.

        Returns True when the flags were used (a pursuit started, or a mistake was reported)."""
        objective = _flag_text(self.api.get_flag("goal"))
        budget_text = _flag_text(self.api.get_flag("goal-budget"))
        check = _flag_text(self.api.get_flag("goal-check"))
        if objective is None:
            if budget_text or check:
                ctx.ui.notify('--goal-budget and --goal-check need --goal "<objective>".', "warning")
            return False
        try:
            objective = check_objective(objective)
            budget = parse_token_count(budget_text) if budget_text else None
        except UsageError as e:
            ctx.ui.notify(f"--goal: {e}", "error")
            self.api.set_exit_code(2)
            return True
        goal = self.goal
        kind: ContinuationKind = "start"
        if goal is not None and goal.unfinished:
            if goal.objective != objective:
                ctx.ui.notify(
                    "This session already has an unfinished goal, so --goal was not used: "
                    f"{goal.objective[:200]} — continue it without --goal, or drop it with /goal clear.",
                    "error",
                )
                self.api.set_exit_code(2)
                return True
            updated = replace(goal, check=check) if check else goal
            if budget is not None:
                updated = set_budget(updated, budget)
            if updated.status not in ("active", "budget_limited") or (
                updated.status == "budget_limited" and budget is None
            ):
                updated = resume_goal(updated)
            kind = "resumed"
        else:
            updated = self.new_goal(objective, budget, check)
        if updated.status == "active":
            self.spawn(self._kick_off(ctx, kind), timer=False)
        self.commit(ctx, updated, "flag")
        if updated.status != "active":
            ctx.ui.notify(goal_status_text(updated), "warning")
            if ctx.mode in HEADLESS_MODES:
                self.api.set_exit_code(exit_code(updated.status))
        return True

    async def _kick_off(self, ctx: ExtensionContext, kind: ContinuationKind) -> None:
        """Start the flag's goal, unless a prompt given with it got there first (that prompt is then the
        first goal turn, and the goal continues from its end)."""
        if not self.prompt_arrived and ctx.is_idle():
            self.queue_continuation(ctx, kind)

    # ==============================================================================================
    # Prompt and run events

    def on_input(self, event: InputEvent, ctx: ExtensionContext) -> InputResult | None:
        goal = self.goal
        if (
            event.source == "print"
            and ctx.mode in HEADLESS_MODES
            and self.pursued
            and goal is not None
            and goal.status == "budget_limited"
        ):
            # `caddie -p --goal X "a" "b"`: the prompts are part of the goal's work, and the budget caps the run
            ctx.ui.notify(
                f"Goal budget reached, so this prompt was not sent: {' '.join(event.text.split())[:200]}",
                "warning",
            )
            return InputResult("handled")
        self.prompt_arrived = True
        if event.source != "extension" and self.goal is not None and self.goal.turns_without_change:
            self.goal = replace(self.goal, turns_without_change=0)  # user input resets the stagnation count
            self.dirty = True
        if not self.prompt_requested and prompt_requests_goal(event.text):
            self.prompt_requested = True
            self.sync_tools()
        return None

    def on_before_agent_start(
        self, event: BeforeAgentStartEvent, ctx: ExtensionContext
    ) -> BeforeAgentStartResult | None:
        self.prompt_arrived = True
        if prompt_requests_goal(event.prompt):
            self.prompt_requested = True
        self.sync_tools()
        if self.goal is not None and STANDING_ORDERS[0] not in event.system_prompt:
            # A custom system prompt has no guideline list: append the orders to it instead.
            return BeforeAgentStartResult(system_prompt=f"{event.system_prompt}\n\n{standing_orders_block()}")
        return None

    def on_agent_start(self, event: AgentStartEvent, ctx: ExtensionContext) -> None:
        self.run = RunFacts()
        self.last_assistant = None

    def on_turn_start(self, event: TurnStartEvent, ctx: ExtensionContext) -> None:
        goal = self.goal
        self.turn_started = (
            self.options.timing.monotonic() if goal is not None and goal.status == "active" else None
        )

    def on_message_end(self, event: MessageEndEvent, ctx: ExtensionContext) -> None:
        message = event.message
        if isinstance(message, CustomMessage):
            if message.custom_type == CONTINUE_MESSAGE:
                self.continuation_queued = False
            return
        if not isinstance(message, AssistantMessage):
            return
        self.last_assistant = message
        if message.tool_calls():
            self.run.had_tool_call = True
        self.charge(ctx, message.usage.input, message.usage.output, message.usage.estimated is True)

    def on_summary_usage(self, event: SummaryUsageEvent, ctx: ExtensionContext) -> None:
        """Compaction and branch summaries made while the goal is active are spent on it too."""
        self.charge(ctx, event.usage.input, event.usage.output, event.usage.estimated is True)
        if ctx.is_idle() and self.pending_reason is not None:
            self.flush(ctx)  # no turn_end will come to save it (a branch summary, a manual compaction)

    def charge(
        self, ctx: ExtensionContext, input_tokens: int, output_tokens: int, estimated: bool = False
    ) -> None:
        """Charge one model call to the active goal (``estimated``: the server reported no usage, these are
        caddie's estimate); reaching the budget ends the run (no further call)."""
        goal = self.goal
        if goal is None or goal.status != "active":
            return
        charged = add_tokens(goal, counted_tokens(input_tokens, output_tokens), estimated)
        self.goal = charged
        self.dirty = True
        if charged.status == "budget_limited":
            ctx.stop_after_turn()  # the tools of this reply still run; no further model request is made
            self.pending_reason = "budget_reached"
            ctx.ui.notify(
                f"Goal budget reached: {approx(charged)}{charged.tokens_used:,} of {charged.token_budget or 0:,} "
                "tokens used. "
                "Raise it with /goal budget <tokens>, or /goal resume to add 50,000.",
                "warning",
            )

    def on_tool_result(self, event: ToolResultEvent, ctx: ExtensionContext) -> None:
        if event.tool_name in CHANGE_TOOLS and not event.is_error:
            self.run.had_change = True

    def on_turn_end(self, event: TurnEndEvent, ctx: ExtensionContext) -> None:
        if self.turn_started is not None and self.goal is not None:
            elapsed = max(0.0, self.options.timing.monotonic() - self.turn_started)
            self.goal = replace(self.goal, active_seconds=self.goal.active_seconds + elapsed)
            self.dirty = True
        self.turn_started = None
        if self.pending_reason is not None:
            self.flush(ctx)
        else:
            self.show(ctx)

    def on_agent_end(self, event: AgentEndEvent, ctx: ExtensionContext) -> None:
        goal = self.goal
        if goal is None or goal.status != "active":
            return
        last = _last_assistant(event.messages)
        if last is None or last.stop_reason not in ("stop", "length"):
            return  # errors and aborts are judged once the session settles (after any retry)
        facts = TurnFacts(self.run.had_tool_call, self.run.had_change, self.run.blocked_reported, last.text())
        outcome = end_goal_turn(goal, facts, self.last_output)
        self.last_output = outcome.last_output
        if outcome.runaway:
            self.commit(ctx, outcome.goal, "runaway")
            ctx.ui.notify(RUNAWAY_NOTICE, "warning")
            return
        self.commit(ctx, outcome.goal, "turn")
        if not ctx.has_pending_messages():
            self.queue_continuation(ctx, "continue")

    def on_agent_settled(self, event: AgentSettledEvent, ctx: ExtensionContext) -> None:
        self.continuation_queued = False
        goal = self.goal
        last = self.last_assistant
        if goal is not None and goal.status == "active" and last is not None:
            status = status_after_failure(last.stop_reason, last.error_message, last.error_status)
            if status is not None:
                self.commit(
                    ctx, replace(goal, status=status), "aborted" if last.stop_reason == "aborted" else "error"
                )
                ctx.ui.notify(failure_notice(status, last), "warning")
        self.flush(ctx)
        self.prompt_requested = False
        self.sync_tools()
        if ctx.mode in HEADLESS_MODES and self.pursued and self.goal is not None:
            self.api.set_exit_code(exit_code(self.goal.status))
        self.schedule_self_paced(ctx)

    # ==============================================================================================
    # Loops

    def save_loop(self, ctx: ExtensionContext, loop: LoopState) -> None:
        self.api.append_entry(LOOP_ENTRY, loop.to_json())
        self.api.publish("loop_state", loop.to_json())
        self.loop = None if loop.stopped else loop
        self.show(ctx)

    def start_loop(self, ctx: ExtensionContext, prompt: str, interval_ms: int | None) -> None:
        self.cancel_timers()
        loop = LoopState("interval" if interval_ms is not None else "settled", prompt, interval_ms)
        self.save_loop(ctx, loop)
        if interval_ms is not None:
            self.arm_loop(ctx)  # fires at once: it has never fired
        else:
            self.fire_loop(ctx)

    def stop_loop(self, ctx: ExtensionContext) -> bool:
        loop = self.loop
        if loop is None:
            return False
        self.cancel_timers()
        self.save_loop(ctx, replace(loop, stopped=True))
        return True

    def arm_loop(self, ctx: ExtensionContext) -> None:
        loop = self.loop
        if loop is not None and loop.mode == "interval":
            self.spawn(self._interval_timer(ctx, self.loop_generation))

    async def _interval_timer(self, ctx: ExtensionContext, generation: int) -> None:
        timing = self.options.timing
        while generation == self.loop_generation:
            loop = self.loop
            if loop is None or loop.mode != "interval" or loop.interval_ms is None:
                return
            now = timing.now_ms()
            due = now if loop.last_fired_at is None else loop.last_fired_at + loop.interval_ms
            if due > now:
                await timing.sleep((due - now) / 1000)
                continue
            self.fire_loop(ctx)

    def schedule_self_paced(self, ctx: ExtensionContext) -> None:
        loop = self.loop
        if loop is None or loop.mode != "settled":
            return
        self.spawn(self._self_paced_fire(ctx, self.loop_generation))

    async def _self_paced_fire(self, ctx: ExtensionContext, generation: int) -> None:
        await self.options.timing.sleep(self.options.self_paced_delay_s)
        if generation != self.loop_generation or self.loop is None:
            return
        if ctx.is_idle() and not ctx.has_pending_messages():
            self.fire_loop(ctx)

    def fire_loop(self, ctx: ExtensionContext) -> bool:
        """Send the loop's prompt, unless a message is already queued for the next turn (then skip a beat)."""
        loop = self.loop
        if loop is None:
            return False
        now = self.options.timing.now_ms()
        if ctx.is_idle():
            self.api.send_user_message(loop.prompt)
        elif ctx.has_pending_messages() or self.continuation_queued:
            self.loop = replace(loop, last_fired_at=now)
            return False
        else:
            self.api.send_user_message(loop.prompt, deliver_as="follow_up")
        self.save_loop(ctx, replace(loop, iteration=loop.iteration + 1, last_fired_at=now))
        return True
