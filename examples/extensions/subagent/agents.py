"""Finding subagent definitions: Markdown files with a ``name``, a ``description`` and optionally ``tools``
and ``model`` in their front matter; the body is the agent's system prompt."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

AgentScope = Literal["user", "project", "both"]


@dataclass
class AgentConfig:
    name: str
    description: str
    system_prompt: str
    source: Literal["user", "project"]
    file_path: str
    tools: list[str] = field(default_factory=list)
    model: str | None = None


def parse_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``key: value`` lines between ``---`` fences, and the body after them."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            pairs = (line.split(":", 1) for line in lines[1:end] if ":" in line)
            meta = {key.strip(): value.strip().strip("\"'") for key, value in pairs}
            return meta, "\n".join(lines[end + 1 :]).strip()
    return {}, text


def parse_tools(value: str) -> list[str]:
    """``read, bash`` or ``[read, bash]``."""
    return [t.strip().strip("\"'") for t in value.strip().strip("[]").split(",") if t.strip()]


def load_agents(directory: Path, source: Literal["user", "project"]) -> list[AgentConfig]:
    if not directory.is_dir():
        return []
    agents = []
    for path in sorted(directory.glob("*.md")):
        try:
            meta, body = parse_front_matter(path.read_text(encoding="utf-8"))
        except OSError:
            continue
        if not meta.get("name") or not meta.get("description"):
            continue  # not an agent definition
        agents.append(
            AgentConfig(
                meta["name"],
                meta["description"],
                body,
                source,
                str(path),
                parse_tools(meta.get("tools", "")),
                meta.get("model") or None,
            )
        )
    return agents


def nearest_project_agents_dir(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        candidate = directory / ".caddie" / "agents"
        if candidate.is_dir():
            return candidate
    return None


def discover_agents(agent_dir: Path, cwd: Path, scope: AgentScope) -> tuple[list[AgentConfig], Path | None]:
    """The agents in scope (a project agent replaces a user agent of the same name) and the project's
    agents folder, if there is one."""
    project_dir = nearest_project_agents_dir(cwd)
    found: dict[str, AgentConfig] = {}
    if scope in ("user", "both"):
        found.update((a.name, a) for a in load_agents(agent_dir / "agents", "user"))
    if scope in ("project", "both") and project_dir is not None:
        found.update((a.name, a) for a in load_agents(project_dir, "project"))
    return list(found.values()), project_dir
