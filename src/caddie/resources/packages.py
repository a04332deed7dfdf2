"""Packages: Python distributions that bundle caddie extensions, skills, prompt templates and themes.

A package declares what it brings through entry points (``pyproject.toml``)::

    [project.entry-points."caddie.extensions"]
    example = "caddie_example"              # a module with register(api), or "module:function"
    [project.entry-points."caddie.skills"]
    example = "caddie_example:skills"       # the folder skills/ inside the caddie_example package
    [project.entry-points."caddie.prompts"]
    example = "caddie_example:prompts"      # *.md templates in that folder
    [project.entry-points."caddie.themes"]
    example = "caddie_example:themes"       # *.json themes in that folder

Each installed source gets its own virtual environment, made and filled by ``uv`` with the Python caddie
runs on: ``~/.caddie/agent/packages/<name>-<hash>/`` (user scope) or ``<project>/.caddie/packages/…``
(project scope). caddie adds its ``site-packages`` to the end of the import path, so this works however
caddie itself was installed (``uv tool install``, pipx, a checkout), and a package never shadows caddie's
own dependencies. Which packages are active is the settings' ``packages`` list (user, then project).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from caddie.config.paths import agent_dir, project_dir
from caddie.config.settings import read_json_object
from caddie.config.source_info import SourceInfo
from caddie.errors import ConfigurationError

Scope = Literal["user", "project"]
SourceKind = Literal["local", "git", "pypi"]
RESOURCE_TYPES = ("extensions", "skills", "prompts", "themes")
ENTRY_POINT_GROUPS = {kind: f"caddie.{kind}" for kind in RESOURCE_TYPES}
MARKER = "caddie-package.json"
_REQUIREMENT = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[^\]]*\])?\s*(?:[<>=!~;@].*)?$")
_GIT_PROTOCOLS = ("https://", "http://", "ssh://", "git://")

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


class PackageError(ConfigurationError):
    """A package cannot be installed, found or removed; the message is one sentence for the user."""


@dataclass(slots=True)
class PackageSpec:
    source: str
    """As written in settings / on the command line."""
    scope: Scope
    kind: SourceKind
    requirement: str
    """What ``uv pip install`` gets."""
    identity: str
    """Two sources with the same identity are the same package (path, URL without ref, or PyPI name)."""
    pinned: bool = False
    """A PyPI version or a git ref: ``caddie update`` leaves it alone."""
    filters: dict[str, list[str]] = field(default_factory=dict)
    """Per-resource-type filters from the settings object form (``{"source": …, "skills": ["-name"]}``)."""
    enabled: bool = True

    @property
    def label(self) -> str:
        if self.kind == "local":
            return os.path.basename(self.identity.rstrip("/")) or self.identity
        if self.kind == "git":
            return self.identity.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
        return self.identity


def _normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_local(source: str) -> bool:
    return source.startswith(("/", "./", "../", "~", ".\\", "..\\")) or source in (".", "..")


def _split_ref(url: str) -> tuple[str, str | None]:
    """``(url, ref)`` for ``…/repo@v1``; an ``@`` before the path (``git@host``) is not a ref."""
    scheme, sep, rest = url.partition("://")
    body = rest if sep else scheme
    slash = body.find("/")
    at = body.rfind("@")
    if at > slash >= 0:
        base, ref = body[:at], body[at + 1 :]
        return (f"{scheme}://{base}" if sep else base), ref or None
    return url, None


def parse_source(
    source: str, scope: Scope, cwd: str | Path, *, relative_to: str | Path | None = None
) -> PackageSpec:
    """Understand a package source: a local path, a git URL (``git:host/user/repo@ref``, ``https://…``,
    ``ssh://…``) or a PyPI requirement (``name``, ``name==1.2``, ``pypi:name``).

    A relative path is relative to ``relative_to`` (the command line: the current directory), else to the
    folder of the settings file it is written in (``~/.caddie/agent`` or ``<project>/.caddie``)."""
    text = source.strip()
    if not text:
        raise PackageError("the package source is empty: give a PyPI name, a git URL or a local path")
    if text.startswith("git+"):
        text = text[4:]
        if not text.startswith(_GIT_PROTOCOLS):
            text = "git:" + text
    if text.startswith("git:") or text.startswith(_GIT_PROTOCOLS):
        if text.startswith("git:"):
            rest = text[4:]
            if rest.startswith(_GIT_PROTOCOLS):
                url = rest
            elif re.match(r"^[\w.-]+@[\w.-]+:", rest):  # git@github.com:user/repo
                user_host, _, path = rest.partition(":")
                url = f"ssh://{user_host}/{path}"
            else:
                url = f"https://{rest}"
        else:
            url = text
        base, ref = _split_ref(url)
        requirement = f"git+{base}" + (f"@{ref}" if ref else "")
        return PackageSpec(
            source, scope, "git", requirement, base.removesuffix(".git"), pinned=ref is not None
        )
    if text.startswith("file:"):
        text = text[5:]
    if relative_to is not None:
        base_dir = Path(relative_to)
    else:
        base_dir = agent_dir() if scope == "user" else project_dir(cwd)
    candidate = Path(text).expanduser()
    if _is_local(text) or (not text.startswith("pypi:") and (base_dir / candidate).exists()):
        where = (candidate if candidate.is_absolute() else base_dir / candidate).resolve()
        return PackageSpec(source, scope, "local", str(where), str(where))
    name_part = text.removeprefix("pypi:").strip()
    if not _REQUIREMENT.match(name_part):
        raise PackageError(
            f"'{source}' is not a PyPI name, a git URL (git:github.com/user/repo) or a path (./dir)"
        )
    name = re.split(r"[\[<>=!~;@\s]", name_part, maxsplit=1)[0]
    return PackageSpec(source, scope, "pypi", name_part, _normalize_name(name), pinned=name_part != name)


# ==================================================================================================
# Where things are


def packages_root(scope: Scope, cwd: str | Path) -> Path:
    return agent_dir() / "packages" if scope == "user" else project_dir(cwd) / "packages"


def install_dir(spec: PackageSpec, cwd: str | Path) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.label).strip("-")[:40] or "package"
    digest = hashlib.sha1(spec.identity.encode()).hexdigest()[:8]
    return packages_root(spec.scope, cwd) / f"{slug}-{digest}"


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def site_packages(venv: Path) -> Path | None:
    if os.name == "nt":
        candidate = venv / "Lib" / "site-packages"
        return candidate if candidate.is_dir() else None
    found = sorted((venv / "lib").glob("python*/site-packages"))
    return found[0] if found else None


def is_managed_site(path: str | Path | os.PathLike[str]) -> bool:
    """Whether ``path`` is (inside) the site-packages of an environment caddie made for a package."""
    here = Path(path)
    return any((parent / MARKER).is_file() for parent in (here, *here.parents[:4]))


def is_installed(spec: PackageSpec, cwd: str | Path) -> bool:
    where = install_dir(spec, cwd)
    return (where / MARKER).is_file() and site_packages(where) is not None


# ==================================================================================================
# Settings


def settings_path(scope: Scope, cwd: str | Path) -> Path:
    return agent_dir() / "settings.json" if scope == "user" else project_dir(cwd) / "settings.json"


def _entry_spec(entry: Any, scope: Scope, cwd: str | Path) -> PackageSpec | None:
    if isinstance(entry, str):
        return parse_source(entry, scope, cwd)
    if isinstance(entry, dict) and isinstance(entry.get("source"), str):
        spec = parse_source(entry["source"], scope, cwd)
        spec.filters = {
            kind: [p for p in entry[kind] if isinstance(p, str)]
            for kind in RESOURCE_TYPES
            if isinstance(entry.get(kind), list)
        }
        spec.enabled = entry.get("enabled", True) is not False
        return spec
    return None


def configured_packages(cwd: str | Path, *, project_trusted: bool) -> tuple[list[PackageSpec], list[str]]:
    """The settings' packages (project first, so the project's entry wins for the same package), and one
    warning per entry that cannot be understood."""
    out: list[PackageSpec] = []
    warnings: list[str] = []
    seen: set[str] = set()
    scopes: list[Scope] = ["project", "user"] if project_trusted else ["user"]
    for scope in scopes:
        path = settings_path(scope, cwd)
        data, _ = read_json_object(path)
        entries = data.get("packages", [])
        if not isinstance(entries, list):
            warnings.append(f'{path}: "packages" must be a list; ignored')
            continue
        for entry in entries:
            try:
                spec = _entry_spec(entry, scope, cwd)
            except PackageError as e:
                warnings.append(f"{path}: package {entry!r}: {e}")
                continue
            if spec is None:
                warnings.append(f'{path}: package entry {entry!r} needs a "source"; ignored')
                continue
            if spec.identity not in seen:
                seen.add(spec.identity)
                out.append(spec)
    return out, warnings


def settings_source(spec: PackageSpec, cwd: str | Path) -> str:
    """How ``caddie install`` writes a source: local paths absolute for the user, relative to ``.caddie``
    for a project (so the settings file can be shared)."""
    if spec.kind != "local":
        return spec.source
    if spec.scope == "project":
        return os.path.relpath(spec.identity, project_dir(cwd))
    return spec.identity


# ==================================================================================================
# Installing with uv


def find_uv() -> str:
    uv = shutil.which("uv")
    if uv:
        return uv
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]  # the "uv" package from PyPI

        found: str = find_uv_bin()
        return found
    except Exception:
        raise PackageError(
            "installing packages needs uv, which is not on PATH: install it (https://docs.astral.sh/uv/) "
            "and try again"
        ) from None


def _run_uv(args: list[str], run: Runner) -> None:
    try:
        proc = run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise PackageError(f"cannot run uv: {e.strerror or e}") from None
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr or proc.stdout or "").strip().splitlines() if line.strip()]
        detail = " ".join(line.strip() for line in lines[-4:]) or f"uv exited with code {proc.returncode}"
        raise PackageError(detail)


def install(
    spec: PackageSpec, cwd: str | Path, *, upgrade: bool = False, run: Runner = subprocess.run
) -> Path:
    """Install (or with ``upgrade``, update) the package into its own environment; returns that folder.

    A failed first install leaves nothing behind.
    """
    if spec.kind == "local" and not Path(spec.identity).exists():
        raise PackageError(f"no such package folder: {spec.identity}")
    uv = find_uv()
    where = install_dir(spec, cwd)
    fresh = not (where / "pyvenv.cfg").is_file()
    try:
        if fresh:
            where.parent.mkdir(parents=True, exist_ok=True)
            _run_uv([uv, "venv", "--quiet", "--python", sys.executable, str(where)], run)
        args = [uv, "pip", "install", "--quiet", "--python", str(_venv_python(where))]
        if upgrade:
            args += ["--upgrade", "--reinstall"] if spec.kind == "local" else ["--upgrade"]
        _run_uv([*args, spec.requirement], run)
    except PackageError as e:
        if fresh:
            shutil.rmtree(where, ignore_errors=True)
        raise PackageError(f"could not install {spec.source}: {e}") from None
    marker = {"source": spec.source, "identity": spec.identity, "python": sys.version.split()[0]}
    (where / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    return where


def uninstall(spec: PackageSpec, cwd: str | Path) -> bool:
    where = install_dir(spec, cwd)
    if not where.exists():
        return False
    shutil.rmtree(where)
    return True


def distributions(spec: PackageSpec, cwd: str | Path) -> list[importlib.metadata.Distribution]:
    where = site_packages(install_dir(spec, cwd))
    if where is None:
        return []
    return sorted(
        importlib.metadata.distributions(path=[str(where)]), key=lambda d: str(d.metadata["Name"] or "")
    )


# ==================================================================================================
# What an installed package brings


@dataclass(slots=True)
class PackageResource:
    kind: str
    """``extensions``, ``skills``, ``prompts`` or ``themes``."""
    name: str
    """The entry point's name (what a package's ``extensions`` filter names; skills and templates are
    filtered by their own names)."""
    distribution: str
    entry_point: importlib.metadata.EntryPoint
    path: Path | None = None
    """The folder a skills/prompts/themes entry point names (None for extensions)."""
    enabled: bool = True


@dataclass(slots=True)
class InstalledPackage:
    spec: PackageSpec
    site: Path | None
    resources: list[PackageResource] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    directory: str | None = None
    """The folder caddie installed it in (``install_dir``)."""

    @property
    def installed(self) -> bool:
        return self.site is not None

    def source_info(self, path: str) -> SourceInfo:
        """Pi's ``sourceInfo`` of something this package brought (at ``path``): the package's source as
        written in settings, its settings' scope, its folder (a local package's own, else its install folder)."""
        base_dir = self.spec.identity if self.spec.kind == "local" else self.directory
        return SourceInfo(path, self.spec.source, self.spec.scope, "package", base_dir)


def filter_enabled(name: str, patterns: list[str] | None) -> bool:
    """A package's per-type filter: missing = everything; plain names = only those; ``-name`` excludes,
    ``+name`` includes even when the plain names leave it out; ``[]`` = nothing."""
    if patterns is None:
        return True
    plain = [p for p in patterns if not p.startswith(("+", "-"))]
    enabled = name in plain if plain or not patterns else True
    if f"+{name}" in patterns:
        enabled = True
    if f"-{name}" in patterns:
        enabled = False
    return enabled


_ENTRY_POINT_VALUE = re.compile(
    r"^\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*(?::\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\s*)?$"
)
"""``module`` or ``module:attr``, dotted Python names (a value like ``pkg:../../x`` is refused)."""


def entry_point_problem(ep: importlib.metadata.EntryPoint) -> str | None:
    """Why an entry point of a package cannot be used (one line naming it), or None."""
    if _ENTRY_POINT_VALUE.match(ep.value) is None:
        return f"{ep.group} entry point {ep.name} = {ep.value!r} is not module or module:attr; ignored"
    return None


def _entry_point_folder(site_dir: Path, ep: importlib.metadata.EntryPoint) -> Path | None:
    base = site_dir.joinpath(*ep.module.split("."))
    if not base.is_dir():
        if base.with_suffix(".py").is_file():
            base = base.parent
        else:
            return None
    if ep.attr:
        base = base.joinpath(*ep.attr.split("."))
    return base if base.exists() else None


def activate(site_dir: Path) -> None:
    """Make an installed package importable (appended, so caddie's own dependencies win)."""
    text = str(site_dir)
    if text not in sys.path:
        sys.path.append(text)  # not site.addsitedir: a package's .pth files must not run code at start-up
        importlib.invalidate_caches()


def inspect_package(spec: PackageSpec, cwd: str | Path) -> InstalledPackage:
    """What an installed package declares (nothing is imported here)."""
    where = install_dir(spec, cwd)
    site_dir = site_packages(where) if (where / MARKER).is_file() else None
    package = InstalledPackage(spec, site_dir, directory=str(where))
    if site_dir is None:
        return package
    for dist in distributions(spec, cwd):
        dist_name = str(dist.metadata["Name"] or "?")
        for ep in dist.entry_points:
            kind = next((k for k, group in ENTRY_POINT_GROUPS.items() if ep.group == group), None)
            if kind is None:
                continue
            problem = entry_point_problem(ep)
            if problem is not None:  # a warning, never an error: one bad entry must not brick every command
                package.warnings.append(f"package {spec.source}: {problem}")
                continue
            resource = PackageResource(
                kind,
                ep.name,
                dist_name,
                ep,
                enabled=spec.enabled
                and (kind != "extensions" or filter_enabled(ep.name, spec.filters.get(kind))),
            )
            if kind != "extensions":
                resource.path = _entry_point_folder(site_dir, ep)
                if resource.path is None:
                    package.warnings.append(
                        f"package {spec.source}: {ep.group} entry point {ep.name} = {ep.value} names no folder "
                        "inside the package; ignored"
                    )
                    continue
            package.resources.append(resource)
    return package


def load_packages(cwd: str | Path, *, project_trusted: bool) -> tuple[list[InstalledPackage], list[str]]:
    """Every configured package, inspected; installed ones become importable. Warnings name packages that
    are configured but not installed."""
    specs, warnings = configured_packages(cwd, project_trusted=project_trusted)
    if not project_trusted:
        path = settings_path("project", cwd)
        data, _ = read_json_object(path)
        if data.get("packages"):
            warnings.append(
                f"{path}: ignored packages because this project is not trusted (run with --trust to allow it)"
            )
    packages: list[InstalledPackage] = []
    for spec in specs:
        package = inspect_package(spec, cwd)
        if package.site is None:
            warnings.append(
                f"package {spec.source} is in the {spec.scope} settings but not installed: run caddie install "
                f"{'-l ' if spec.scope == 'project' else ''}{spec.source}"
            )
        elif spec.enabled:
            activate(package.site)
        warnings += package.warnings
        packages.append(package)
    return packages, warnings


def missing_project_packages(cwd: str | Path) -> list[str]:
    """The sources of the trusted project's packages that are not installed."""
    specs, _ = configured_packages(cwd, project_trusted=True)
    return [s.source for s in specs if s.scope == "project" and not is_installed(s, cwd)]


def ensure_project_packages(cwd: str | Path, *, run: Runner = subprocess.run) -> tuple[list[str], list[str]]:
    """Install the trusted project's packages that are missing (Pi installs project packages on start-up).

    Returns ``(installed sources, warnings)``; a failure is a warning, never an exception.
    """
    specs, _ = configured_packages(cwd, project_trusted=True)
    warnings: list[str] = []
    installed: list[str] = []
    for spec in specs:
        if spec.scope != "project" or is_installed(spec, cwd):
            continue
        try:
            install(spec, cwd, run=run)
            installed.append(spec.source)
        except PackageError as e:
            warnings.append(f"project package {e}")
    return installed, warnings


def resources_of(
    packages: Iterable[InstalledPackage], kind: str
) -> list[tuple[InstalledPackage, PackageResource]]:
    return [(p, r) for p in packages for r in p.resources if r.kind == kind]
