"""``caddie -p --goal`` as a real subprocess: exit codes, goal events in ``--mode json``, and a SIGKILL mid-turn."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.goal.helpers import call, git_repo, open_session, say

CALC_BUG = "def add(a, b):\n    return a - b\n"
CALC_TEST = 'from calc import add\n\nassert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}"\n'


def tool(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": name, "arguments": arguments}], **extra}


def caddie(
    cwd: Path, script: list[Any], *args: str, popen: bool = False
) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
    script_file = cwd.parent / f"{cwd.name}-script.json"
    script_file.write_text(json.dumps(script))
    env = {**os.environ, "CADDIE_FAUX_SCRIPT": str(script_file), "NO_COLOR": "1"}
    command = [sys.executable, "-m", "caddie", "--model", "faux/faux-1", *args]
    if popen:
        return subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def session_files(caddie_dir: Path) -> list[Path]:
    return sorted((caddie_dir / "agent" / "sessions").rglob("*.jsonl"))


def test_json_mode_reports_goal_events_and_exits_0_once_the_check_passes(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "calc")
    (repo / "calc.py").write_text(CALC_BUG)
    (repo / "test_calc.py").write_text(CALC_TEST)
    check = f"{shlex.quote(sys.executable)} test_calc.py"
    script = [
        tool("update_goal", {"status": "complete"}),
        tool("edit", {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}),
        tool("update_goal", {"status": "complete"}),
        "Fixed add().",
    ]
    result = caddie(repo, script, "--mode", "json", "--goal", "make test_calc.py pass", "--goal-check", check)

    assert isinstance(result, subprocess.CompletedProcess)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    goal_events = [e["data"] for e in events if e["type"] == "extension_event" and e["name"] == "goal_state"]
    assert goal_events[0]["reason"] == "flag" and goal_events[0]["goal"]["check"] == check
    assert "complete" in [e["reason"] for e in goal_events]
    assert goal_events[-1]["goal"]["status"] == "complete"
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_print_mode_exits_3_when_the_budget_is_reached(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    spend = {"usage": {"input": 600, "output": 100, "cacheRead": 50_000}}
    script = [
        tool("bash", {"command": "echo 1"}, **spend),
        tool("bash", {"command": "echo 2"}, **spend),
        "never",
    ]
    result = caddie(project, script, "-p", "--goal", "count forever", "--goal-budget", "1k")

    assert isinstance(result, subprocess.CompletedProcess)
    assert result.returncode == 3, result.stderr
    assert "Goal budget reached: 1,400 of 1,000 tokens used" in result.stderr


async def test_a_run_killed_mid_turn_continues_exactly_once_when_reopened(
    tmp_path: Path, isolated_caddie_dir: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = [tool("bash", {"command": "echo started"}), {"text": "a slow answer " * 200, "delayMs": 50}]
    proc = caddie(project, script, "-p", "--goal", "keep the build green", popen=True)
    assert isinstance(proc, subprocess.Popen)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            files = session_files(isolated_caddie_dir)
            if files and '"role":"toolResult"' in files[0].read_text():
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the tool result never reached the session file")
        time.sleep(0.2)  # the slow answer is streaming now
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    [path] = session_files(isolated_caddie_dir)

    headless = await open_session(project, mode="print", session="file", session_file=str(path))
    await headless.idle()
    assert not headless.requests  # a headless reopen has no editor: it does not resume
    await headless.close()

    gs = await open_session(
        project,
        mode="tui",
        session="file",
        session_file=str(path),
        steps=[call("update_goal", {"status": "complete"}), say("done"), say("never")],
    )
    await gs.idle()
    resumes = [c for c in gs.continuations() if c.details["kind"] == "resume"]
    assert len(resumes) == 1 and len(gs.requests) == 2
    assert gs.goal()["status"] == "complete"
    await gs.close()

    again = await open_session(
        project, mode="tui", session="file", session_file=str(path), steps=[say("never")]
    )
    await again.idle()
    assert not again.requests
