"""Project trust: whether ``.caddie/extensions`` and security-sensitive project settings may be used.

Decisions are remembered per project directory in ``~/.caddie/agent/trust.json``. Interactive mode asks once;
headless modes use ``--trust`` (or a remembered "yes").
"""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.config.settings import SENSITIVE_PROJECT_KEYS


def _trust_file() -> Path:
    return agent_dir() / "trust.json"


def _read() -> dict[str, bool]:
    try:
        data = json.loads(_trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bool)}
        if isinstance(data, dict)
        else {}
    )


def remembered_trust(cwd: str | Path) -> bool | None:
    """True/False if the user decided for this project (or a parent of it), None if never asked."""
    decisions = _read()
    here = Path(cwd).resolve()
    for directory in (here, *here.parents):
        if str(directory) in decisions:
            return decisions[str(directory)]
    return None


def remember_trust(cwd: str | Path, trusted: bool) -> None:
    decisions = _read()
    decisions[str(Path(cwd).resolve())] = trusted
    path = _trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(decisions, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def project_has_code(cwd: str | Path) -> bool:
    """Whether trusting would change anything: project extensions or sensitive settings exist."""
    project = Path(cwd) / ".caddie"
    if (Path(cwd) / ".mcp.json").is_file():
        return True  # MCP servers (Claude Code's project file): programs the bundled mcp extension starts
    for folder in (project / "extensions", project / "skills", project / "prompts"):
        if folder.is_dir() and any(folder.iterdir()):
            return True
    from caddie.resources.discovery import ancestor_agents_skill_dirs
    from caddie.resources.skills import skill_files

    if any(skill_files(d, "agents") for d in ancestor_agents_skill_dirs(str(cwd))):
        return True  # skills can tell the model to do anything
    try:
        data = json.loads((project / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and any(
        k in data for k in (*SENSITIVE_PROJECT_KEYS, "skills", "prompts", "packages")
    )
