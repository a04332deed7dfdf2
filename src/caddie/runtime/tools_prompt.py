"""The tools the model is offered and the system prompt that describes them, kept in step.

Built-in tools and the tools extensions register form one set; a list of names says which are active. The
system prompt is built from the active tools (their snippets and guidelines), the context files, the
skills and the user's custom/appended prompt; a ``before_agent_start`` handler may replace it for one run.
Every change is written through to the agent's state, which is what the next request reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from caddie.agent.agent import Agent
from caddie.extensions.api import SystemPromptOptions
from caddie.extensions.runner import ExtensionRunner
from caddie.resources.discovery import Resources
from caddie.runtime.system_prompt import ContextFile, PromptFiles, ToolLine, build_system_prompt
from caddie.runtime.tool_selection import ToolSelection
from caddie.tools.base import ToolDefinition


class PromptSources(Protocol):
    """Where the tools and the prompt's other parts come from."""

    @property
    def agent(self) -> Agent: ...

    @property
    def runner(self) -> ExtensionRunner: ...

    @property
    def resources(self) -> Resources: ...

    @property
    def cwd(self) -> str: ...


class ToolsAndPrompt:
    def __init__(
        self,
        sources: PromptSources,
        builtin: dict[str, ToolDefinition],
        *,
        context_files: list[ContextFile],
        custom_prompt: str | None,
        append_prompt: str | None,
        selection: ToolSelection | None = None,
    ) -> None:
        self._sources = sources
        self._builtin = dict(builtin)
        self._active: list[str] = []
        self._context_files = context_files
        self._custom_prompt = custom_prompt
        self._append_prompt = append_prompt
        self._base = ""
        self._override: str | None = None
        self._selection = selection or ToolSelection()
        self._offered: set[str] | None = None
        """Tool names known at the last ``set_active`` / ``activate_new``: a tool registered later is new."""

    def _all(self) -> dict[str, ToolDefinition]:
        """The tools that exist for this session: built-in and extension tools the selection admits
        (``--tools`` allowlist, ``--exclude-tools``)."""
        admits = self._selection.admits
        tools = {name: tool for name, tool in self._builtin.items() if admits(name)}
        for tool in self._sources.runner.tools():
            if admits(tool.name):
                tools[tool.name] = tool
        return tools

    def all(self) -> list[ToolDefinition]:
        return list(self._all().values())

    def active(self) -> list[ToolDefinition]:
        tools = self._all()
        return [tools[n] for n in self._active if n in tools]

    def active_names(self) -> list[str]:
        return list(self._active)

    def set_active(self, names: Sequence[str]) -> None:
        """Exactly these (unknown names are dropped); the prompt is rebuilt."""
        known = self._all()
        self._active = [n for n in dict.fromkeys(names) if n in known]
        self._offered = set(known)
        self.rebuild()

    def activate_new(self, add: bool, *, fresh: bool = False) -> None:
        """Extension tools registered since the last call become active (``add``) when the tool selection
        admits them (a tool switched off with ``set_active`` stays off); names no longer known are dropped.
        ``fresh``: the extensions were loaded again, every extension tool counts as new."""
        offered = set() if fresh or self._offered is None else self._offered
        names = list(self._active)
        if add:
            admits = self._selection.admits
            names += [
                t.name for t in self._sources.runner.tools() if t.name not in offered and admits(t.name)
            ]
        self.set_active(names)

    @property
    def context_files(self) -> list[ContextFile]:
        return list(self._context_files)

    def use_files(self, files: PromptFiles) -> None:
        """The context files and custom/appended prompt read again (``/reload``); the prompt is rebuilt."""
        self._context_files = files.context_files
        self._custom_prompt = files.parts.custom
        self._append_prompt = files.parts.append
        self.rebuild()

    @property
    def system_prompt(self) -> str:
        """What the next request carries (a ``before_agent_start`` override while its run lasts)."""
        return self._override or self._base

    @property
    def base_system_prompt(self) -> str:
        """The system prompt without a ``before_agent_start`` override."""
        return self._base

    def rebuild(self) -> None:
        sources = self._sources
        active = self.active()
        lines = [ToolLine(t.name, t.prompt_snippet, t.prompt_guidelines) for t in active]
        self._base = build_system_prompt(
            cwd=sources.cwd,
            tools=lines,
            context_files=self._context_files,
            custom_prompt=self._custom_prompt,
            append=self._append_prompt,
            skills=sources.resources.skills,
        )
        state = sources.agent.state
        state.system_prompt = self.system_prompt
        state.tools = active

    def prompt_options(self) -> SystemPromptOptions:
        """What the system prompt is built from (Pi's ``systemPromptOptions``), as a copy."""
        active = self.active()
        return SystemPromptOptions(
            cwd=self._sources.cwd,
            custom_prompt=self._custom_prompt,
            append_system_prompt=self._append_prompt,
            selected_tools=[t.name for t in active],
            tool_snippets={t.name: t.prompt_snippet for t in active if t.prompt_snippet},
            prompt_guidelines=[g for t in active for g in (t.prompt_guidelines or [])],
            context_files=[(f.path, f.content) for f in self._context_files],
            skills=[s.name for s in self._sources.resources.skills if not s.disable_model_invocation],
        )

    def override(self, prompt: str) -> None:
        """For the run about to start (a ``before_agent_start`` result)."""
        self._override = prompt
        self._sources.agent.state.system_prompt = prompt

    def end_override(self) -> None:
        self._override = None
        self._sources.agent.state.system_prompt = self._base
