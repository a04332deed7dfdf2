"""The ``/goal``, ``/loop`` and ``/create-goal`` commands (thin glue over ``parsing`` and the runtime)."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources

from caddie.extensions.api import CommandContext
from caddie.extensions.bundled.goal.accounting import resume_goal, set_budget
from caddie.extensions.bundled.goal.controller import GoalRuntime
from caddie.extensions.bundled.goal.parsing import (
    ClearGoal,
    EditGoal,
    NewGoal,
    PauseGoal,
    ResumeGoal,
    SetBudget,
    SetCheck,
    ShowGoal,
    ShowLoop,
    StartLoop,
    StopLoop,
    UsageError,
    check_objective,
    parse_goal_args,
    parse_loop_args,
)
from caddie.extensions.bundled.goal.render import (
    NO_GOAL,
    format_interval,
    format_tokens,
    goal_report,
    goal_status_text,
    loop_status_text,
)

GOAL_DESCRIPTION = (
    "Pursue an objective until done: /goal <objective> | with token budget <N> <objective> | edit | "
    "budget <tokens|off> | check <command|off> | pause | resume | clear"
)
LOOP_DESCRIPTION = (
    "Refire a prompt: /loop <interval> <prompt> | /loop <prompt> (after each settle) | /loop stop"
)
CREATE_GOAL_DESCRIPTION = (
    "Turn a plain task into a strict goal (done / verified by / out of scope) and create it"
)
ARGUMENTS_PLACEHOLDER = "$ARGUMENTS"


def create_goal_template() -> str:
    return (
        resources.files("caddie.extensions.bundled.goal")
        .joinpath("prompts", "create-goal.md")
        .read_text("utf-8")
    )


def expand_create_goal(task: str, template: str | None = None) -> str:
    return (template or create_goal_template()).replace(ARGUMENTS_PLACEHOLDER, task.strip())


async def goal_command(rt: GoalRuntime, args: str, ctx: CommandContext) -> None:
    try:
        command = parse_goal_args(args)
    except UsageError as e:
        ctx.ui.notify(str(e), "warning")
        return
    goal = rt.goal
    if isinstance(command, ShowGoal):
        ctx.ui.notify(goal_report(goal) if goal is not None else NO_GOAL, "info")
        return
    if isinstance(command, NewGoal):
        if goal is not None and goal.unfinished:
            ctx.ui.notify(
                f"A goal is already set ({goal_status_text(goal)}): {goal.objective[:200]} — finish it, or drop "
                "it with /goal clear first.",
                "warning",
            )
            return
        created = rt.new_goal(command.objective, command.budget, None)
        rt.commit(ctx, created, "created")
        budget = f" (budget {format_tokens(command.budget)} tokens)" if command.budget else ""
        ctx.ui.notify(f"Goal set{budget}: {created.objective[:200]}", "info")
        rt.start_pursuit(ctx, "start")
        return
    if goal is None:
        ctx.ui.notify(NO_GOAL, "warning")
        return
    if isinstance(command, EditGoal):
        if not ctx.has_ui:
            ctx.ui.notify("/goal edit needs the interactive editor.", "warning")
            return
        edited = await ctx.ui.editor("Edit the goal objective", goal.objective)
        if edited is None or edited.strip() == goal.objective:
            ctx.ui.notify("The objective is unchanged.", "info")
            return
        try:
            objective = check_objective(edited)
        except UsageError as e:
            ctx.ui.notify(str(e), "warning")
            return
        rt.commit(ctx, replace(rt.goal or goal, objective=objective), "edited")
        ctx.ui.notify("Objective updated.", "info")
    elif isinstance(command, SetBudget):
        before = goal.status
        updated = set_budget(goal, command.budget)
        rt.commit(ctx, updated, "budget")
        if command.budget is None:
            ctx.ui.notify("Token budget removed: spend on this goal is unbounded.", "info")
        else:
            ctx.ui.notify(
                f"Token budget set to {command.budget:,} ({goal.tokens_used:,} used so far).", "info"
            )
        if before == "budget_limited" and updated.status == "active":
            rt.start_pursuit(ctx, "resumed")
        elif updated.status == "budget_limited" and before == "active" and not ctx.is_idle():
            ctx.stop_after_turn()
    elif isinstance(command, SetCheck):
        rt.commit(ctx, replace(goal, check=command.command), "check")
        ctx.ui.notify(
            f"Check set: {command.command}" if command.command else "Check removed: completion is not gated.",
            "info",
        )
    elif isinstance(command, PauseGoal):
        if goal.status != "active":
            ctx.ui.notify(f"The goal is not being pursued ({goal_status_text(goal)}).", "info")
            return
        rt.commit(ctx, replace(goal, status="paused"), "paused")
        ctx.ui.notify("Goal paused. /goal resume continues it.", "info")
    elif isinstance(command, ResumeGoal):
        if goal.status == "complete":
            ctx.ui.notify("The goal is complete; set a new one with /goal <objective>.", "info")
            return
        if goal.status == "active":
            ctx.ui.notify("The goal is already active.", "info")
            return
        resumed = resume_goal(goal)
        rt.commit(ctx, resumed, "resumed")
        if resumed.budget_raised_to is not None and resumed.budget_raised_to != goal.budget_raised_to:
            ctx.ui.notify(
                f"Goal resumed with the budget raised to {resumed.budget_raised_to:,} tokens.", "info"
            )
        else:
            ctx.ui.notify("Goal resumed.", "info")
        rt.start_pursuit(ctx, "resumed")
    elif isinstance(command, ClearGoal):
        rt.commit(ctx, None, "cleared")
        ctx.ui.notify("Goal cleared.", "info")


async def loop_command(rt: GoalRuntime, args: str, ctx: CommandContext) -> None:
    try:
        command = parse_loop_args(args)
    except UsageError as e:
        ctx.ui.notify(str(e), "warning")
        return
    if isinstance(command, ShowLoop):
        loop = rt.loop
        if loop is None:
            ctx.ui.notify("No loop is running. Start one with /loop 5m <prompt> or /loop <prompt>.", "info")
        else:
            ctx.ui.notify(f"{loop_status_text(loop)}: {loop.prompt}", "info")
    elif isinstance(command, StopLoop):
        if rt.stop_loop(ctx):
            ctx.ui.notify("Loop stopped.", "info")
        else:
            ctx.ui.notify("No loop is running.", "info")
    elif isinstance(command, StartLoop):
        pace = (
            f"every {format_interval(command.interval_ms)}"
            if command.interval_ms is not None
            else "after each settle"
        )
        ctx.ui.notify(f"Loop started ({pace}): {command.prompt}", "info")
        rt.start_loop(ctx, command.prompt, command.interval_ms)


async def create_goal_command(rt: GoalRuntime, args: str, ctx: CommandContext) -> None:
    task = args.strip()
    if not task:
        ctx.ui.notify("Usage: /create-goal <task>", "warning")
        return
    text = expand_create_goal(task)
    rt.prompt_requested = True  # the tools must be there even if the prompt is queued behind a run
    rt.sync_tools()
    if ctx.is_idle():
        rt.api.send_user_message(text)
    else:
        rt.api.send_user_message(text, deliver_as="follow_up")
