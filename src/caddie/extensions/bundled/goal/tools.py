"""The three goal tools: ``create_goal``, ``get_goal``, ``update_goal`` (deferred: active only while a goal
exists or the current prompt asks for one)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from caddie.extensions.api import (
    AbortSignal,
    ExtensionContext,
    ToolDefinition,
    ToolError,
    ToolResult,
    text_result,
)
from caddie.extensions.bundled.goal.accounting import report_blocked
from caddie.extensions.bundled.goal.check import run_check, user_shell
from caddie.extensions.bundled.goal.controller import GoalRuntime
from caddie.extensions.bundled.goal.model import NOTES_LIMIT, OBJECTIVE_LIMIT
from caddie.extensions.bundled.goal.parsing import UsageError, parse_token_count
from caddie.extensions.bundled.goal.render import (
    CREATE_GOAL_DESCRIPTION,
    GET_GOAL_DESCRIPTION,
    NO_GOAL_FOR_MODEL,
    UPDATE_GOAL_DESCRIPTION,
    blocked_not_yet,
    blocked_text,
    check_failed_text,
    check_passed_text,
    created_text,
    goal_report,
    notes_too_long,
    objective_too_long,
    unfinished_goal_exists,
)

CREATE_GOAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "objective": {
            "type": "string",
            "description": "What done means, how it is verified, and what is out of scope (at most 4,000 characters).",
        },
        "token_budget": {
            "type": "integer",
            "description": "Optional cap on input+output tokens spent on the goal, e.g. 200000. Omit for none.",
        },
        "check": {
            "type": "string",
            "description": "Optional shell command that must exit 0 before the goal can be completed, e.g. 'pytest -q'.",
        },
    },
    "required": ["objective"],
    "additionalProperties": False,
}
GET_GOAL_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
UPDATE_GOAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["complete", "blocked"]},
        "notes": {
            "type": "string",
            "description": "Replaces the progress notes (at most 3,000 characters): done / failed / next.",
        },
    },
    "additionalProperties": False,
}


def prepare_goal_args(args: Any) -> Any:
    """Accept arguments sent as a JSON string, and a token budget written like ``"50k"``."""
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except (ValueError, RecursionError):
            return args
        args = parsed
    if isinstance(args, dict) and isinstance(args.get("token_budget"), str):
        try:
            args["token_budget"] = parse_token_count(args["token_budget"])
        except UsageError:
            pass  # validation reports it
    return args


def _field(params: Any, name: str) -> Any:
    return params.get(name) if isinstance(params, dict) else None


def make_tools(rt: GoalRuntime) -> list[ToolDefinition]:
    async def create_goal(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: ExtensionContext
    ) -> ToolResult:
        objective = str(_field(params, "objective") or "").strip()
        if not objective:
            raise ToolError("objective is empty: say what done means and how it is verified.")
        if len(objective) > OBJECTIVE_LIMIT:
            raise ToolError(objective_too_long(len(objective)))
        existing = rt.goal
        if existing is not None and existing.unfinished:
            raise ToolError(unfinished_goal_exists(existing))
        budget = _field(params, "token_budget")
        if budget is not None and (not isinstance(budget, int) or budget <= 0):
            raise ToolError("token_budget must be a positive number of tokens, e.g. 200000.")
        check = str(_field(params, "check") or "").strip() or None
        goal = rt.new_goal(objective, budget, check)
        rt.commit(ctx, goal, "created")
        return text_result(created_text(goal), goal.to_json())

    async def get_goal(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: ExtensionContext
    ) -> ToolResult:
        goal = rt.goal
        if goal is None:
            return text_result(NO_GOAL_FOR_MODEL)
        return text_result(goal_report(goal, ctx.session.session_id), goal.to_json())

    async def update_goal(
        tool_call_id: str, params: Any, signal: AbortSignal, on_update: Any, ctx: ExtensionContext
    ) -> ToolResult:
        goal = rt.goal
        if goal is None:
            raise ToolError(NO_GOAL_FOR_MODEL)
        status = _field(params, "status")
        notes = _field(params, "notes")
        if status is None and notes is None:
            raise ToolError("Give status (complete or blocked), notes, or both.")
        if isinstance(notes, str) and len(notes) > NOTES_LIMIT:
            raise ToolError(notes_too_long(len(notes)))
        if status is not None and goal.status == "complete":
            raise ToolError("The goal is already complete.")
        saved_notes = ""
        if isinstance(notes, str):
            goal = replace(goal, notes=notes.strip())
            rt.notes_pending = False  # written in this turn: already in context
            rt.commit(ctx, goal, "notes")
            saved_notes = "Progress notes saved."
        if status == "complete":
            if goal.check:
                options = rt.options
                result = await run_check(
                    goal.check,
                    ctx.cwd,
                    shell=user_shell(ctx.settings().get("shellPath")),
                    timeout_s=options.check_timeout_s,
                    limit=options.check_output_bytes,
                    signal=signal,
                    sandbox=ctx.sandbox,
                )
                if not result.passed:
                    text = check_failed_text(
                        goal.check, result, options.check_timeout_s, options.check_output_bytes
                    )
                    raise ToolError(f"{text}\n\n{saved_notes}".rstrip())
                done_text = check_passed_text(goal.check)
            else:
                done_text = "Goal complete."
            current = rt.goal or goal
            rt.commit(ctx, replace(current, status="complete"), "complete")
            ctx.ui.notify("Goal complete.", "info")
            return text_result(f"{done_text}\n{saved_notes}".rstrip(), (rt.goal or goal).to_json())
        if status == "blocked":
            updated, accepted = report_blocked(goal, rt.run.blocked_reported)
            rt.run.blocked_reported = True
            rt.commit(ctx, updated, "blocked" if accepted else "blocker_reported")
            if not accepted:
                raise ToolError(f"{blocked_not_yet(updated.blocked_streak)}\n{saved_notes}".rstrip())
            ctx.ui.notify("Goal blocked. /goal resume continues it.", "warning")
            return text_result(f"{blocked_text()}\n{saved_notes}".rstrip(), updated.to_json())
        return text_result(saved_notes, goal.to_json())

    return [
        ToolDefinition(
            name="create_goal",
            description=CREATE_GOAL_DESCRIPTION,
            parameters=CREATE_GOAL_SCHEMA,
            execute=create_goal,
            label="Create goal",
            prepare_arguments=prepare_goal_args,
            execution_mode="sequential",
        ),
        ToolDefinition(
            name="get_goal",
            description=GET_GOAL_DESCRIPTION,
            parameters=GET_GOAL_SCHEMA,
            execute=get_goal,
            label="Get goal",
            prepare_arguments=prepare_goal_args,
        ),
        ToolDefinition(
            name="update_goal",
            description=UPDATE_GOAL_DESCRIPTION,
            parameters=UPDATE_GOAL_SCHEMA,
            execute=update_goal,
            label="Update goal",
            prepare_arguments=prepare_goal_args,
            execution_mode="sequential",
        ),
    ]
