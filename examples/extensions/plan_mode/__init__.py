"""Plan mode: read-only exploration, then a tracked plan (Pi's plan-mode example).

- ``/plan`` (or Ctrl+Alt+P, or ``--plan``) toggles plan mode: ``edit`` and ``write`` are switched off and
  ``bash`` only runs read-only commands (``steps.is_safe_command``); every run is told it is in plan mode.
- When a run in plan mode ends with a ``Plan:`` of numbered steps, you are asked what next: execute it
  (full tools come back; the model marks finished steps ``[DONE:n]``, a widget and the status bar track
  them), stay, or refine it.
- ``/todos`` shows the progress. The state is saved in the session, so a resumed session carries on.
"""

from __future__ import annotations

from typing import Any

from caddie.extensions.api import (
    AgentEndEvent,
    AssistantMessage,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    CommandContext,
    ContextEvent,
    ContextResult,
    CustomEntry,
    CustomMessage,
    ExtensionAPI,
    ExtensionContext,
    MessageEntry,
    ToolCallEvent,
    ToolCallResult,
    TurnEndEvent,
    UserMessage,
    text_of,
)

from .steps import Step, extract_steps, is_safe_command, mark_completed

PLAN_MODE_TOOLS = ["read", "bash", "grep", "find", "ls", "questionnaire"]
NORMAL_MODE_TOOLS = ["read", "bash", "edit", "write"]
DISABLED_IN_PLAN_MODE = {"edit", "write"}
MANAGED = {*PLAN_MODE_TOOLS, *NORMAL_MODE_TOOLS}

PLAN_CONTEXT = """[PLAN MODE ACTIVE]
You are in plan mode - a read-only exploration mode for safe code analysis.

Restrictions:
- Built-in edit and write tools are disabled
- Other currently active tools remain available
- Bash is restricted to an allowlist of read-only commands

Create a detailed numbered plan under a "Plan:" header:

Plan:
1. First step description
2. Second step description
...

Do NOT attempt to make changes - just describe what you would do."""


class PlanMode:
    """The state, and what changes it; the glue in ``register`` only routes events here."""

    def __init__(self, api: ExtensionAPI) -> None:
        self.api = api
        self.enabled = False
        self.executing = False
        self.steps: list[Step] = []
        self.tools_before: list[str] | None = None

    # -- tools --------------------------------------------------------------------------------------
    def enter_tools(self) -> None:
        if self.tools_before is None:
            self.tools_before = self.api.get_active_tools()
        keep = [n for n in self.tools_before if n not in DISABLED_IN_PLAN_MODE]
        self.api.set_active_tools(list(dict.fromkeys([*keep, *PLAN_MODE_TOOLS])))

    def leave_tools(self) -> None:
        if self.tools_before is not None:
            self.api.set_active_tools(self.tools_before)
        else:
            others = [n for n in self.api.get_active_tools() if n not in MANAGED]
            self.api.set_active_tools(list(dict.fromkeys([*NORMAL_MODE_TOOLS, *others])))
        self.tools_before = None

    # -- state --------------------------------------------------------------------------------------
    def save(self) -> None:
        self.api.append_entry(
            "plan-mode",
            {
                "enabled": self.enabled,
                "todos": [s.to_json() for s in self.steps],
                "executing": self.executing,
                "toolsBeforePlanMode": self.tools_before,
            },
        )

    def restore(self, ctx: ExtensionContext) -> None:
        entries = ctx.session.entries()
        saved = [e for e in entries if isinstance(e, CustomEntry) and e.custom_type == "plan-mode"]
        data: Any = saved[-1].data if saved else None
        if isinstance(data, dict):
            self.enabled = bool(data.get("enabled", self.enabled))
            self.steps = [Step(**s) for s in data.get("todos") or []]
            self.executing = bool(data.get("executing", self.executing))
            self.tools_before = data.get("toolsBeforePlanMode", self.tools_before)
            if self.executing and self.steps:
                # steps finished after the last "execute" message count too
                start = max(
                    (
                        i
                        for i, e in enumerate(entries)
                        if getattr(e, "custom_type", None) == "plan-mode-execute"
                    ),
                    default=-1,
                )
                texts = [
                    e.message.text()
                    for e in entries[start + 1 :]
                    if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
                ]
                mark_completed("\n".join(texts), self.steps)
        if self.enabled:
            self.enter_tools()

    def show(self, ctx: ExtensionContext) -> None:
        if self.executing and self.steps:
            done = sum(s.completed for s in self.steps)
            ctx.ui.set_status("plan-mode", f"📋 {done}/{len(self.steps)}")
            ctx.ui.set_widget("plan-todos", [("☑ " if s.completed else "☐ ") + s.text for s in self.steps])
        else:
            ctx.ui.set_status("plan-mode", "⏸ plan" if self.enabled else None)
            ctx.ui.set_widget("plan-todos", None)

    def toggle(self, ctx: ExtensionContext) -> None:
        self.enabled, self.executing, self.steps = not self.enabled, False, []
        if self.enabled:
            self.enter_tools()
            ctx.ui.notify("Plan mode enabled. Built-in write tools disabled.")
        else:
            self.leave_tools()
            ctx.ui.notify("Plan mode disabled. Full access restored.")
        self.show(ctx)
        self.save()

    def start_executing(self, ctx: ExtensionContext) -> None:
        self.enabled, self.executing = False, True
        self.leave_tools()
        self.show(ctx)
        self.save()
        remaining = "\n".join(f"{s.step}. {s.text}" for s in self.steps)
        self.api.send_message("plan-todo-list", self.todo_list_text(), deliver_as="follow_up")
        self.api.send_message(
            "plan-mode-execute",
            f"Execute the plan.\n\nRemaining steps:\n{remaining}\n\nStart with: {self.steps[0].text}\n"
            "After completing a step, include a [DONE:n] tag in your response.",
            deliver_as="follow_up",
            trigger_turn=True,
        )

    def todo_list_text(self) -> str:
        listing = "\n".join(f"{i}. ☐ {s.text}" for i, s in enumerate(self.steps, 1))
        return f"**Plan Steps ({len(self.steps)}):**\n\n{listing}"


def register(api: ExtensionAPI) -> None:
    plan = PlanMode(api)
    api.register_flag("plan", "Start in plan mode (read-only exploration)", "boolean", False)

    def todos(args: str, ctx: CommandContext) -> None:
        if not plan.steps:
            ctx.ui.notify("No todos. Create a plan first with /plan", "info")
            return
        listing = "\n".join(
            f"{i}. {'✓' if s.completed else '○'} {s.text}" for i, s in enumerate(plan.steps, 1)
        )
        ctx.ui.notify(f"Plan Progress:\n{listing}", "info")

    def gate(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        if not plan.enabled or event.tool_name != "bash":
            return None
        command = str(event.input.get("command", ""))
        if is_safe_command(command):
            return None
        return ToolCallResult(
            block=True,
            reason="Plan mode: command blocked (not allowlisted). Use /plan to disable plan mode first.\n"
            f"Command: {command}",
        )

    def forget_plan_context(event: ContextEvent, ctx: ExtensionContext) -> ContextResult | None:
        if plan.enabled:
            return None

        def stale(m: object) -> bool:
            if isinstance(m, CustomMessage):
                return m.custom_type == "plan-mode-context"
            return isinstance(m, UserMessage) and "[PLAN MODE ACTIVE]" in text_of(m.content)

        return ContextResult([m for m in event.messages if not stale(m)])

    def before(event: BeforeAgentStartEvent, ctx: ExtensionContext) -> BeforeAgentStartResult | None:
        if plan.enabled:
            return BeforeAgentStartResult(CustomMessage("plan-mode-context", PLAN_CONTEXT, display=False))
        if plan.executing and plan.steps:
            remaining = "\n".join(f"{s.step}. {s.text}" for s in plan.steps if not s.completed)
            return BeforeAgentStartResult(
                CustomMessage(
                    "plan-execution-context",
                    f"[EXECUTING PLAN - Full tool access enabled]\n\nRemaining steps:\n{remaining}\n\n"
                    "Execute each step in order.\nAfter completing a step, include a [DONE:n] tag in your response.",
                    display=False,
                )
            )
        return None

    def on_turn_end(event: TurnEndEvent, ctx: ExtensionContext) -> None:
        if not plan.executing or not plan.steps or not isinstance(event.message, AssistantMessage):
            return
        if mark_completed(event.message.text(), plan.steps):
            plan.show(ctx)
        plan.save()

    async def on_agent_end(event: AgentEndEvent, ctx: ExtensionContext) -> None:
        if plan.executing and plan.steps:
            if all(s.completed for s in plan.steps):
                finished = "\n".join(f"~~{s.text}~~" for s in plan.steps)
                api.send_message("plan-complete", f"**Plan Complete!** ✓\n\n{finished}")
                plan.executing, plan.steps = False, []
                plan.show(ctx)
                plan.save()
            return
        if not plan.enabled or not ctx.has_ui:
            return
        last = next((m for m in reversed(event.messages) if isinstance(m, AssistantMessage)), None)
        if last is not None and (found := extract_steps(last.text())):
            plan.steps = found
        if not plan.steps:
            return
        plan.save()
        choice = await ctx.ui.select(
            "Plan mode - what next?",
            ["Execute the plan (track progress)", "Stay in plan mode", "Refine the plan"],
        )
        if choice is not None and choice.startswith("Execute"):
            plan.start_executing(ctx)
        elif choice == "Refine the plan":
            refinement = await ctx.ui.editor("Refine the plan:", "")
            if refinement and refinement.strip():
                api.send_message("plan-todo-list", plan.todo_list_text(), deliver_as="follow_up")
                api.send_user_message(refinement.strip(), "follow_up")

    def on_start(event: object, ctx: ExtensionContext) -> None:
        if api.get_flag("plan") is True:
            plan.enabled = True
        plan.restore(ctx)
        plan.show(ctx)

    api.register_command(
        "plan", lambda args, ctx: plan.toggle(ctx), "Toggle plan mode (read-only exploration)"
    )
    api.register_command("todos", todos, "Show current plan todo list")
    api.register_shortcut("ctrl+alt+p", plan.toggle, "Toggle plan mode")
    api.on("tool_call", gate)
    api.on("context", forget_plan_context)
    api.on("before_agent_start", before)
    api.on("turn_end", on_turn_end)
    api.on("agent_end", on_agent_end)
    api.on("session_start", on_start)
