"""goal — a finish line: long objectives with a token budget and a check command, and ``/loop``.

A goal is an objective, an optional token budget, an optional check command and progress notes. While one
is active, every settled turn queues exactly one continuation, so the agent keeps going without the user
typing "continue"; ``update_goal complete`` is refused until the check exits 0; the budget is the only hard
stop. ``/loop`` refires a prompt on an interval or after each settle. State lives in ``goal:state`` /
``loop:state`` session entries. Until a goal exists (or a prompt asks for one) the extension adds nothing to
a request: its tools are deferred and the standing orders are absent.

Layout: ``model`` (state shapes), ``parsing``, ``accounting``, ``branch``, ``render`` are pure; ``check``
runs the check command; ``runtime`` (event handlers), ``tools`` and ``commands`` are the glue.
"""

from __future__ import annotations

from caddie.extensions.api import CommandContext, ExtensionAPI
from caddie.extensions.bundled.goal.commands import (
    CREATE_GOAL_DESCRIPTION,
    GOAL_DESCRIPTION,
    LOOP_DESCRIPTION,
    create_goal_command,
    goal_command,
    loop_command,
)
from caddie.extensions.bundled.goal.controller import GoalRuntime
from caddie.extensions.bundled.goal.parsing import check_objective, parse_token_count
from caddie.extensions.bundled.goal.timing import GoalOptions
from caddie.extensions.bundled.goal.tools import make_tools

__all__ = ["GoalOptions", "GoalRuntime", "register"]


def register(api: ExtensionAPI, options: GoalOptions | None = None) -> GoalRuntime:
    """Register tools, commands, flags and handlers; returns the extension's state (for tests). ``options``:
    the clock, sleeping and the knobs tests turn down (default: the system clock, the usual limits)."""
    rt = GoalRuntime(api, options or GoalOptions())
    tools = make_tools(rt)
    for tool in tools:
        api.register_tool(tool)
    rt.orders_tool = next(t for t in tools if t.name == "get_goal")

    async def on_goal(args: str, ctx: CommandContext) -> None:
        await goal_command(rt, args, ctx)

    async def on_loop(args: str, ctx: CommandContext) -> None:
        await loop_command(rt, args, ctx)

    async def on_create_goal(args: str, ctx: CommandContext) -> None:
        await create_goal_command(rt, args, ctx)

    api.register_command("goal", on_goal, description=GOAL_DESCRIPTION)
    api.register_command("loop", on_loop, description=LOOP_DESCRIPTION)
    api.register_command("create-goal", on_create_goal, description=CREATE_GOAL_DESCRIPTION)

    api.register_flag(
        "goal",
        "pursue this objective to the end; with -p the exit code says how it ended "
        "(0 complete, 2 blocked, 3 budget reached, 4 paused, 5 usage limits)",
        check=check_objective,
    )
    api.register_flag(
        "goal-budget", "token budget for --goal (input+output tokens), e.g. 200k", check=parse_token_count
    )
    api.register_flag("goal-check", "shell command that must exit 0 before --goal can be completed")

    api.on("session_start", rt.on_session_start)
    api.on("session_tree", rt.on_session_tree)
    api.on("session_compact", rt.on_session_compact)
    api.on("summary_usage", rt.on_summary_usage)
    api.on("session_shutdown", rt.on_session_shutdown)
    api.on("input", rt.on_input)
    api.on("before_agent_start", rt.on_before_agent_start)
    api.on("agent_start", rt.on_agent_start)
    api.on("turn_start", rt.on_turn_start)
    api.on("message_end", rt.on_message_end)
    api.on("tool_result", rt.on_tool_result)
    api.on("turn_end", rt.on_turn_end)
    api.on("agent_end", rt.on_agent_end)
    api.on("agent_settled", rt.on_agent_settled)
    return rt
