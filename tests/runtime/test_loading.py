"""Settings merging, project trust, and every place extensions load from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.config.settings import load_settings
from caddie.extensions.loader import collect_sources, load_extensions
from caddie.runtime.trust import project_has_code, remember_trust, remembered_trust
from tests.runtime.harness import start_session

EXTENSION = """
def register(api):
    async def hello(args, ctx):
        ctx.ui.notify("hello from {name}")
    api.register_command("hello-{name}", hello, description="says hello")
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_settings_deep_merge_global_then_project(tmp_path: Path) -> None:
    write(
        agent_dir() / "settings.json",
        json.dumps({"retry": {"maxRetries": 5, "baseDelayMs": 7}, "tools": ["read"]}),
    )
    write(
        tmp_path / ".caddie" / "settings.json",
        json.dumps({"retry": {"maxRetries": 2}, "mulligan": {"enabled": False}}),
    )
    settings = load_settings(tmp_path, project_trusted=True)
    assert settings.retry_max_retries == 2 and settings.retry_base_delay_ms == 7
    assert settings.tools == ["read"]
    assert settings.block("mulligan") == {"enabled": False}
    assert settings.warnings == []


def test_a_broken_settings_file_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    write(agent_dir() / "settings.json", '{"retry": {"maxRetries": 5,}')
    settings = load_settings(tmp_path)
    assert settings.retry_max_retries == 3
    assert len(settings.warnings) == 1 and "is not valid JSON (line 1" in settings.warnings[0]


def test_an_untrusted_projects_settings_file_is_not_read_as_in_pi(tmp_path: Path) -> None:
    write(
        tmp_path / ".caddie" / "settings.json",
        json.dumps({"shellPath": "/evil", "extensions": ["x.py"], "retry": {"maxRetries": 1}}),
    )
    assert project_has_code(tmp_path)  # a settings file alone asks for trust (Pi's list)
    untrusted = load_settings(tmp_path)
    assert untrusted.shell_path is None and untrusted.extensions == [] and untrusted.retry_max_retries == 3
    assert untrusted.warnings == [
        f"{tmp_path.absolute() / '.caddie' / 'settings.json'}: ignored because this project is not trusted "
        "(run with -a/--approve, or trust it when asked)"
    ]
    trusted = load_settings(tmp_path, project_trusted=True)
    assert trusted.shell_path == "/evil"
    assert trusted.extensions == [str(tmp_path.absolute() / ".caddie" / "x.py")]  # relative to .caddie/


def test_trust_decisions_are_remembered_per_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    assert remembered_trust(project) is None
    assert not project_has_code(project)
    write(project / ".caddie" / "extensions" / "x.py", "")
    assert project_has_code(project)
    remember_trust(project, True)
    assert remembered_trust(project / "sub") is True
    remember_trust(project, False)
    assert remembered_trust(project) is False


async def test_extensions_load_from_every_source_in_order(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    cli = write(tmp_path / "cli_ext.py", EXTENSION.format(name="cli"))
    write(project / ".caddie" / "extensions" / "proj_ext.py", EXTENSION.format(name="project"))
    write(agent_dir() / "extensions" / "user_ext.py", EXTENSION.format(name="user"))
    write(agent_dir() / "extensions" / "user_pkg" / "__init__.py", "from .impl import register\n")
    write(agent_dir() / "extensions" / "user_pkg" / "impl.py", EXTENSION.format(name="package"))
    listed = write(tmp_path / "listed.py", EXTENSION.format(name="settings"))

    dist = tmp_path / "site"
    write(dist / "ep_ext.py", EXTENSION.format(name="entrypoint"))
    write(dist / "ep_ext-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: ep-ext\nVersion: 1.0\n")
    write(dist / "ep_ext-1.0.dist-info" / "entry_points.txt", "[caddie.extensions]\nep = ep_ext\n")
    sys.path.insert(0, str(dist))
    try:
        sources = collect_sources(
            project,
            cli_paths=[str(cli)],
            agent_dir=agent_dir(),
            settings_paths=[str(listed)],
            project_trusted=True,
            disabled=["mulligan", "goal", "mcp"],
        )
        result = await load_extensions(sources)
    finally:
        sys.path.remove(str(dist))
    commands = [name for ext in result.extensions for name in ext.commands]
    assert commands == [
        "hello-cli",
        "hello-project",
        "hello-user",  # user_ext.py sorts before user_pkg/
        "hello-package",
        "hello-settings",
        "hello-entrypoint",
    ]
    assert result.errors == []
    entry_point = result.extensions[-1].source_info  # in caddie's own environment: the user's, a package
    assert (entry_point.source, entry_point.scope, entry_point.origin) == ("entry-point", "user", "package")
    assert result.extensions[3].source_info.base_dir == str(agent_dir())  # a folder in extensions/


async def test_a_pi_extension_file_in_settings_is_one_clear_line(tmp_path: Path) -> None:
    pi_file = write(tmp_path / "gate.ts", "export default function (pi) {}\n")
    sources = collect_sources(
        tmp_path,
        cli_paths=[],
        agent_dir=agent_dir(),
        settings_paths=[str(pi_file)],
        project_trusted=True,
        disabled=["mulligan", "goal", "mcp"],
    )
    result = await load_extensions(sources)
    assert result.extensions == []
    [error] = result.errors
    assert "gate.ts" in error and "a TypeScript or JavaScript extension is Pi's" in error
    assert "ImportError" not in error


def test_untrusted_or_no_extensions_skip_discovery_but_keep_cli_and_bundled(tmp_path: Path) -> None:
    write(tmp_path / ".caddie" / "extensions" / "proj_ext.py", EXTENSION.format(name="project"))
    write(agent_dir() / "extensions" / "user_ext.py", EXTENSION.format(name="user"))
    untrusted = [s.name for s in collect_sources(tmp_path, agent_dir=agent_dir(), project_trusted=False)]
    assert "proj_ext" not in untrusted and "user_ext" in untrusted
    none = [
        s.path
        for s in collect_sources(tmp_path, cli_paths=["x.py"], agent_dir=agent_dir(), no_extensions=True)
    ]
    assert none[0].endswith("x.py") and all(p.startswith("bundled:") for p in none[1:])


async def test_reload_picks_up_a_changed_extension(tmp_path: Path) -> None:
    ext = write(tmp_path / "live.py", EXTENSION.format(name="v1"))
    run = await start_session(tmp_path, extension_paths=[str(ext)])
    assert "hello-v1" in run.session.extensions.commands()
    write(ext, EXTENSION.format(name="v2"))
    await run.session.reload()
    commands = run.session.extensions.commands()
    assert "hello-v2" in commands and "hello-v1" not in commands


@pytest.mark.parametrize("disabled", [["goal"], ["mulligan"]])
def test_bundled_extensions_can_be_disabled(tmp_path: Path, disabled: list[str]) -> None:
    names = [s.name for s in collect_sources(tmp_path, agent_dir=agent_dir(), disabled=disabled)]
    assert disabled[0] not in names
