"""Agent Skills (https://agentskills.io/specification), lenient like Pi: violations warn, the skill loads.

A skill is a folder with a ``SKILL.md`` (YAML frontmatter with ``name`` and ``description``, then Markdown
instructions). Only name, description and location go into the system prompt; the model reads the file
itself with the ``read`` tool when a task matches. ``/skill:name args`` puts the whole file in the prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from caddie.config.source_info import SourceInfo
from caddie.errors import ConfigurationError
from caddie.resources.frontmatter import FrontmatterError, parse_frontmatter, strip_frontmatter

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 1024
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})

WalkMode = Literal["caddie", "agents"]
"""``caddie``: ``.md`` files directly in the root are skills too (``~/.caddie/agent/skills``, explicit
folders); ``agents``: root ``.md`` files are ignored but ``.md`` files in grouping folders count
(``~/.agents/skills``, ``.agents/skills``)."""


@dataclass(slots=True)
class Skill:
    name: str
    description: str
    file_path: str
    base_dir: str
    source: str = "path"
    """Where it was found: ``user``, ``project``, ``cli``, ``settings``, ``package <source>``, ``extension <name>``."""
    disable_model_invocation: bool = False
    source_info: SourceInfo | None = None
    """Pi's ``sourceInfo``, decided by discovery (None: a file loaded on its own)."""


@dataclass(slots=True)
class SkillLoad:
    skill: Skill | None = None
    warnings: list[str] = field(default_factory=list)


def validate_name(name: str) -> list[str]:
    errors = []
    if len(name) > MAX_NAME_LENGTH:
        errors.append(f"name exceeds {MAX_NAME_LENGTH} characters ({len(name)})")
    if not name or any(not (c.isascii() and (c.islower() or c.isdigit() or c == "-")) for c in name):
        errors.append("name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)")
    if name.startswith("-") or name.endswith("-"):
        errors.append("name must not start or end with a hyphen")
    if "--" in name:
        errors.append("name must not contain consecutive hyphens")
    return errors


def load_skill_file(path: str | Path, source: str = "path") -> SkillLoad:
    """One skill file. A ``SKILL.md`` without a description warns and is skipped; another ``.md`` file
    without skill frontmatter is not a skill and is skipped silently."""
    file_path = str(path)
    declared = os.path.basename(file_path) == "SKILL.md"
    try:
        with open(file_path, encoding="utf-8") as f:
            raw = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else "it is not UTF-8 text"
        return SkillLoad(None, [f"skill {file_path} could not be read ({reason}); skipped"])
    try:
        front, _body = parse_frontmatter(raw)
    except FrontmatterError as e:
        return SkillLoad(None, [f"skill {file_path}: {e}; skipped"] if declared else [])
    description = front.get("description")
    has_description = isinstance(description, str) and description.strip() != ""
    if not declared and not has_description:
        return SkillLoad()
    warnings: list[str] = []
    skill_dir = os.path.dirname(file_path)
    raw_name = front.get("name")
    name = raw_name if isinstance(raw_name, str) and raw_name else os.path.basename(skill_dir)
    if not has_description:
        return SkillLoad(None, [f"skill {file_path} has no description in its frontmatter; skipped"])
    assert isinstance(description, str)
    if len(description) > MAX_DESCRIPTION_LENGTH:
        warnings.append(
            f"skill {file_path}: description exceeds {MAX_DESCRIPTION_LENGTH} characters ({len(description)})"
        )
    warnings += [f"skill {file_path}: {error}" for error in validate_name(name)]
    skill = Skill(
        name=name,
        description=description,
        file_path=file_path,
        base_dir=skill_dir,
        source=source,
        disable_model_invocation=front.get("disable-model-invocation") is True,
    )
    return SkillLoad(skill, warnings)


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _kind(entry: os.DirEntry[str]) -> tuple[bool, bool]:
    """``(is_dir, is_file)`` following symlinks; a broken link is neither."""
    try:
        return entry.is_dir(), entry.is_file()
    except OSError:
        return False, False


MAX_WALK_DEPTH = 12
"""How deep below a skills folder skills are looked for."""
MAX_WALK_FOLDERS = 5000
"""How many folders one skills folder's walk visits at most."""


def skill_files(directory: str | Path, mode: WalkMode = "caddie") -> list[str]:
    """The candidate skill files under ``directory``, sorted: a folder with ``SKILL.md`` is one skill (not
    searched further); other folders are searched recursively; hidden entries and ``node_modules`` are
    skipped. Symlinks are followed, but each real folder is visited once (``ln -s . a`` cannot loop) and the
    walk is bounded (``MAX_WALK_DEPTH`` levels, ``MAX_WALK_FOLDERS`` folders)."""
    root = str(directory)
    out: list[str] = []
    seen: set[tuple[int, int]] = set()

    def first_visit(path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        key = (st.st_dev, st.st_ino)
        if key in seen or len(seen) >= MAX_WALK_FOLDERS:
            return False
        seen.add(key)
        return True

    def walk(current: str, depth: int) -> None:
        entries = _entries(current)
        for entry in entries:
            if entry.name == "SKILL.md" and _kind(entry)[1]:
                out.append(entry.path)
                return
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            is_dir, is_file = _kind(entry)
            if is_dir:
                if depth < MAX_WALK_DEPTH and first_visit(entry.path):
                    walk(entry.path, depth + 1)
            elif (
                is_file
                and entry.name.endswith(".md")
                and ((mode == "caddie" and current == root) or (mode == "agents" and current != root))
            ):
                out.append(entry.path)

    if os.path.isdir(root) and first_visit(root):
        walk(root, 0)
    return out


def format_skills_for_prompt(skills: Iterable[Skill]) -> str:
    """The ``<available_skills>`` block Pi appends to the system prompt (empty when no skill is visible)."""
    visible = [s for s in skills if not s.disable_model_invocation]
    if not visible:
        return ""
    lines = [
        "\n\nThe following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory (parent of "
        "SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in visible:
        lines += [
            "  <skill>",
            f"    <name>{escape_xml(skill.name)}</name>",
            f"    <description>{escape_xml(skill.description)}</description>",
            f"    <location>{escape_xml(skill.file_path)}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


def escape_xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


class SkillExpansionError(ConfigurationError):
    """The skill's file could not be read at the moment it was invoked."""


def expand_skill_command(text: str, skills: Iterable[Skill]) -> str:
    """``/skill:name args`` → Pi's ``<skill name=… location=…>`` message; other text unchanged.

    An unknown skill name leaves the text as it is (it goes to the model as typed, as in Pi). Raises
    ``SkillExpansionError`` when the skill's file cannot be read any more.
    """
    if not text.startswith("/skill:"):
        return text
    space = text.find(" ")
    name = text[7:] if space == -1 else text[7:space]
    args = "" if space == -1 else text[space + 1 :].strip()
    skill = next((s for s in skills if s.name == name), None)
    if skill is None:
        return text
    try:
        with open(skill.file_path, encoding="utf-8") as f:
            content = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SkillExpansionError(f"Cannot read the skill file {skill.file_path}: {reason}") from None
    body = strip_frontmatter(content).strip()
    block = (
        f'<skill name="{skill.name}" location="{skill.file_path}">\n'
        f"References are relative to {skill.base_dir}.\n\n{body}\n</skill>"
    )
    return f"{block}\n\n{args}" if args else block
