"""Finding and loading extensions.

Sources, in load order (as Pi: command line first, then project, then user, then packages):
1. ``-e PATH`` (repeatable): a ``.py`` file or a package directory;
2. ``<cwd>/.caddie/extensions/`` — only when the project is trusted;
3. ``~/.caddie/agent/extensions/``: ``*.py`` files and ``*/__init__.py`` packages (one level deep);
4. paths listed in settings ``"extensions"``;
5. packages installed with ``caddie install`` (their ``caddie.extensions`` entry points), then other installed
   distributions exposing the ``caddie.extensions`` entry-point group;
6. the bundled extensions (``mulligan``, ``goal``) unless disabled in settings ``"disabledExtensions"``.

``--no-extensions`` skips 2–5 (``-e`` and bundled ones still load). A module must define
``register(api)``. A load error (missing file, an exception on import, no ``register``) is collected as one
clear line and the other extensions still load: a broken extension never takes the agent down.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from caddie.config.pi_folders import PI_EXTENSION_SUFFIXES
from caddie.config.source_info import SourceInfo, SourceScope
from caddie.errors import ExtensionError
from caddie.extensions.api import EventBus, ExtensionAPI
from caddie.extensions.runner import Extension, ExtensionExit, call_handler
from caddie.resources.discovery import plain_entries
from caddie.resources.packages import InstalledPackage, is_managed_site

BUNDLED = ("mulligan", "goal", "mcp")
"""The packages under ``caddie.extensions.bundled``, in load order (a test checks none is missing)."""
ENTRY_POINT_GROUP = "caddie.extensions"


@dataclass(slots=True)
class ExtensionSource:
    """Where an extension comes from: a file/package path, an entry point, or a bundled module."""

    path: str
    name: str
    load: Callable[[], ModuleType]
    label: str = ""
    """How errors name it (default ``extension <path>``); packages say which package failed."""
    source_info: SourceInfo | None = None
    """Pi's ``sourceInfo`` for it (None: decided from ``path``)."""


@dataclass(slots=True)
class LoadResult:
    extensions: list[Extension] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """One line per extension that could not be loaded."""
    events: EventBus = field(default_factory=EventBus)


class PiExtensionFile(ExtensionError):
    """A Pi (TypeScript or JavaScript) extension file where a Python one was expected."""


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem if path.name != "__init__.py") or "pkg"
    return f"caddie_ext_{stem}_{digest}"


def _file_loader(path: Path) -> Callable[[], ModuleType]:
    def load() -> ModuleType:
        target = path / "__init__.py" if path.is_dir() else path
        if not target.is_file():
            raise FileNotFoundError(f"no such extension file: {target}")
        if target.suffix in PI_EXTENSION_SUFFIXES:
            raise PiExtensionFile(
                "a TypeScript or JavaScript extension is Pi's; caddie runs Python extensions (a file or folder "
                "with register(api)): docs/extensions.md lists Python twins of Pi's examples"
            )
        name = _module_name(path.resolve())
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]  # /reload: re-import the package's own submodules too
        locations = [str(target.parent)] if target.name == "__init__.py" else None
        spec = importlib.util.spec_from_file_location(name, target, submodule_search_locations=locations)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {target}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module

    return load


def path_source(path: str | Path, cwd: str | Path) -> ExtensionSource:
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = Path(cwd) / p
    p = Path(os.path.normpath(p))  # a settings entry's ``../`` (Pi's paths are normalized too)
    name = p.name if p.is_dir() or p.name != "__init__.py" else p.parent.name
    return ExtensionSource(str(p), name.removesuffix(".py"), _file_loader(p))


def discover_dir(directory: Path) -> list[Path]:
    """``*.py`` files and ``*/__init__.py`` packages directly inside ``directory``, sorted by name."""
    if not directory.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(directory.iterdir()):
        if child.name.startswith((".", "_")):
            continue
        if (child.is_file() and child.suffix == ".py") or (
            child.is_dir() and (child / "__init__.py").is_file()
        ):
            found.append(child)
    return found


def entry_point_sources() -> list[ExtensionSource]:
    out: list[ExtensionSource] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.dist is not None and is_managed_site(str(ep.dist.locate_file(""))):
            continue  # a package caddie installed: loaded (or not) through package_sources
        path = f"entry-point:{ep.name} ({ep.value})"
        installed = SourceInfo(path, "entry-point", "user", "package")  # in caddie's own environment
        out.append(ExtensionSource(path, ep.name, partial(_load_entry_point, ep), source_info=installed))
    return out


def package_sources(packages: Iterable[InstalledPackage]) -> list[ExtensionSource]:
    """The enabled extensions of installed packages (``caddie install``), named after their package."""
    out: list[ExtensionSource] = []
    for package in packages:
        if package.site is None:
            continue
        for resource in package.resources:
            if resource.kind != "extensions" or not resource.enabled:
                continue
            ep = resource.entry_point
            out.append(
                ExtensionSource(
                    f"package:{package.spec.source}#{ep.name}",
                    ep.name,
                    partial(_load_entry_point, ep),
                    f"package {resource.distribution} ({package.spec.source}): extension {ep.name}",
                    package.source_info(f"package:{package.spec.source}#{ep.name}"),
                )
            )
    return out


def _load_entry_point(ep: importlib.metadata.EntryPoint) -> ModuleType:
    obj = ep.load()
    if isinstance(obj, ModuleType):
        return obj
    module = ModuleType(f"caddie_ep_{ep.name}")
    module.register = obj  # type: ignore[attr-defined]
    return module


def bundled_sources(disabled: Iterable[str] = ()) -> list[ExtensionSource]:
    skip = set(disabled)
    out = []
    for name in BUNDLED:
        if name in skip:
            continue
        module = f"caddie.extensions.bundled.{name}"
        if importlib.util.find_spec(module) is None:
            continue
        out.append(ExtensionSource(f"bundled:{name}", name, partial(importlib.import_module, module)))
    return out


def collect_sources(
    cwd: str | Path,
    *,
    cli_paths: Iterable[str] = (),
    agent_dir: Path,
    settings_paths: Iterable[str] = (),
    project_trusted: bool = False,
    no_extensions: bool = False,
    disabled: Iterable[str] = (),
    packages: Iterable[ExtensionSource] = (),
    settings_lists: Sequence[tuple[str, str, list[str]]] = (),
) -> list[ExtensionSource]:
    """``settings_lists``: ``(scope, settings folder, entries)`` of each settings file's ``extensions`` list,
    project first: both files' entries load, as in Pi (relative ones from their file's folder);
    ``settings_paths``: paths from merged settings (the SDK's in-memory ones), user scope."""
    sources = [_with_info(path_source(p, cwd), "cli", "temporary") for p in cli_paths]
    if not no_extensions:
        if project_trusted:
            project = Path(cwd) / ".caddie"
            found = discover_dir(project / "extensions")
            sources += [_with_info(path_source(p, cwd), "auto", "project", str(project)) for p in found]
        sources += [
            _with_info(path_source(p, cwd), "auto", "user", str(agent_dir))
            for p in discover_dir(agent_dir / "extensions")
        ]
        for scope, folder, entries in settings_lists:
            listed: SourceScope = "project" if scope == "project" else "user"
            sources += [_with_info(path_source(p, folder), "local", listed) for p in plain_entries(entries)]
        sources += [_with_info(path_source(p, cwd), "local", "user") for p in settings_paths]
        sources += list(packages)
        sources += entry_point_sources()
    sources += bundled_sources(disabled)
    seen: set[str] = set()
    unique = []
    for s in sources:
        key = (
            str(Path(s.path).resolve())
            if not s.path.startswith(("bundled:", "entry-point:", "package:"))
            else s.path
        )
        if key not in seen:
            seen.add(key)
            unique.append(s)
    return unique


def _with_info(
    source: ExtensionSource, kind: str, scope: SourceScope, base_dir: str | None = None
) -> ExtensionSource:
    source.source_info = SourceInfo(source.path, kind, scope, "top-level", base_dir)
    return source


async def load_extensions(sources: list[ExtensionSource]) -> LoadResult:
    """Import each source and run its ``register(api)``; failures become error lines, never exceptions."""
    result = LoadResult()
    for source in sources:
        extension = Extension(source.path, source.name)
        if source.source_info is not None:
            extension.source_info = source.source_info
        api = ExtensionAPI(extension, result.events)
        extension.api = api
        try:
            module = source.load()
            register: Any = getattr(module, "register", None)
            if not callable(register):
                raise AttributeError("it defines no register(api) function")
            await call_handler(register, api)
        except (FileNotFoundError, PiExtensionFile) as e:
            result.errors.append(f"{source.label or 'extension ' + source.path}: {e}")
            continue
        except SyntaxError as e:
            result.errors.append(
                f"{source.label or 'extension ' + source.path}: syntax error at line {e.lineno}: {e.msg}"
            )
            continue
        except BaseException as e:  # an extension must never take the agent down (sys.exit() included)
            if isinstance(e, asyncio.CancelledError):
                raise
            if isinstance(e, ExtensionExit):
                result.errors.append(f"{source.label or 'extension ' + source.path} failed to load: {e}")
            else:
                result.errors.append(
                    f"{source.label or 'extension ' + source.path} failed to load: {type(e).__name__}: {e}"
                )
            continue
        result.extensions.append(extension)
    return result
