"""``caddie config``: everything caddie discovered — extensions, skills, prompt templates, packages — and
whether each is on, with one function to switch an item on or off (the TUI's ``/settings`` calls the same).

Switches are stored in settings the way Pi's ``pi config`` stores them:

- an extension, skill or template found in a folder (or listed in settings): ``"-path"`` (off) or ``"+path"``
  (on) in the ``extensions`` / ``skills`` / ``prompts`` list of the settings file of its scope, the path
  relative to that file's folder (``~/.caddie/agent`` or ``<project>/.caddie``);
- a bundled extension (mulligan, goal) or one from an installed distribution: its name in
  ``disabledExtensions``;
- something inside a package: ``"-name"`` / ``"+name"`` in the package entry's own list
  (``{"source": "...", "skills": ["-name"]}``); a whole package: ``"enabled": false`` on its entry.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from caddie.config.paths import agent_dir, project_dir
from caddie.config.settings import load_settings, settings_files
from caddie.errors import ConfigurationError
from caddie.extensions.api import ConfigScope
from caddie.extensions.extension import Extension
from caddie.extensions.loader import (
    BUNDLED,
    collect_sources,
    discover_dir,
    entry_point_sources,
    load_extensions,
    package_sources,
)
from caddie.resources.discovery import (
    DiscoveryRequest,
    ResourceItem,
    discover,
    is_enabled,
    plain_entries,
    scope_lists,
)
from caddie.resources.packages import (
    PackageError,
    load_packages,
    parse_source,
    settings_path,
)
from caddie.resources.settings_file import SettingsEditError, update_settings_file
from caddie.runtime.trust import remembered_trust

Scope = Literal["user", "project"]
KIND_KEYS = {"extension": "extensions", "skill": "skills", "prompt": "prompts"}


def _trusted(cwd: str, trust: bool | None) -> bool:
    return trust if trust is not None else bool(remembered_trust(cwd))


def extension_items(cwd: str, trusted: bool, extensions: Sequence[Extension]) -> list[ResourceItem]:
    """What extensions list with ``api.register_config_items`` (MCP servers…), as items to switch."""
    user, project = settings_files(cwd)
    scope = ConfigScope(cwd, trusted, user, project, str(agent_dir()))
    items: list[ResourceItem] = []
    for ext in extensions:
        for lister in ext.config_listers:
            try:
                listed = list(lister(scope))
            except Exception:  # a broken lister must not hide everything else
                continue
            for c in listed:
                items.append(
                    ResourceItem(
                        c.kind,
                        c.name,
                        f"{c.kind}:{c.name}",
                        "extension",
                        c.source,
                        c.enabled,
                        description=c.description,
                        settings_scope="user",
                        switch_key=c.switch_key,
                        on_switch=c.on_switch,
                    )
                )
    return items


def load_config_extensions(cwd: str, trusted: bool) -> tuple[list[Extension], list[str]]:
    """The extensions a session here would load (without running a session), for their config items."""
    settings = load_settings(cwd, project_trusted=trusted)
    packages, _ = load_packages(cwd, project_trusted=trusted)
    sources = collect_sources(
        cwd,
        agent_dir=agent_dir(),
        settings_paths=plain_entries(settings.extensions),
        project_trusted=trusted,
        disabled=settings.get("disabledExtensions", []) or [],
        packages=package_sources(packages),
        settings_lists=scope_lists(cwd, trusted, "extensions"),
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loaded = asyncio.run(load_extensions(sources))
    else:  # called from async code: load on a loop of its own
        with ThreadPoolExecutor(1) as pool:
            loaded = pool.submit(asyncio.run, load_extensions(sources)).result()
    return loaded.extensions, loaded.errors


def list_resources(
    cwd: str, *, trust: bool | None = None, extensions: Sequence[Extension] | None = None
) -> tuple[list[ResourceItem], list[str]]:
    """Every discovered item with its on/off state, and the warnings discovery produced. ``extensions``:
    the running session's (their config items are listed); None loads them (``caddie config``)."""
    cwd = str(Path(cwd).expanduser().resolve())
    trusted = _trusted(cwd, trust)
    packages, warnings = load_packages(cwd, project_trusted=trusted)
    items: list[ResourceItem] = []
    lists = scope_lists(cwd, trusted, "extensions")
    folders: list[tuple[Scope, str]] = [("user", str(agent_dir()))]
    if trusted:
        folders.insert(0, ("project", str(project_dir(cwd))))
    for scope, base in folders:
        entries = next(e for s, _b, e in lists if s == scope)
        for found_path in discover_dir(Path(base) / "extensions"):
            name, path = found_path.name.removesuffix(".py"), str(found_path)
            items.append(
                ResourceItem(
                    "extension",
                    name,
                    str(path),
                    scope,
                    scope,
                    is_enabled(str(path), entries, base),
                    base,
                    None,
                    "",
                    scope,
                )
            )
    for scope, base, entries in lists:
        for entry in plain_entries(entries):
            expanded = os.path.expanduser(entry)
            path = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(base, expanded))
            name = os.path.basename(path.rstrip("/")).removesuffix(".py")
            enabled = is_enabled(path, entries, base)
            items.append(
                ResourceItem(
                    "extension", name, path, "settings", f"{scope} settings", enabled, base, None, "", scope
                )
            )
    disabled = set(load_settings(cwd, project_trusted=trusted).get("disabledExtensions", []) or [])
    for source in entry_point_sources():
        items.append(
            ResourceItem(
                "extension", source.name, source.path, "bundled", "installed", source.name not in disabled
            )
        )
    for name in BUNDLED:
        items.append(
            ResourceItem("extension", name, f"bundled:{name}", "bundled", "bundled", name not in disabled)
        )
    for package in packages:
        spec = package.spec
        state = "installed" if package.installed else "not installed"
        items.append(
            ResourceItem(
                "package",
                spec.source,
                spec.identity,
                "package",
                f"{spec.scope} · {state}",
                spec.enabled,
                None,
                spec.source,
                "",
                spec.scope,
            )
        )
        for resource in package.resources:
            if resource.kind == "extensions":  # skills and templates come from discovery below
                items.append(
                    ResourceItem(
                        "extension",
                        resource.name,
                        f"package:{spec.source}#{resource.name}",
                        "package",
                        f"package {spec.source}",
                        resource.enabled,
                        None,
                        spec.source,
                        "",
                        spec.scope,
                        resource.kind,
                    )
                )
    found = discover(DiscoveryRequest(cwd=cwd, project_trusted=trusted, packages=packages))
    items += found.items
    if extensions is None:
        extensions, errors = load_config_extensions(cwd, trusted)
        warnings += errors
    items += extension_items(cwd, trusted, extensions)
    return items, [*warnings, *found.warnings]


def find_items(items: list[ResourceItem], ref: str) -> list[ResourceItem]:
    """Items named by ``kind:name`` (``skill:review``, ``package:./pkg``), by name alone, or by path."""
    kind, sep, name = ref.partition(":")
    if sep and kind in ("skill", "prompt", "extension", "package"):
        matches = [i for i in items if i.kind == kind and (i.name == name or i.path == name)]
        if matches:
            return matches
    matches = [i for i in items if i.name == ref or i.path == ref]
    if not matches and os.path.exists(ref):
        real = os.path.realpath(ref)
        matches = [
            i
            for i in items
            if os.path.realpath(i.path) == real
            or (os.path.basename(i.path) == "SKILL.md" and os.path.realpath(os.path.dirname(i.path)) == real)
        ]
    return matches


def _pattern(item: ResourceItem) -> str:
    target = os.path.dirname(item.path) if os.path.basename(item.path) == "SKILL.md" else item.path
    base = item.base_dir
    if base is not None:
        rel = os.path.relpath(target, base)
        if not rel.startswith(".."):
            return rel.replace(os.sep, "/")
    return target.replace(os.sep, "/")


def _strip(entry: str) -> str:
    return entry[1:] if entry.startswith(("!", "+", "-")) else entry


def set_enabled(cwd: str, item: ResourceItem, enabled: bool, *, scope: Scope | None = None) -> str:
    """Switch one item on or off in the settings file of its scope; returns a sentence saying what changed.

    ``scope`` picks the settings file for items that have no scope of their own (bundled extensions: user
    settings by default).
    """
    cwd = str(Path(cwd).expanduser().resolve())
    state = "on" if enabled else "off"
    try:
        if item.kind == "package":
            return _set_package(cwd, item, enabled) + f"package {item.name} is now {state}"
        if item.switch_key is not None:
            return (
                _set_switch(cwd, item, enabled, scope or "user") + f"{item.kind} {item.name} is now {state}"
            )
        if item.package is not None:
            return _set_package_resource(cwd, item, enabled) + f"{item.kind} {item.name} is now {state}"
        if item.scope == "bundled":
            where = scope or "user"
            path = settings_path(where, cwd)

            def change_disabled(data: dict[str, Any]) -> None:
                current = [n for n in data.get("disabledExtensions", []) or [] if isinstance(n, str)]
                current = [n for n in current if n != item.name]
                if not enabled:
                    current.append(item.name)
                data["disabledExtensions"] = current

            update_settings_file(path, change_disabled)
            return f"{path}: extension {item.name} is now {state}"
        if item.settings_scope is None:
            raise ConfigurationError(
                f"{item.kind} {item.name} comes from the {item.source} and is not switched in settings"
            )
        key = KIND_KEYS[item.kind]
        path = settings_path(item.settings_scope, cwd)
        pattern = _pattern(item)

        def change(data: dict[str, Any]) -> None:
            current = [e for e in data.get(key, []) or [] if isinstance(e, str)]
            current = [e for e in current if not (e.startswith(("!", "+", "-")) and _strip(e) == pattern)]
            current.append(("+" if enabled else "-") + pattern)
            data[key] = current

        update_settings_file(path, change)
        return f"{path}: {item.kind} {item.name} is now {state}"
    except SettingsEditError as e:
        raise ConfigurationError(str(e)) from None


def _set_switch(cwd: str, item: ResourceItem, enabled: bool, scope: Scope) -> str:
    """An extension's item: its name in (off) or out of (on) the settings list ``item.switch_key``."""
    assert item.switch_key is not None
    key = item.switch_key
    path = settings_path(scope, cwd)

    def change(data: dict[str, Any]) -> None:
        current = [n for n in data.get(key, []) or [] if isinstance(n, str) and n != item.name]
        if not enabled:
            current.append(item.name)
        data[key] = current

    update_settings_file(path, change)
    return f"{path}: "


def _package_entries(
    data: dict[str, Any], item: ResourceItem, cwd: str, scope: Scope
) -> tuple[list[Any], int]:
    entries = data.get("packages")
    if not isinstance(entries, list):
        raise ConfigurationError(f'the {scope} settings have no "packages" list with {item.package}')
    assert item.package is not None
    want = parse_source(item.package, scope, cwd).identity
    for index, entry in enumerate(entries):
        source = entry if isinstance(entry, str) else entry.get("source") if isinstance(entry, dict) else None
        if isinstance(source, str):
            try:
                if parse_source(source, scope, cwd).identity == want:
                    return entries, index
            except PackageError:
                continue
    raise ConfigurationError(f"package {item.package} is not in the {scope} settings")


def _set_package(cwd: str, item: ResourceItem, enabled: bool) -> str:
    scope = item.settings_scope or "user"
    path = settings_path(scope, cwd)

    def change(data: dict[str, Any]) -> None:
        entries, index = _package_entries(data, item, cwd, scope)
        entry = entries[index]
        obj = dict(entry) if isinstance(entry, dict) else {"source": entry}
        if enabled:
            obj.pop("enabled", None)
        else:
            obj["enabled"] = False
        entries[index] = obj if set(obj) != {"source"} else obj["source"]

    update_settings_file(path, change)
    return f"{path}: "


def _set_package_resource(cwd: str, item: ResourceItem, enabled: bool) -> str:
    scope = item.settings_scope or "user"
    path = settings_path(scope, cwd)
    key = item.resource_type or KIND_KEYS[item.kind]

    def change(data: dict[str, Any]) -> None:
        entries, index = _package_entries(data, item, cwd, scope)
        entry = entries[index]
        obj = dict(entry) if isinstance(entry, dict) else {"source": entry}
        current = [e for e in obj.get(key, []) or [] if isinstance(e, str) and _strip(e) != item.name]
        current.append(("+" if enabled else "-") + item.name)
        obj[key] = current
        entries[index] = obj

    update_settings_file(path, change)
    return f"{path}: "


def toggle(cwd: str, item: ResourceItem, *, scope: Scope | None = None) -> tuple[ResourceItem, str]:
    """Flip one item; returns the item as it is now and the sentence from ``set_enabled``."""
    message = set_enabled(cwd, item, not item.enabled, scope=scope)
    return replace(item, enabled=not item.enabled), message
