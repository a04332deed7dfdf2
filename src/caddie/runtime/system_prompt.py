"""The system prompt: role, available tools, guidelines, project instructions (AGENTS.md …), date and cwd.

The text is rebuilt only when the active tools change, and carries the date (not the time), so it stays
byte-identical across the turns of a day and rides in the provider's prompt cache.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from caddie.resources.skills import Skill, format_skills_for_prompt

CONTEXT_FILE_NAMES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")


@dataclass(slots=True)
class ContextFile:
    path: str
    content: str


def load_context_files(cwd: str | Path, agent_dir: Path) -> list[ContextFile]:
    """The global file in ``agent_dir`` first, then one per directory from the filesystem root down to cwd.

    In each directory the first existing of ``CONTEXT_FILE_NAMES`` is used.
    """
    out: list[ContextFile] = []
    seen: set[Path] = set()

    def pick(directory: Path) -> None:
        for name in CONTEXT_FILE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                real = candidate.resolve()
                if real in seen:
                    return
                seen.add(real)
                try:
                    out.append(
                        ContextFile(str(candidate), candidate.read_text(encoding="utf-8", errors="replace"))
                    )
                except OSError:
                    pass
                return

    pick(agent_dir)
    here = Path(cwd).resolve()
    for directory in [*reversed(here.parents), here]:
        pick(directory)
    return out


@dataclass(slots=True)
class PromptParts:
    """The user's own system prompt text: the replacement (``--system-prompt`` or SYSTEM.md) and what is
    appended (``--append-system-prompt`` values or APPEND_SYSTEM.md), with the files they came from."""

    custom: str | None = None
    append: str | None = None
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _prompt_input(value: str, cwd: str, what: str, parts: PromptParts) -> str:
    """Pi's ``resolvePromptInput``: a value naming an existing file stands for the file's contents (a BOM
    dropped); anything else is the text itself."""
    path = Path(value).expanduser()
    path = path if path.is_absolute() else Path(cwd) / path
    try:
        if not path.exists():
            return value
    except (OSError, ValueError):  # a value too long to be a path is text
        return value
    try:
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or e
        parts.warnings.append(f"could not read the {what} file {path} ({reason}); using the text as given")
        return value
    parts.files.append(str(path))
    return text


def _discover(name: str, cwd: str, agent_dir: Path, trusted: bool) -> str | None:
    """``.caddie/NAME`` of a trusted project, else ``NAME`` in the agent folder (Pi's order: one, not both)."""
    for candidate, allowed in ((Path(cwd) / ".caddie" / name, trusted), (agent_dir / name, True)):
        if allowed and candidate.is_file():
            return str(candidate)
    return None


def prompt_parts(
    system_prompt: str | None,
    append: Sequence[str] | None,
    *,
    cwd: str,
    agent_dir: Path,
    project_trusted: bool,
) -> PromptParts:
    """The custom and appended system prompt as Pi builds them: ``--system-prompt`` (text or file) else
    SYSTEM.md; every ``--append-system-prompt`` (text or file, joined by a blank line) else
    APPEND_SYSTEM.md. A project's files count only when the project is trusted."""
    parts = PromptParts()
    source = (
        system_prompt
        if system_prompt is not None
        else _discover("SYSTEM.md", cwd, agent_dir, project_trusted)
    )
    if source:
        parts.custom = _prompt_input(source, cwd, "system prompt", parts) or None
    sources = list(append) if append else []
    if not sources:
        found = _discover("APPEND_SYSTEM.md", cwd, agent_dir, project_trusted)
        sources = [found] if found else []
    texts = [_prompt_input(s, cwd, "append system prompt", parts) for s in sources if s]
    parts.append = "\n\n".join(texts) if texts else None
    return parts


@dataclass(slots=True)
class PromptFiles:
    """What the system prompt reads from files: the context files (AGENTS.md …) and the user's custom and
    appended prompt (SYSTEM.md, APPEND_SYSTEM.md, file arguments). Read at start and again on ``/reload``."""

    context_files: list[ContextFile]
    parts: PromptParts


@dataclass(slots=True)
class ToolLine:
    name: str
    snippet: str | None
    guidelines: Sequence[str] = ()


def build_system_prompt(
    *,
    cwd: str,
    tools: Sequence[ToolLine],
    context_files: Sequence[ContextFile] = (),
    custom_prompt: str | None = None,
    append: str | None = None,
    today: dt.date | None = None,
    skills: Sequence[Skill] = (),
) -> str:
    """Pi's prompt: role, tools, guidelines (or the custom prompt), appended text, project context, the
    skills block (only when ``read`` is active: the model loads a skill with it), date and cwd."""
    day = (today or dt.date.today()).isoformat()
    names = [t.name for t in tools]
    append_section = f"\n\n{append}" if append else ""
    if custom_prompt:
        prompt = custom_prompt + append_section
    else:
        visible = [t for t in tools if t.snippet]
        tool_list = "\n".join(f"- {t.name}: {t.snippet}" for t in visible) if visible else "(none)"
        guidelines: list[str] = []

        def add(line: str) -> None:
            line = line.strip()
            if line and line not in guidelines:
                guidelines.append(line)

        if "bash" in names and not {"grep", "find", "ls"} & set(names):
            add("Use bash for file operations like ls, rg, find")
        for tool in tools:
            for line in tool.guidelines:
                add(line)
        add("Be concise in your responses")
        add("Show file paths clearly when working with files")
        prompt = (
            "You are an expert coding assistant operating inside caddie, a coding agent harness. You help users "
            "by reading files, executing commands, editing code, and writing new files.\n\n"
            f"Available tools:\n{tool_list}\n\n"
            "In addition to the tools above, you may have access to other custom tools depending on the project.\n\n"
            "Guidelines:\n" + "\n".join(f"- {g}" for g in guidelines) + append_section
        )
    if context_files:
        prompt += "\n\n<project_context>\n\nProject-specific instructions and guidelines:\n\n"
        for f in context_files:
            prompt += f'<project_instructions path="{f.path}">\n{f.content}\n</project_instructions>\n\n'
        prompt += "</project_context>\n"
    if "read" in names:
        prompt += format_skills_for_prompt(skills)
    if custom_prompt:  # Pi's custom prompt ends with the directory line and a newline, and has no date
        return prompt + f"\nCurrent working directory: {cwd.replace(chr(92), '/')}\n"
    prompt += f"\nCurrent date: {day}\nCurrent working directory: {cwd.replace(chr(92), '/')}"
    return prompt
