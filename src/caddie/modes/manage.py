"""Package and resource management on the command line (no model, no session):

    caddie install SOURCE [-l]     install a package (PyPI name, git URL or local path) and add it to settings
    caddie remove SOURCE [-l]      remove it from settings and delete its environment (alias: uninstall)
    caddie list                    the packages in settings and what each brings
    caddie update [SOURCE]         update all packages (or one); pinned versions/refs are left alone
    caddie update --models         refresh the model lists that are loaded at run time (Pi's ``--models``)
    caddie config                  every extension, skill, prompt template and package, on or off
    caddie config on|off|toggle ID switch one (ID: skill:name, prompt:name, extension:name, package:SOURCE,
                                   mcp:server)

``-l`` writes the project's ``.caddie/settings.json`` (and installs into ``.caddie/packages/``) instead of
the user's. Every user mistake is one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from caddie.errors import ConfigurationError, UsageError
from caddie.resources.discovery import ResourceItem
from caddie.resources.packages import (
    PackageError,
    PackageSpec,
    Scope,
    configured_packages,
    inspect_package,
    install,
    parse_source,
    settings_path,
    settings_source,
    uninstall,
)
from caddie.resources.settings_file import SettingsEditError, update_settings_file
from caddie.runtime.resource_config import find_items, list_resources, set_enabled
from caddie.runtime.trust import remembered_trust

COMMANDS = ("install", "remove", "uninstall", "list", "update", "config")


class ManageError(UsageError):
    """A user mistake: one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ManageError(f"{message} (see {self.prog} --help)")


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise ManageError("the current directory no longer exists") from None


def _say(text: str) -> None:
    print(text, flush=True)


def _identity_matches(entry: Any, spec: PackageSpec, cwd: str) -> bool:
    source = entry if isinstance(entry, str) else entry.get("source") if isinstance(entry, dict) else None
    if not isinstance(source, str):
        return False
    try:
        return parse_source(source, spec.scope, cwd).identity == spec.identity
    except PackageError:
        return False


def cmd_install(args: argparse.Namespace, cwd: str) -> int:
    scope: Scope = "project" if args.local else "user"
    spec = parse_source(args.source, scope, cwd, relative_to=cwd)
    _say(f"Installing {args.source} …")
    where = install(spec, cwd)
    written = settings_source(spec, cwd)
    package = inspect_package(parse_source(written, scope, cwd), cwd)  # validated before settings name it

    def add(data: dict[str, Any]) -> None:
        entries = data.get("packages")
        entries = list(entries) if isinstance(entries, list) else []
        if not any(_identity_matches(e, spec, cwd) for e in entries):
            entries.append(written)
        data["packages"] = entries

    update_settings_file(settings_path(scope, cwd), add)
    _say(f"Installed {args.source} into {where}")
    _describe(package.resources, "  ")
    for warning in package.warnings:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    return 0


def cmd_remove(args: argparse.Namespace, cwd: str) -> int:
    scope: Scope = "project" if args.local else "user"
    spec = parse_source(args.source, scope, cwd, relative_to=cwd)
    removed = False

    def drop(data: dict[str, Any]) -> None:
        nonlocal removed
        entries = data.get("packages")
        if not isinstance(entries, list):
            return
        kept = [e for e in entries if not _identity_matches(e, spec, cwd)]
        removed = len(kept) != len(entries)
        data["packages"] = kept

    update_settings_file(settings_path(scope, cwd), drop)
    deleted = uninstall(spec, cwd)
    if not removed and not deleted:
        other = "user" if scope == "project" else "project (-l)"
        raise ManageError(
            f"{args.source} is not installed in the {scope} settings (caddie list shows them; try the {other} ones)"
        )
    _say(f"Removed {args.source}")
    return 0


def _describe(resources: list[Any], indent: str) -> None:
    by_kind: dict[str, list[str]] = {}
    for r in resources:
        by_kind.setdefault(r.kind, []).append(r.name + ("" if r.enabled else " (off)"))
    for kind in ("extensions", "skills", "prompts", "themes"):
        if kind in by_kind:
            _say(f"{indent}{kind}: {', '.join(by_kind[kind])}")


def cmd_list(args: argparse.Namespace, cwd: str) -> int:
    specs, warnings = configured_packages(cwd, project_trusted=_trusted(cwd, args.trust))
    for warning in warnings:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    if not specs:
        _say("No packages. Install one with: caddie install SOURCE (a PyPI name, a git URL or a path)")
        return 0
    for spec in specs:
        package = inspect_package(spec, cwd)
        state = "" if package.installed else "  (not installed: run caddie update)"
        off = "" if spec.enabled else "  (off)"
        _say(f"{spec.source}  [{spec.scope}]{off}{state}")
        _describe(package.resources, "    ")
    return 0


def cmd_update(args: argparse.Namespace, cwd: str) -> int:
    if args.models:
        return update_models(cwd, args.trust)
    specs, warnings = configured_packages(cwd, project_trusted=_trusted(cwd, args.trust))
    for warning in warnings:
        print(f"caddie: warning: {warning}", file=sys.stderr)
    if args.source:
        wanted = parse_source(args.source, "user", cwd, relative_to=cwd).identity
        specs = [s for s in specs if s.identity == wanted]
        if not specs:
            raise ManageError(f"{args.source} is not in the settings' packages (caddie list shows them)")
    failed = 0
    for spec in specs:
        if spec.pinned and not args.source:
            _say(f"{spec.source}: pinned, left as it is")
            continue
        _say(f"Updating {spec.source} …")
        try:
            install(spec, cwd, upgrade=True)
        except PackageError as e:
            print(f"caddie: {e}", file=sys.stderr)
            failed += 1
    if not specs:
        _say("No packages to update.")
    return 1 if failed else 0


def update_models(cwd: str, trust: bool) -> int:
    """Pi's ``update --models``: every provider that lists its models at run time — an extension's
    ``refreshModels``, a login's catalogue — loads its list now into models-store.json. Providers with a
    fixed list (caddie's built-in catalogue, models.json) have nothing to refresh and are not contacted."""
    import asyncio

    from caddie.extensions.providers import ExtensionProviders
    from caddie.models.registry import ModelRegistry
    from caddie.runtime.factory import load_extension_set

    async def refresh() -> tuple[list[str], list[str]]:
        loaded = await load_extension_set(cwd, extension_paths=[], no_extensions=False, trust=trust or None)
        registry = ModelRegistry()
        problems = [*loaded.errors, *ExtensionProviders(registry).attach(loaded.extensions)]
        names = [n for e in loaded.extensions for n in e.providers]
        names += [p for p in registry.providers() if registry.has_key(p)]
        done: list[str] = []
        for name in dict.fromkeys(names):
            try:
                problems += await registry.refresh_models(name)
            except Exception as e:  # one provider's failure (network, login) does not stop the others
                problems.append(f"{name}: could not load its models ({e})")
                continue
            if registry.models_store.read().get(name) is not None:  # only run-time lists are stored
                done.append(name)
        return done, problems

    done, problems = asyncio.run(refresh())
    for problem in problems:
        print(f"caddie: warning: {problem}", file=sys.stderr)
    _say(
        f"Refreshed the model lists of {', '.join(done)}."
        if done
        else "No provider here lists its models at run time; the built-in and models.json lists need no refresh."
    )
    return 1 if problems and not done else 0


def _trusted(cwd: str, trust: bool) -> bool:
    return True if trust else bool(remembered_trust(cwd))


def _item_json(item: ResourceItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "kind": item.kind,
        "name": item.name,
        "path": item.path,
        "source": item.source,
        "enabled": item.enabled,
        "description": item.description,
        **({"package": item.package} if item.package else {}),
    }


def cmd_config(args: argparse.Namespace, cwd: str) -> int:
    trust = True if args.trust else None
    items, warnings = list_resources(cwd, trust=trust)
    if args.action is None:
        for warning in warnings:
            print(f"caddie: warning: {warning}", file=sys.stderr)
        if args.json:
            _say(json.dumps([_item_json(i) for i in items], indent=2, ensure_ascii=False))
            return 0
        titles = {
            "extension": "Extensions",
            "skill": "Skills",
            "prompt": "Prompt templates",
            "package": "Packages",
        }
        for kind in dict.fromkeys(i.kind for i in items):  # kinds extensions list (mcp…) after caddie's
            titles.setdefault(kind, f"{kind} (from an extension)")
        for kind, title in titles.items():
            group = [i for i in items if i.kind == kind]
            if not group:
                continue
            _say(f"{title}:")
            for i in group:
                mark = "x" if i.enabled else " "
                _say(f"  [{mark}] {i.id:<32} {i.source}")
        _say("\nSwitch one with: caddie config on|off|toggle ID")
        return 0
    if not args.id:
        raise ManageError(f"name the item: caddie config {args.action} ID (caddie config lists them)")
    matches = find_items(items, args.id)
    if not matches:
        raise ManageError(f"nothing called {args.id} was found (caddie config lists every item)")
    if len(matches) > 1:
        paths = "; ".join(f"{m.path} ({m.source})" for m in matches)
        raise ManageError(f"{args.id} names {len(matches)} items; give the path instead: {paths}")
    item = matches[0]
    enabled = {"on": True, "enable": True, "off": False, "disable": False}.get(args.action, not item.enabled)
    _say(set_enabled(cwd, item, enabled, scope="project" if args.local else None))
    return 0


def _parser() -> _Parser:
    p = _Parser(prog="caddie", add_help=True, allow_abbrev=False)
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    for name in ("install", "remove", "uninstall"):
        s = sub.add_parser(name, help=f"{name} a package", allow_abbrev=False)
        s.add_argument("source", help="a PyPI name, a git URL (git:github.com/user/repo@v1) or a local path")
        s.add_argument("-l", "--local", action="store_true", help="the project's settings, not the user's")
    s = sub.add_parser("list", help="the installed packages", allow_abbrev=False)
    s.add_argument("--trust", action="store_true", help="include the project's packages")
    s = sub.add_parser(
        "update", help="update packages, or (--models) the dynamic model lists", allow_abbrev=False
    )
    s.add_argument("source", nargs="?", help="only this package")
    s.add_argument(
        "--models",
        action="store_true",
        help="refresh the model lists of logins and extensions that load them at run time (models-store.json)",
    )
    s.add_argument(
        "-a", "--approve", "--trust", dest="trust", action="store_true", help="include the project's packages"
    )
    s = sub.add_parser(
        "config", help="list and switch extensions, skills, prompts, packages", allow_abbrev=False
    )
    s.add_argument("action", nargs="?", choices=["on", "off", "enable", "disable", "toggle"])
    s.add_argument(
        "id", nargs="?", help="skill:NAME, prompt:NAME, extension:NAME, package:SOURCE, mcp:SERVER, or a path"
    )
    s.add_argument("-l", "--local", action="store_true", help="bundled extensions: switch in the project")
    s.add_argument("--trust", action="store_true", help="include the project's resources")
    s.add_argument("--json", action="store_true", help="the list as JSON")
    return p


def run_manage(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        cwd = str(Path(_cwd()).resolve())
        handler = {
            "install": cmd_install,
            "remove": cmd_remove,
            "uninstall": cmd_remove,
            "list": cmd_list,
            "update": cmd_update,
            "config": cmd_config,
        }[args.command]
        return handler(args, cwd)
    except (ManageError, PackageError, ConfigurationError, SettingsEditError) as e:
        print(f"caddie: {e}", file=sys.stderr)
        return 2
