"""Pi's ``sourceInfo`` on ``api.get_all_tools()`` and ``api.get_commands()``: one real session with extensions
from the user folder, the project, ``-e``, both settings files, an installed package, a bundled one, the SDK and
``resources_discover``, with templates and skills from each place — each gets the provenance Pi gives its
twin (checked against real Pi by ``tests/interop/test_pi_source_info.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from caddie.config.paths import agent_dir
from caddie.config.source_info import extension_source
from caddie.extensions.api import (
    ExtensionAPI,
    SlashCommandInfo,
    SourceInfo,
    ToolDefinition,
    ToolResult,
    text_result,
)
from caddie.resources.packages import MARKER, install_dir, parse_source
from caddie.sdk import open_session

PROBE = """
from caddie.extensions.api import ToolDefinition, text_result

async def run(call_id, params, signal, on_update, ctx):
    return text_result("ok")

def register(api):
    api.register_tool(ToolDefinition("{name}_tool", "probe", {{"type": "object"}}, run))
    async def command(args, ctx):
        pass
    api.register_command("{name}_cmd", command, description="probe")
"""

DISCOVERING = """
from caddie.extensions.api import ResourcesDiscoverResult

def register(api):
    api.on("resources_discover", lambda event, ctx: ResourcesDiscoverResult(prompt_paths=[{prompt!r}]))
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def template(path: Path) -> Path:
    return write(path, "---\ndescription: t\n---\nDo it.\n")


def skill(folder: Path) -> Path:
    return write(folder / "SKILL.md", f"---\nname: {folder.name}\ndescription: s\n---\nSteps.\n")


def installed_package(tmp_path: Path) -> tuple[str, Path]:
    """A local package laid out as ``caddie install`` leaves it: an extension and a prompts folder. Its
    source as written in settings, and its folder."""
    source = tmp_path / "pack"
    source.mkdir()
    spec = parse_source(str(source), "user", str(tmp_path))
    env = install_dir(spec, str(tmp_path))
    site = env / "lib" / "python3.11" / "site-packages"
    write(site / "pack_ext" / "__init__.py", PROBE.format(name="pkg"))
    template(site / "pack_ext" / "prompts" / "kprompt.md")
    info = site / "pack_ext-0.1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: pack-ext\nVersion: 0.1.0\n")
    write(
        info / "entry_points.txt",
        "[caddie.extensions]\nprobe = pack_ext\n\n[caddie.prompts]\nprompts = pack_ext:prompts\n",
    )
    write(env / MARKER, json.dumps({"source": str(source)}))
    return str(source), source


async def test_every_tool_and_command_says_where_it_came_from(tmp_path: Path) -> None:
    agent = agent_dir()
    project = tmp_path / "project"
    dot = project / ".caddie"
    user_ext = write(agent / "extensions" / "user_ext.py", PROBE.format(name="user"))
    proj_ext = write(dot / "extensions" / "proj_ext.py", PROBE.format(name="proj"))
    cli_ext = write(tmp_path / "cli" / "cli_ext.py", PROBE.format(name="cli"))
    listed = write(tmp_path / "listed" / "sett.py", PROBE.format(name="sett"))
    proj_listed = write(tmp_path / "listed" / "psett.py", PROBE.format(name="psett"))
    found = template(tmp_path / "found" / "rdprompt.md")
    finder = write(tmp_path / "finder" / "rd.py", DISCOVERING.format(prompt=str(found)))
    package, package_dir = installed_package(tmp_path)
    uprompt = template(agent / "prompts" / "uprompt.md")
    pprompt = template(dot / "prompts" / "pprompt.md")
    cprompt = template(tmp_path / "cli" / "cprompt.md")
    sprompt = template(agent.parent / "listed-prompts" / "sprompt.md")
    uskill = skill(agent / "skills" / "uskill")
    pskill = skill(dot / "skills" / "pskill")
    cliskill = skill(tmp_path / "cli-skills" / "cliskill")
    write(
        agent / "settings.json",
        json.dumps(
            {
                "extensions": [str(listed), str(finder)],
                "packages": [package],
                "prompts": ["../listed-prompts"],  # relative to the settings file's folder
                "disabledExtensions": ["mulligan", "mcp"],
            }
        ),
    )
    write(dot / "settings.json", json.dumps({"extensions": ["../../listed/psett.py"]}))  # from .caddie/

    apis: list[ExtensionAPI] = []

    async def run(*_args: Any) -> ToolResult:
        return text_result("ok")

    program_tool = ToolDefinition("sdk_tool", "given", {"type": "object"}, run)
    async with open_session(
        project,
        model="faux/faux-1",
        trust_project=True,
        extensions=[str(cli_ext), apis.append],
        custom_tools=[program_tool],
        prompt_templates=[cprompt],
        skills=[cliskill.parent],
    ):
        tools = {t.name: t.source_info for t in apis[0].get_all_tools()}
        commands = apis[0].get_commands()

    def auto(path: Path, scope: str, base: Path) -> SourceInfo:
        return SourceInfo(str(path), "auto", scope, "top-level", str(base))  # type: ignore[arg-type]

    package_info = SourceInfo(f"package:{package}#probe", package, "user", "package", str(package_dir))
    expected = {
        "read": SourceInfo("<builtin:read>", "builtin", "temporary", "top-level"),
        "bash": SourceInfo("<builtin:bash>", "builtin"),
        "cli_tool": SourceInfo(str(cli_ext), "cli", "temporary"),
        "proj_tool": auto(proj_ext, "project", dot),
        "user_tool": auto(user_ext, "user", agent),
        "sett_tool": SourceInfo(str(listed), "local", "user"),
        "psett_tool": SourceInfo(str(proj_listed), "local", "project"),
        "pkg_tool": package_info,
        "sdk_tool": SourceInfo("<sdk:sdk_tool>", "sdk"),
    }
    assert {name: tools.get(name) for name in expected} == expected
    goal = next(t for t in tools.values() if t.path == "bundled:goal")  # a bundled extension's tool
    assert goal == SourceInfo("bundled:goal", "bundled", "temporary", "top-level")

    by_name = {c.name: c for c in commands}
    assert by_name["user_cmd"] == SlashCommandInfo(
        "user_cmd", "probe", "extension", str(user_ext), None, auto(user_ext, "user", agent)
    )
    assert by_name["pkg_cmd"].source_info == package_info
    assert by_name["cli_cmd"].source_info == SourceInfo(str(cli_ext), "cli")
    assert {c.name: c.source_info for c in commands if c.source != "extension"} == {
        "uprompt": auto(uprompt, "user", agent),
        "pprompt": auto(pprompt, "project", dot),
        "cprompt": SourceInfo(str(cprompt), "local", "temporary", "top-level", str(cprompt.parent)),
        "sprompt": SourceInfo(str(sprompt), "local", "user"),
        "kprompt": SourceInfo(
            next(c.path for c in commands if c.name == "kprompt"),
            package,
            "user",
            "package",
            str(package_dir),
        ),
        "rdprompt": SourceInfo(str(found), "extension:rd", "temporary", "top-level", str(finder.parent)),
        "skill:uskill": auto(uskill, "user", agent),
        "skill:pskill": auto(pskill, "project", dot),
        "skill:cliskill": SourceInfo(str(cliskill), "local", "temporary", "top-level", str(cliskill.parent)),
    }


def test_what_a_bare_path_says_and_the_json_shape_is_pis() -> None:
    assert extension_source("<sdk:watcher>") == SourceInfo("<sdk:watcher>", "sdk")  # an SDK function
    assert extension_source("/x/ext.py") == SourceInfo("/x/ext.py", "local", base_dir="/x")
    assert SlashCommandInfo("t", None, "prompt", "/p/t.md").source_info == SourceInfo(
        "/p/t.md", "local", base_dir="/p"
    )
    assert SourceInfo("/a/x.py", "auto", "user", "top-level", "/a").to_json() == {
        "path": "/a/x.py",
        "source": "auto",
        "scope": "user",
        "origin": "top-level",
        "baseDir": "/a",
    }
    assert SourceInfo("<builtin:read>", "builtin").to_json() == {
        "path": "<builtin:read>",
        "source": "builtin",
        "scope": "temporary",
        "origin": "top-level",
    }


def test_the_sessions_commands_and_the_extension_apis_decide_a_source_alike() -> None:
    from caddie.runtime.session_api import SlashCommand

    for kind, path in [("extension", "bundled:goal"), ("extension", "/x/e.py"), ("skill", "/s/SKILL.md")]:
        info = SlashCommandInfo("c", None, kind, path).source_info  # type: ignore[arg-type]
        assert info == SlashCommand("c", None, kind, path).source_info  # type: ignore[arg-type]
        assert info == (
            extension_source(path) if kind == "extension" else SourceInfo(path, "local", base_dir="/s")
        )
