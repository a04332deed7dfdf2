"""``project_trust`` handlers in RPC mode, real Pi 0.84.4 beside caddie: the context says ``rpc`` with no UI,
dialogs answer at once (confirm False, select nothing) rather than reaching the RPC client, and a notice goes
to stderr. Both get the same handler and the same project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.interop.pi import PI_PACKAGE, require_pi

PI_HANDLER = """
export default function (pi: any) {
  pi.on("project_trust", async (event: any, ctx: any) => {
    const answer = await ctx.ui.confirm("Trust?", event.cwd);
    const picked = await ctx.ui.select("Pick", ["a", "b"]);
    console.error("SEEN " + JSON.stringify({ mode: ctx.mode, hasUI: ctx.hasUI, answer, picked: picked ?? null }));
    ctx.ui.notify("trust notice", "warning");
    return { trusted: "undecided" };
  });
}
"""

CADDIE_HANDLER = """
import json, sys
from caddie.extensions.api import ProjectTrustResult

def register(api):
    async def decide(event, ctx):
        answer = await ctx.ui.confirm("Trust?", event.cwd)
        picked = await ctx.ui.select("Pick", ["a", "b"])
        seen = {"mode": ctx.mode, "hasUI": ctx.has_ui, "answer": answer, "picked": picked}
        print("SEEN " + json.dumps(seen, separators=(",", ":")), file=sys.stderr)
        ctx.ui.notify("trust notice", "warning")
        return ProjectTrustResult("undecided")
    api.on("project_trust", decide)
"""


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    done = subprocess.run(
        command, cwd=cwd, env={**os.environ, **env}, input="", capture_output=True, text=True, timeout=120
    )
    return done.stdout, done.stderr


def seen(stderr: str) -> dict[str, object]:
    line = next(line for line in stderr.splitlines() if line.startswith("SEEN "))
    return json.loads(line.removeprefix("SEEN "))


def test_project_trust_in_rpc_mode_has_no_dialogs_as_in_pi(tmp_path: Path) -> None:
    node = require_pi()
    project = tmp_path / "project"
    (project / ".pi" / "extensions").mkdir(parents=True)  # code to trust: Pi asks project_trust
    (project / ".pi" / "extensions" / "local.ts").write_text("export default function (pi: any) {}\n")
    (project / ".caddie" / "extensions").mkdir(parents=True)  # and caddie
    (project / ".caddie" / "extensions" / "local.py").write_text("def register(api):\n    pass\n")
    (tmp_path / "trust.ts").write_text(PI_HANDLER)
    (tmp_path / "trust.py").write_text(CADDIE_HANDLER)

    pi_out, pi_err = run(
        [node, str(PI_PACKAGE / "dist" / "cli.js"), "--mode", "rpc", "-e", str(tmp_path / "trust.ts")],
        project,
        {"PI_CODING_AGENT_DIR": str(tmp_path / "pi-agent")},
    )
    caddie_out, caddie_err = run(
        [sys.executable, "-m", "caddie", "--mode", "rpc", "-e", str(tmp_path / "trust.py")],
        project,
        {"CADDIE_DIR": str(tmp_path / "caddie-home"), "CADDIE_SANDBOX": "off"},
    )
    expected = {"mode": "rpc", "hasUI": False, "answer": False, "picked": None}
    assert seen(pi_err) == expected
    assert seen(caddie_err) == expected
    assert "trust notice" in pi_err.splitlines() and "trust notice" in caddie_err.splitlines()
    for out in (pi_out, caddie_out):  # no dialog reached the client
        assert '"method":"confirm"' not in out and '"method":"select"' not in out
