"""Delegate to subagents, each a separate caddie process with its own context (Pi's subagent example).

The ``subagent`` tool runs agents defined as Markdown files (``agents.py``): yours in
``~/.caddie/agent/agents/``, and with ``agentScope: "both"`` (or ``"project"``) the project's
``.caddie/agents/`` too (asked first in an untrusted project). Three ways to call it:

- one agent: ``{"agent": "scout", "task": "find the auth code"}``;
- in parallel (at most 8 tasks, 4 at a time): ``{"tasks": [{"agent": ..., "task": ...}, ...]}``;
- a chain, each step given the previous one's answer as ``{previous}``:
  ``{"chain": [{"agent": "scout", "task": "..."}, {"agent": "worker", "task": "Using {previous}, ..."}]}``.

Each agent runs as ``caddie --mode json -p --no-session`` with its tools, its prompt appended to the system
prompt, and its model (default: yours, with your thinking level). Progress streams into the tool's
updates; Esc stops the processes. Copy ``agents/*.md`` to ``~/.caddie/agent/agents/`` to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal as signals
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from caddie.extensions.api import (
    AbortSignal,
    ExtensionAPI,
    ExtensionContext,
    OnUpdate,
    TextContent,
    ToolDefinition,
    ToolError,
    ToolResult,
)

from .agents import AgentConfig, discover_agents

MAX_PARALLEL_TASKS = 8
MAX_CONCURRENCY = 4


class TaskItem(BaseModel):
    agent: str = Field(description="Name of the agent to invoke")
    task: str = Field(description="Task to delegate to the agent")
    cwd: str | None = Field(None, description="Working directory for the agent process")


class ChainItem(BaseModel):
    agent: str = Field(description="Name of the agent to invoke")
    task: str = Field(description="Task with optional {previous} placeholder for prior output")
    cwd: str | None = Field(None, description="Working directory for the agent process")


class SubagentParams(BaseModel):
    agent: str | None = Field(None, description="Name of the agent to invoke (for single mode)")
    task: str | None = Field(None, description="Task to delegate (for single mode)")
    tasks: list[TaskItem] | None = Field(None, description="Array of {agent, task} for parallel execution")
    chain: list[ChainItem] | None = Field(None, description="Array of {agent, task} for sequential execution")
    agentScope: Literal["user", "project", "both"] | None = Field(
        None, description='Which agent folders to use: "user" (default), "project" or "both"'
    )
    confirmProjectAgents: bool = Field(
        True, description="Prompt before running project-local agents. Default: true."
    )
    cwd: str | None = Field(None, description="Working directory for the agent process (single mode)")


@dataclass
class AgentRun:
    """One agent's run: what it said and what it cost."""

    agent: str
    task: str
    source: str
    exit_code: int = 0
    output: str = ""
    stop_reason: str | None = None
    error: str | None = None
    stderr: str = ""
    turns: int = 0
    usage: dict[str, float] = field(
        default_factory=lambda: {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": 0.0}
    )

    @property
    def failed(self) -> bool:
        return self.exit_code != 0 or self.stop_reason in ("error", "aborted")

    def failure(self) -> str:
        return self.error or self.stderr.strip() or self.output or "(no output)"

    def take(self, event: dict[str, Any]) -> bool:
        """Fold one ``--mode json`` event in; True when it changed what there is to show."""
        message = event.get("message") if event.get("type") == "message_end" else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return False
        self.turns += 1
        usage = message.get("usage") or {}
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            self.usage[key] += usage.get(key) or 0
        self.usage["cost"] += (usage.get("cost") or {}).get("total") or 0
        text = "\n".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
        self.output = text or self.output
        self.stop_reason = message.get("stopReason") or self.stop_reason
        self.error = message.get("errorMessage") or self.error
        return True


async def run_agent(
    agent: AgentConfig,
    task: str,
    cwd: str,
    defaults: tuple[str | None, str | None],
    signal: AbortSignal,
    progress: OnUpdate | None,
) -> AgentRun:
    """Run one agent to the end as a caddie child process reading its JSON event stream."""
    model, thinking = defaults
    args = ["--mode", "json", "-p", "--no-session"]
    if agent.model or model:
        args += ["--model", agent.model or str(model)]
    if not agent.model and thinking:
        args += ["--thinking", thinking]
    if agent.tools:
        args += ["--tools", ",".join(agent.tools)]
    if agent.system_prompt.strip():
        args += ["--append-system-prompt", agent.system_prompt]
    args.append(f"Task: {task}")
    run = AgentRun(agent.name, task, agent.source)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "caddie",
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )

    def stop() -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signals.SIGTERM)

    remove = signal.add_listener(stop)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        async for raw in proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict) and run.take(event) and progress is not None:
                progress(ToolResult([TextContent(run.output or "(running...)")], details=asdict(run)))
        run.exit_code = await proc.wait()
        run.stderr = (await errors).decode(errors="replace")
    except BaseException:
        stop()
        raise
    finally:
        remove()
    if signal.aborted:
        raise ToolError("Subagent was aborted")
    return run


def register(api: ExtensionAPI) -> None:
    async def execute(
        tool_call_id: str,
        params: SubagentParams,
        signal: AbortSignal,
        on_update: OnUpdate,
        ctx: ExtensionContext,
    ) -> ToolResult:
        scope = params.agentScope or "user"
        agents, project_dir = discover_agents(Path(ctx.config_scope().agent_dir), Path(ctx.cwd), scope)
        by_name = {a.name: a for a in agents}
        available = ", ".join(f'"{a.name}"' for a in agents) or "none"
        modes = [bool(params.chain), bool(params.tasks), bool(params.agent and params.task)]
        if sum(modes) != 1:
            raise ToolError(f"Invalid parameters. Provide exactly one mode.\nAvailable agents: {available}")
        wanted = [s.agent for s in params.chain or []] + [t.agent for t in params.tasks or []]
        wanted += [params.agent] if params.agent else []
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise ToolError(f'Unknown agent: "{unknown[0]}". Available agents: {available}.')
        from_project = sorted({n for n in wanted if by_name[n].source == "project"})
        if from_project and params.confirmProjectAgents and ctx.has_ui and not ctx.is_project_trusted():
            approved = await ctx.ui.confirm(
                "Run project-local agents?",
                f"Agents: {', '.join(from_project)}\nSource: {project_dir}\n\n"
                "Project agents are repo-controlled. Only continue for trusted repositories.",
            )
            if not approved:
                return ToolResult([TextContent("Canceled: project-local agents not approved.")], details={})
        defaults = (f"{ctx.model.provider}/{ctx.model.id}" if ctx.model else None, ctx.thinking_level)

        if params.chain:
            previous, runs = "", []
            for number, step in enumerate(params.chain, 1):
                run = await run_agent(
                    by_name[step.agent],
                    step.task.replace("{previous}", previous),
                    step.cwd or ctx.cwd,
                    defaults,
                    signal,
                    on_update,
                )
                runs.append(run)
                if run.failed:
                    raise ToolError(f"Chain stopped at step {number} ({step.agent}): {run.failure()}")
                previous = run.output
            return ToolResult(
                [TextContent(runs[-1].output or "(no output)")], details=[asdict(r) for r in runs]
            )

        if params.tasks:
            if len(params.tasks) > MAX_PARALLEL_TASKS:
                raise ToolError(
                    f"Too many parallel tasks ({len(params.tasks)}). Max is {MAX_PARALLEL_TASKS}."
                )
            gate = asyncio.Semaphore(MAX_CONCURRENCY)
            finished = [0]

            async def one(item: TaskItem) -> AgentRun:
                async with gate:
                    run = await run_agent(
                        by_name[item.agent], item.task, item.cwd or ctx.cwd, defaults, signal, None
                    )
                finished[0] += 1
                on_update(
                    ToolResult([TextContent(f"Parallel: {finished[0]}/{len(params.tasks or [])} done")])
                )
                return run

            runs = list(await asyncio.gather(*(one(t) for t in params.tasks)))
            ok = sum(not r.failed for r in runs)
            summaries = [
                f"[{r.agent}] {'failed' if r.failed else 'completed'}: "
                + ((r.failure() if r.failed else r.output) or "(no output)")
                for r in runs
            ]
            text = f"Parallel: {ok}/{len(runs)} succeeded\n\n" + "\n\n---\n\n".join(summaries)
            return ToolResult([TextContent(text)], details=[asdict(r) for r in runs])

        assert params.agent is not None and params.task is not None
        run = await run_agent(
            by_name[params.agent], params.task, params.cwd or ctx.cwd, defaults, signal, on_update
        )
        if run.failed:
            raise ToolError(f"Agent {run.stop_reason or 'failed'}: {run.failure()}")
        return ToolResult([TextContent(run.output or "(no output)")], details=[asdict(run)])

    api.register_tool(
        ToolDefinition(
            name="subagent",
            label="Subagent",
            description=(
                "Delegate tasks to specialized subagents with isolated context. Modes: single (agent + task), "
                "parallel (tasks array), chain (sequential with {previous} placeholder). Default agent scope "
                'is "user" (from ~/.caddie/agent/agents). To enable project-local agents in .caddie/agents, '
                'set agentScope: "both" (or "project").'
            ),
            parameters=SubagentParams,
            execute=execute,
        )
    )
