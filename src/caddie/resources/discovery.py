"""Where skills and prompt templates come from, in which order, and which of them are switched off.

Order (the first skill or template of a name wins; a later one of the same name is skipped with a warning):

1. ``--skill PATH`` / ``--prompt-template PATH`` (always, even with ``--no-skills`` / ``--no-prompt-templates``);
2. installed packages (project packages first);
3. the ``skills`` / ``prompts`` lists in settings (files or folders; project first);
4. the project — only when it is trusted: ``.caddie/skills/``, ``.agents/skills/`` in the current directory
   and each parent up to the git root, ``.caddie/prompts/``;
5. the user: ``~/.caddie/agent/skills/``, ``~/.agents/skills/``, ``~/.caddie/agent/prompts/``;
6. folders extensions add through the ``resources_discover`` event.

Entries in the settings lists that start with ``-`` (off), ``+`` (on) or ``!`` (off, a glob) switch
discovered resources of that scope off or on, as in Pi: ``"skills": ["-skills/old-skill"]`` — paths are
relative to the settings file's folder, or absolute. ``caddie config`` writes these for you.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from caddie.config.paths import agent_dir, project_dir
from caddie.config.settings import read_json_object
from caddie.config.source_info import SourceInfo, resource_source
from caddie.resources.packages import InstalledPackage, filter_enabled
from caddie.resources.prompts import PromptTemplate, load_template_file, template_files
from caddie.resources.skills import Skill, WalkMode, load_skill_file, skill_files

ItemKind = str
"""``skill``, ``prompt``, ``extension``, ``package``, or a kind an extension lists (``mcp``)."""
ItemScope = Literal["user", "project", "cli", "package", "extension", "bundled", "settings"]
OVERRIDE_PREFIXES = ("!", "+", "-")


def agents_home() -> Path:
    """``~/.agents`` (the cross-harness skills folder); ``CADDIE_AGENTS_DIR`` moves it (tests)."""
    env = os.environ.get("CADDIE_AGENTS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".agents"


@dataclass(slots=True)
class ResourceItem:
    """One discovered resource, on or off — what ``caddie config`` lists and toggles."""

    kind: ItemKind
    name: str
    path: str
    scope: ItemScope
    source: str
    """For people: ``user``, ``project``, ``cli``, ``settings``, ``package <source>``, ``extension <name>``."""
    enabled: bool = True
    base_dir: str | None = None
    """The folder override patterns for this item are relative to (auto-discovered items only)."""
    package: str | None = None
    """The package source, for resources that come from a package."""
    description: str = ""
    settings_scope: Literal["user", "project"] | None = None
    """The settings file that switches this item on or off (None: it cannot be switched, e.g. ``--skill``)."""
    resource_type: str | None = None
    """For package contents: ``extensions``, ``skills``, ``prompts`` or ``themes``."""
    switch_key: str | None = None
    """Items an extension lists: the settings list of names switched off (``disabledMcpServers``)."""
    on_switch: Callable[[bool], Any] | None = None
    """Items an extension lists: applies a switch in the running session (``/settings``)."""

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass(slots=True)
class Resources:
    skills: list[Skill] = field(default_factory=list)
    prompts: list[PromptTemplate] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    items: list[ResourceItem] = field(default_factory=list)
    theme_paths: list[ExtraPath] = field(default_factory=list)
    """Theme files or folders extensions returned from ``resources_discover`` (the interactive UI loads them;
    relative paths are from the working directory)."""


@dataclass(slots=True)
class ExtraPath:
    """A path an extension added through ``resources_discover``."""

    path: str
    extension: str
    base_dir: str | None = None
    """The extension's folder (None for one that has no file: bundled, from a package)."""


@dataclass
class DiscoveryRequest:
    cwd: str
    project_trusted: bool = False
    skill_paths: Sequence[str] = ()
    no_skills: bool = False
    prompt_paths: Sequence[str] = ()
    no_prompt_templates: bool = False
    packages: Sequence[InstalledPackage] = ()
    extension_skill_paths: Sequence[ExtraPath] = ()
    extension_prompt_paths: Sequence[ExtraPath] = ()


# ==================================================================================================
# Override patterns


def _posix(path: str) -> str:
    return path.replace(os.sep, "/")


def _targets(path: str, base_dir: str) -> list[str]:
    """The strings a pattern may name this resource by: relative to the base, absolute; for a
    ``SKILL.md``, its folder too."""
    paths = [path]
    if os.path.basename(path) == "SKILL.md":
        paths.append(os.path.dirname(path))
    out = []
    for p in paths:
        out.append(_posix(os.path.relpath(p, base_dir)))
        out.append(_posix(p))
    return out


def _normalize_pattern(pattern: str, base_dir: str) -> list[str]:
    text = pattern.strip().rstrip("/")
    text = text.removeprefix("./")
    expanded = os.path.expanduser(text)
    out = [_posix(text)]
    if os.path.isabs(expanded):
        out.append(_posix(os.path.normpath(expanded)))
    else:
        out.append(_posix(os.path.normpath(os.path.join(base_dir, expanded))))
    return out


def is_enabled(path: str, entries: Iterable[str], base_dir: str) -> bool:
    """Pi's rules: ``!glob`` switches off, ``+path`` switches back on, ``-path`` switches off (wins)."""
    overrides = [e for e in entries if e.startswith(OVERRIDE_PREFIXES)]
    if not overrides:
        return True
    targets = _targets(path, base_dir)

    def exact(pattern: str) -> bool:
        wanted = _normalize_pattern(pattern, base_dir)
        return any(t in wanted for t in targets)

    enabled = True
    if any(any(fnmatch.fnmatch(t, e[1:]) for t in targets) for e in overrides if e.startswith("!")):
        enabled = False
    if any(exact(e[1:]) for e in overrides if e.startswith("+")):
        enabled = True
    if any(exact(e[1:]) for e in overrides if e.startswith("-")):
        enabled = False
    return enabled


def plain_entries(entries: Iterable[str]) -> list[str]:
    return [e for e in entries if not e.startswith(OVERRIDE_PREFIXES)]


# ==================================================================================================
# Settings lists


@dataclass(slots=True)
class _ScopeSettings:
    scope: Literal["user", "project"]
    base_dir: str
    skills: list[str]
    prompts: list[str]


def scope_lists(
    cwd: str, project_trusted: bool, key: str
) -> list[tuple[Literal["user", "project"], str, list[str]]]:
    """``(scope, settings folder, entries)`` of one list key, read from each settings file separately."""
    out: list[tuple[Literal["user", "project"], str, list[str]]] = []
    if project_trusted:
        data, _ = read_json_object(project_dir(cwd) / "settings.json")
        out.append(("project", str(project_dir(cwd)), _string_list(data, key)))
    data, _ = read_json_object(agent_dir() / "settings.json")
    out.append(("user", str(agent_dir()), _string_list(data, key)))
    return out


def _string_list(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def scope_settings(cwd: str, project_trusted: bool) -> list[_ScopeSettings]:
    """Project (when trusted) then user: their ``skills`` and ``prompts`` lists, read from each file."""
    out = []
    if project_trusted:
        data, _ = read_json_object(project_dir(cwd) / "settings.json")
        out.append(
            _ScopeSettings(
                "project", str(project_dir(cwd)), _string_list(data, "skills"), _string_list(data, "prompts")
            )
        )
    data, _ = read_json_object(agent_dir() / "settings.json")
    out.append(
        _ScopeSettings("user", str(agent_dir()), _string_list(data, "skills"), _string_list(data, "prompts"))
    )
    return out


def _resolve(entry: str, base_dir: str) -> str:
    expanded = os.path.expanduser(entry.strip())
    return os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(base_dir, expanded))


def find_git_root(start: str) -> str | None:
    here = os.path.abspath(start)
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def ancestor_agents_skill_dirs(cwd: str) -> list[str]:
    """``.agents/skills`` in ``cwd`` and each parent up to the git root — or, without one, up to your home
    folder — never from a folder you do not own or that others may write to (``/tmp``): another user's
    ``/tmp/.agents`` must not reach a trusted project's prompt (docs/skills.md)."""
    root = find_git_root(cwd)
    home = os.path.abspath(os.path.expanduser("~"))
    here = os.path.abspath(cwd)
    out = []
    while _yours_alone(here):
        out.append(os.path.join(here, ".agents", "skills"))
        if here in (root, home):
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return out


def _yours_alone(directory: str) -> bool:
    """Owned by the user caddie runs as and writable by nobody else."""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


# ==================================================================================================
# Discovery


@dataclass(slots=True)
class _Candidate:
    path: str
    scope: ItemScope
    source: str
    enabled: bool = True
    base_dir: str | None = None
    package: str | None = None
    settings_scope: Literal["user", "project"] | None = None
    filters: list[str] | None = None
    """The package's filter list for this resource type (names), when it comes from a package."""
    info: SourceInfo | None = None
    """Pi's ``sourceInfo`` for it."""


def _path_files(path: str, kind: Literal["skill", "prompt"], warnings: list[str], what: str) -> list[str]:
    if not os.path.exists(path):
        warnings.append(f"{what} path {path} does not exist")
        return []
    if os.path.isdir(path):
        return _files_in(path, kind)
    if path.endswith(".md"):
        return [path]
    warnings.append(f"{what} path {path} is not a Markdown (.md) file or a folder")
    return []


def _files_in(
    directory: str | Path, kind: Literal["skill", "prompt"], mode: WalkMode = "caddie"
) -> list[str]:
    return skill_files(directory, mode) if kind == "skill" else template_files(directory)


def _standard_dirs(
    req: DiscoveryRequest, s: _ScopeSettings, kind: Literal["skill", "prompt"]
) -> list[tuple[str, WalkMode, str]]:
    """(folder, walk mode, base folder) a scope's skills or prompt templates are found in without settings."""
    if kind == "prompt":
        return [(os.path.join(s.base_dir, "prompts"), "caddie", s.base_dir)]
    user_agents = os.path.join(str(agents_home()), "skills")
    dirs: list[tuple[str, WalkMode, str]] = [(os.path.join(s.base_dir, "skills"), "caddie", s.base_dir)]
    if s.scope == "project":
        dirs += [
            (d, "agents", os.path.dirname(d))
            for d in ancestor_agents_skill_dirs(req.cwd)
            if os.path.abspath(d) != os.path.abspath(user_agents)
        ]
    else:
        dirs.append((user_agents, "agents", os.path.dirname(user_agents)))
    return dirs


def _candidates(
    req: DiscoveryRequest, kind: Literal["skill", "prompt"], warnings: list[str]
) -> list[_Candidate]:
    """Every skill or prompt template file, in precedence order: CLI paths, packages, settings entries, the
    scopes' standard folders, then extensions' paths."""
    skill = kind == "skill"
    what = "skill" if skill else "prompt template"
    out: list[_Candidate] = []
    for raw in req.skill_paths if skill else req.prompt_paths:
        for f in _path_files(_resolve(raw, req.cwd), kind, warnings, what):
            out.append(_Candidate(f, "cli", "cli", info=resource_source(f)))
    if not (req.no_skills if skill else req.no_prompt_templates):
        resource_kind = "skills" if skill else "prompts"
        for package in req.packages:
            for resource in package.resources:
                if resource.kind == resource_kind and resource.path is not None:
                    for f in _files_in(resource.path, kind):
                        out.append(
                            _Candidate(
                                f,
                                "package",
                                f"package {package.spec.source}",
                                resource.enabled,
                                package=package.spec.source,
                                settings_scope=package.spec.scope,
                                filters=package.spec.filters.get(resource_kind),
                                info=package.source_info(f),
                            )
                        )
        scopes = scope_settings(req.cwd, req.project_trusted)
        for s in scopes:
            entries = s.skills if skill else s.prompts
            for entry in plain_entries(entries):
                for f in _path_files(_resolve(entry, s.base_dir), kind, warnings, what):
                    enabled = is_enabled(f, entries, s.base_dir)
                    out.append(
                        _Candidate(f, "settings", f"{s.scope} settings", enabled, s.base_dir, None, s.scope)
                    )
                    out[-1].info = SourceInfo(f, "local", s.scope)
        for s in scopes:
            entries = s.skills if skill else s.prompts
            for directory, mode, base in _standard_dirs(req, s, kind):
                for f in _files_in(directory, kind, mode):
                    out.append(
                        _Candidate(f, s.scope, s.scope, is_enabled(f, entries, base), base, None, s.scope)
                    )
                    out[-1].info = SourceInfo(f, "auto", s.scope, base_dir=base)
    for extra in req.extension_skill_paths if skill else req.extension_prompt_paths:
        for f in _path_files(_resolve(extra.path, req.cwd), kind, warnings, what):
            info = SourceInfo(f, f"extension:{extra.extension}", base_dir=extra.base_dir)
            out.append(_Candidate(f, "extension", f"extension {extra.extension}", info=info))
    return out


def discover(req: DiscoveryRequest) -> Resources:
    result = Resources()
    warnings = result.warnings
    seen_files: set[str] = set()
    by_name: dict[str, Skill] = {}
    for c in _candidates(req, "skill", warnings):
        real = os.path.realpath(c.path)
        if real in seen_files:
            continue  # the same file reached twice (a link, or listed in two places)
        loaded = load_skill_file(c.path, c.source)
        warnings.extend(loaded.warnings)
        skill = loaded.skill
        if skill is None:
            continue
        skill.source_info = c.info
        seen_files.add(real)
        if c.package is not None:
            c.enabled = c.enabled and filter_enabled(skill.name, c.filters)
        item = ResourceItem(
            "skill",
            skill.name,
            c.path,
            c.scope,
            c.source,
            c.enabled,
            c.base_dir,
            c.package,
            skill.description,
            c.settings_scope,
            "skills" if c.package else None,
        )
        result.items.append(item)
        if not c.enabled:
            continue
        winner = by_name.get(skill.name)
        if winner is not None:
            warnings.append(
                f'skill "{skill.name}" at {skill.file_path} is ignored: {winner.file_path} has the same name'
            )
            continue
        by_name[skill.name] = skill
        result.skills.append(skill)

    seen_files.clear()
    templates: dict[str, PromptTemplate] = {}
    for c in _candidates(req, "prompt", warnings):
        real = os.path.realpath(c.path)
        if real in seen_files:
            continue
        template, warning = load_template_file(c.path, c.source)
        if warning:
            warnings.append(warning)
        if template is None:
            continue
        template.source_info = c.info
        seen_files.add(real)
        if c.package is not None:
            c.enabled = c.enabled and filter_enabled(template.name, c.filters)
        result.items.append(
            ResourceItem(
                "prompt",
                template.name,
                c.path,
                c.scope,
                c.source,
                c.enabled,
                c.base_dir,
                c.package,
                template.description,
                c.settings_scope,
                "prompts" if c.package else None,
            )
        )
        if not c.enabled:
            continue
        first = templates.get(template.name)
        if first is not None:
            warnings.append(
                f'prompt template "/{template.name}" at {template.file_path} is ignored: {first.file_path} has '
                "the same name"
            )
            continue
        templates[template.name] = template
        result.prompts.append(template)
    return result
