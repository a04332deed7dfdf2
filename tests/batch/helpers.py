"""Temp git repos whose committed ``faux-script.json`` drives each task's faux model, and task files."""

from __future__ import annotations

import io
import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from caddie.modes.batch import run_batch_command

SCRIPT = "faux-script.json"
MODEL = "faux/faux-1"


def tool(name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": name, "arguments": arguments}], **extra}


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return tool("bash", {"command": command}, **extra)


COMPLETE = [
    tool("write", {"path": "done.txt", "content": "done\n"}),
    tool("update_goal", {"status": "complete"}),
    "Done.",
]
SPEND = {"usage": {"input": 600, "output": 100}}
BUDGET = [bash("echo 1", **SPEND), bash("echo 2", **SPEND), bash("echo 3", **SPEND), "never"]
RUNAWAY = ["I will look into it.", "I will look into it.", "I will look into it.", "never"]
SLOW = [bash("touch started.txt; sleep 30"), "never"]
ERROR: list[Any] = []  # the first request fails: "No more faux responses queued"


def make_repo(path: Path, script: list[Any], files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True)
    (path / SCRIPT).write_text(json.dumps(script))
    for name, text in (files or {}).items():
        (path / name).write_text(text)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=path, check=True)
    return path


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def read_results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def batch(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_batch_command([*argv, "--model", MODEL], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def twenty_tasks(root: Path) -> tuple[Path, dict[str, str]]:
    """A batch of 20 tasks and the status each must end with."""
    repos = {
        "complete": make_repo(root / "r-complete", COMPLETE),
        "budget": make_repo(root / "r-budget", BUDGET),
        "runaway": make_repo(root / "r-runaway", RUNAWAY),
        "slow": make_repo(root / "r-slow", SLOW),
        "error": make_repo(root / "r-error", ERROR),
    }
    tasks: list[dict[str, Any]] = []
    expected: dict[str, str] = {}

    def add(kind: str, status: str, **extra: Any) -> None:
        task_id = f"t{len(tasks):02d}-{kind}"
        tasks.append(
            {"id": task_id, "repo": str(repos[kind.split("-")[0]]), "objective": f"task {task_id}", **extra}
        )
        expected[task_id] = status

    for _ in range(8):
        add("complete", "complete", check="test -f done.txt")
    for _ in range(3):
        add("budget", "budget", budget="1k")
    for _ in range(3):
        add("runaway", "runaway")
    for _ in range(2):
        add("complete-setup", "error", setup="echo preparing; exit 7")
    for _ in range(2):
        add("slow", "timeout", timeout="10s")  # room for the goal process to start on a busy machine
    for _ in range(2):
        add("error", "error")
    assert len(tasks) == 20
    return write_tasks(root / "tasks.jsonl", tasks), expected


def check_twenty(root: Path, expected: dict[str, str], results: Path, workdir: Path) -> list[dict[str, Any]]:
    """What a finished 20-task batch must have left: its results, workspaces and sessions."""
    records = read_results(results)
    assert [r["id"] for r in records] != [], "no results"
    assert sorted(r["id"] for r in records) == sorted(expected)  # one line per task
    by_id = {r["id"]: r for r in records}
    for task_id, status in expected.items():
        r = by_id[task_id]
        assert r["status"] == status, (task_id, r)
        assert r["workspace"] == str(workdir / "workspaces" / task_id)
        workspace = Path(r["workspace"])
        assert (workspace / ".git").is_dir()
        if "setup" in task_id:
            assert "setup exited 7" in r["detail"] and r["session"] is None and r["exit_code"] is None
            assert "preparing" in (workdir / "logs" / f"{task_id}.log").read_text()
            continue
        session = Path(r["session"])
        assert session.parent == workdir / "sessions" / task_id and session.exists()
        header = json.loads(session.read_text().splitlines()[0])
        assert header["type"] == "session" and header["cwd"] == str(workspace)
        assert r["tokens_in"] > 0 and r["attempts"] == 1
        assert not (workdir / "running" / f"{task_id}.json").exists()
        if status == "complete":
            assert r["exit_code"] == 0 and r["check_exit"] == 0
            assert r["diff_stat"] == "1 file changed, 1 insertion(+)"
            assert (workspace / "done.txt").read_text() == "done\n"
            assert '"status":"complete"' in session.read_text()
        elif status == "budget":
            assert r["exit_code"] == 3 and r["tokens_in"] + r["tokens_out"] == 1400
        elif status == "runaway":
            assert r["exit_code"] == 4 and '"status":"paused"' in session.read_text()
        elif status == "timeout":
            # the goal was running, and ended on the batch's SIGTERM as caddie ends on one: cleanly, 128 + 15
            assert (workspace / "started.txt").exists() and r["exit_code"] == 128 + signal.SIGTERM
            assert 6 <= r["duration_s"] < 30
        elif status == "error":
            assert r["exit_code"] == 4 and "paused" in r["detail"]
    for repo in root.glob("r-*"):  # the user's checkouts are never touched
        assert not (repo / "done.txt").exists()
        porcelain = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True)
        assert porcelain.stdout == ""
    return records


def goal_states(session: Path) -> list[dict[str, Any]]:
    """Every ``goal:state`` saved in a session file, oldest first."""
    states = []
    for line in session.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom" and entry.get("customType") == "goal:state":
            states.append(entry["data"])
    return states


def completions(session: Path) -> int:
    """How often the goal became complete (a state change, not every save of a complete goal)."""
    statuses = [s["status"] for s in goal_states(session)]
    return sum(
        1 for a, b in zip(["", *statuses], statuses, strict=False) if b == "complete" and a != "complete"
    )


def spend_cap_then_resume(tmp_path: Path, *extra: str) -> None:
    """A cap reached inside the first task stops it at its next budget check and starts nothing else; a
    re-run with a higher cap continues that task in its session and runs the rest."""
    spend = {"usage": {"input": 900, "output": 100}}
    script = [
        bash("sleep 1; echo 1", **spend),
        bash("sleep 1; echo 2", **spend),
        bash("sleep 1; echo 3", **spend),
        tool("update_goal", {"status": "complete"}, **spend),
        "Done.",
    ]
    repo = make_repo(tmp_path / "repo", script)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "repo": str(repo), "objective": f"task {i}"} for i in range(4)],
    )
    results = tmp_path / "tasks-results.jsonl"

    code, out, err = batch(str(tasks), "--workers", "1", "--total-budget", "1500", *extra)

    assert code == 3, err
    [first] = read_results(results)
    assert first["id"] == "t0" and first["status"] == "stopped"
    assert 2000 <= first["tokens_in"] + first["tokens_out"] < 4000  # stopped at its next budget check
    assert "spend cap reached" in err
    assert "not run (the spend cap was reached): t1, t2, t3" in out
    assert "run the same command again with a higher --total-budget to continue" in out
    [session] = (tmp_path / "tasks-results-work" / "sessions" / "t0").glob("*.jsonl")

    code, out, err = batch(str(tasks), "--workers", "1", "--total-budget", "1500", *extra)
    assert code == 3 and len(read_results(results)) == 1  # the cap still holds: nothing starts

    code, out, err = batch(str(tasks), "--workers", "2", "--total-budget", "1M", *extra)
    assert code == 0, err
    records = read_results(results)
    assert [r["status"] for r in records[1:]].count("complete") == 4
    latest = {r["id"]: r for r in records}
    assert latest["t0"]["session"] == str(session)  # continued in the same session
    assert latest["t0"]["attempts"] == 2
    assert completions(session) == 1 and len({s["id"] for s in goal_states(session)}) == 1
