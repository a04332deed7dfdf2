"""Project trust: whether ``.caddie/extensions``, a project's SYSTEM.md and security-sensitive project
settings may be used.

Decisions are remembered per project directory in ``~/.caddie/agent/trust.json``. Interactive mode asks once
(unless settings ``defaultProjectTrust`` is ``always`` or ``never``); headless modes use ``-a``/``--approve``
(``--trust``), a remembered "yes" or ``defaultProjectTrust: "always"``; ``-na``/``--no-approve`` distrusts
for one run.
"""

from __future__ import annotations

import json
from pathlib import Path

from caddie.config.paths import agent_dir


def trust_file() -> Path:
    return agent_dir() / "trust.json"


def _read() -> dict[str, bool]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
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
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(decisions, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def default_trust() -> str:
    """Settings ``defaultProjectTrust`` of the global file (a project cannot trust itself): ``ask`` (the
    terminal UI asks; headless runs do not trust), ``always`` or ``never``."""
    from caddie.config.settings import read_json_object

    data, _ = read_json_object(agent_dir() / "settings.json")
    value = data.get("defaultProjectTrust")
    return value if value in ("always", "never") else "ask"


def project_has_code(cwd: str | Path) -> bool:
    """Whether trusting would change anything: project extensions, skills, prompts, themes, a SYSTEM.md /
    APPEND_SYSTEM.md or a settings file exist (Pi's list)."""
    project = Path(cwd) / ".caddie"
    if (Path(cwd) / ".mcp.json").is_file():
        return True  # MCP servers (Claude Code's project file): programs the bundled mcp extension starts
    if (project / "SYSTEM.md").is_file() or (project / "APPEND_SYSTEM.md").is_file():
        return True  # they replace or extend what the model is told
    for folder in (project / "extensions", project / "skills", project / "prompts", project / "themes"):
        if folder.is_dir() and any(folder.iterdir()):
            return True
    from caddie.resources.discovery import ancestor_agents_skill_dirs
    from caddie.resources.skills import skill_files

    if any(skill_files(d, "agents") for d in ancestor_agents_skill_dirs(str(cwd))):
        return True  # skills can tell the model to do anything
    return (project / "settings.json").is_file()  # Pi's list: any project settings file needs trust
