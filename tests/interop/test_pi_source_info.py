"""``sourceInfo`` beside real Pi 0.84.4: the same layout (an extension in the user folder, one in the project,
one given with ``-e``, one listed in the user settings; templates and skills from the user folder, the
project, ``--prompt-template`` and ``--skill``) run in RPC mode by both. Pi's ``get_commands`` response and
what its ``getAllTools()`` / ``getCommands()`` return must equal caddie's, once Pi's folders are read as
caddie's (``.pi`` → ``.caddie``, ``.ts`` → ``.py``). Packages install differently (npm against PyPI), so
``tests/runtime/test_source_info.py`` covers them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.interop.pi import PI_PACKAGE, require_pi

PI_PROBE = """
export default function (pi: any) {
  pi.registerTool({ name: "NAME_tool", label: "t", description: "probe", parameters: { type: "object", properties: {} },
    execute: async () => ({ content: [], details: {} }) });
  pi.registerCommand("NAME_cmd", { description: "probe", handler: async () => {
    const tools = pi.getAllTools().map((t: any) => ({ name: t.name, sourceInfo: t.sourceInfo }));
    const commands = pi.getCommands().map((c: any) => ({ name: c.name, source: c.source, sourceInfo: c.sourceInfo }));
    console.error("SEEN " + JSON.stringify({ tools, commands }));
  } });
}
"""

CADDIE_PROBE = """
import json, sys
from caddie.extensions.api import ToolDefinition, text_result

async def run(call_id, params, signal, on_update, ctx):
    return text_result("ok")

def register(api):
    api.register_tool(ToolDefinition("NAME_tool", "probe", {"type": "object", "properties": {}}, run))
    async def command(args, ctx):
        tools = [{"name": t.name, "sourceInfo": t.source_info.to_json()} for t in api.get_all_tools()]
        commands = [
            {"name": c.name, "source": c.source, "sourceInfo": c.source_info.to_json()} for c in api.get_commands()
        ]
        print("SEEN " + json.dumps({"tools": tools, "commands": commands}), file=sys.stderr, flush=True)
    api.register_command("NAME_cmd", command, description="probe")
"""

REQUESTS = '{"id": "c", "type": "get_commands"}\n{"id": "p", "type": "prompt", "message": "/user_cmd"}\n'


def layout(root: Path, agent: Path, dot: str, probe: str, suffix: str) -> None:
    """One agent's files: ``agent`` is its user folder, ``root/project/<dot>`` its project folder."""

    def write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    project = root / "project" / dot
    for name, path in (
        ("user", agent / "extensions" / f"user{suffix}"),
        ("proj", project / "extensions" / f"proj{suffix}"),
        ("cli", root / "cli" / f"cli{suffix}"),
        ("sett", root / "listed" / f"sett{suffix}"),
    ):
        write(path, probe.replace("NAME", name))
    for path in (
        agent / "prompts" / "uprompt.md",
        project / "prompts" / "pprompt.md",
        root / "cli" / "cprompt.md",
    ):
        write(path, "---\ndescription: t\n---\nDo it.\n")
    for folder in (
        agent / "skills" / "uskill",
        project / "skills" / "pskill",
        root / "cli-skills" / "cliskill",
    ):
        write(folder / "SKILL.md", f"---\nname: {folder.name}\ndescription: s\n---\nSteps.\n")
    write(agent / "settings.json", json.dumps({"extensions": [str(root / "listed" / f"sett{suffix}")]}))


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``get_commands`` response's data, and what the probe command saw."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env={**os.environ, **env},
        input=REQUESTS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    response = next(r for r in replies if r.get("id") == "c")
    seen = next((line for line in done.stderr.splitlines() if line.startswith("SEEN ")), None)
    assert seen is not None, done.stderr
    return response["data"], json.loads(seen.removeprefix("SEEN "))


def own(items: list[dict[str, Any]], skip: str) -> dict[str, dict[str, Any]]:
    """By name, leaving out what the agent brings itself (Pi's inline llama.cpp, caddie's bundled ones)."""
    return {i["name"]: i for i in items if i["sourceInfo"]["source"] != skip}


def test_source_info_is_pis_for_every_place_a_tool_or_command_comes_from(tmp_path: Path) -> None:
    node = require_pi()
    pi_agent, caddie_home = tmp_path / "pi-agent", tmp_path / "caddie-home"
    caddie_agent = caddie_home / "agent"
    pi_root, caddie_root = tmp_path / "pi", tmp_path / "caddie"
    layout(pi_root, pi_agent, ".pi", PI_PROBE, ".ts")
    layout(caddie_root, caddie_agent, ".caddie", CADDIE_PROBE, ".py")
    (tmp_path / "home").mkdir()
    extra = ["-a", "--prompt-template", "../cli/cprompt.md", "--skill", "../cli-skills/cliskill"]

    pi_data, pi_seen = run(
        [node, str(PI_PACKAGE / "dist" / "cli.js"), "--mode", "rpc", "-e", "../cli/cli.ts", *extra],
        pi_root / "project",
        {"PI_CODING_AGENT_DIR": str(pi_agent), "HOME": str(tmp_path / "home")},  # no ~/.agents of the machine
    )
    caddie_data, caddie_seen = run(
        [sys.executable, "-m", "caddie", "--mode", "rpc", "-e", "../cli/cli.py", *extra],
        caddie_root / "project",
        {"CADDIE_DIR": str(caddie_home), "CADDIE_SANDBOX": "off", "CADDIE_RPC_EOF_GRACE_S": "30"},
    )

    def as_caddie(text: str) -> str:
        text = text.replace(str(pi_agent), str(caddie_agent)).replace(str(pi_root), str(caddie_root))
        return text.replace("/.pi", "/.caddie").replace(".ts", ".py")

    pi_commands = json.loads(as_caddie(json.dumps(own(pi_data["commands"], "inline"))))
    extensions = ["cli_cmd", "proj_cmd", "sett_cmd", "user_cmd"]
    resources = ["pprompt", "uprompt", "cprompt", "skill:pskill", "skill:uskill", "skill:cliskill"]
    assert sorted(pi_commands) == sorted([*extensions, *resources])  # everything of the layout reached Pi
    assert own(caddie_data["commands"], "bundled") == pi_commands
    assert json.loads(as_caddie(json.dumps(own(pi_seen["commands"], "inline")))) == own(
        caddie_seen["commands"], "bundled"
    )
    pi_tools = json.loads(as_caddie(json.dumps(own(pi_seen["tools"], "inline"))))
    caddie_tools = own(caddie_seen["tools"], "bundled")
    assert set(pi_tools) - set(caddie_tools) == {"powershell"}  # a Windows tool caddie refuses
    assert {k: v for k, v in pi_tools.items() if k != "powershell"} == caddie_tools
