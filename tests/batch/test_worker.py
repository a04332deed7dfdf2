"""How a goal run's ending maps to a task status, and workspaces from a URL at a branch."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from caddie.modes.batch.worker import ChildOutcome, classify
from tests.batch.helpers import COMPLETE, batch, make_repo, read_results, write_tasks


def outcome(code: int | None, status: str | None = None, **extra: Any) -> ChildOutcome:
    fields: dict[str, Any] = {
        "exit_code": code,
        "signal": None if code is not None else 9,
        "goal": {"status": status} if status else None,
        "goal_reason": extra.pop("reason", None),
        "runaway": False,
        "stopped": False,
        "killed": False,
        "timed_out": False,
        "max_rss_kb": 0,
        "stderr_tail": "",
    }
    fields.update(extra)
    return ChildOutcome(**fields)


@pytest.mark.parametrize(
    ("result", "status", "detail"),
    [
        (outcome(0, "complete"), "complete", None),
        (outcome(3, "budget_limited"), "budget", None),
        (outcome(2, "blocked"), "blocked", None),
        (outcome(2), "error", "caddie exited 2"),  # a mistake in the --goal options
        (outcome(4, "paused", reason="runaway"), "runaway", None),
        (outcome(4, "paused", runaway=True, reason="paused"), "runaway", None),
        (outcome(4, "paused", reason="error"), "error", "goal paused (error)"),
        (outcome(5, "usage_limited"), "error", "usage limits (rate limit, quota or billing)"),
        (outcome(4, "active", stopped=True), "stopped", "stopped by the batch before the goal ended"),
        (outcome(0, "complete", stopped=True), "complete", None),  # finished before the stop landed
        (outcome(None, timed_out=True), "timeout", "the task ran past its timeout"),
        (outcome(None, killed=True), "stopped", "interrupted (Ctrl+C)"),
        (outcome(None), "error", "caddie was killed by signal 9"),
        (outcome(70), "error", "caddie exited 70"),
    ],
)
def test_classify(result: ChildOutcome, status: str, detail: str | None) -> None:
    assert classify(result) == (status, detail)


def test_a_url_repo_is_cloned_at_its_branch(tmp_path: Path, faux_env: Path) -> None:
    repo = make_repo(tmp_path / "repo", COMPLETE)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "checkout", "-qb", "feature"], cwd=repo, check=True)
    (repo / "feature.txt").write_text("on the branch\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "feature"], cwd=repo, check=True)
    subprocess.run([*git, "checkout", "-q", "-"], cwd=repo, check=True)
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        [
            {"id": "a", "repo": f"file://{repo}", "ref": "feature", "objective": "x"},
            {"id": "b", "repo": f"file://{repo}", "ref": "no-such-branch", "objective": "x"},
        ],
    )
    code, _, err = batch(str(tasks))
    assert code == 1, err
    records = {r["id"]: r for r in read_results(tmp_path / "t-results.jsonl")}
    assert records["a"]["status"] == "complete" and records["a"]["check_exit"] is None
    assert (Path(records["a"]["workspace"]) / "feature.txt").exists()
    assert records["b"]["status"] == "error" and "ref 'no-such-branch' not found" in records["b"]["detail"]


def _sleeping(seconds: str) -> list[int]:
    """Live processes running ``sleep SECONDS`` (found by command line: a sandboxed task's ``$!`` is a PID in
    its own namespace, not the host's)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and (entry / "cmdline").read_bytes() == f"sleep\0{seconds}\0".encode()
                and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
            ):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_timeouts_cover_setup_and_the_final_check_and_kill_what_they_started(
    tmp_path: Path, faux_env: Path
) -> None:
    """A setup that hangs is killed with its whole process group; the final check (run again by the batch
    after the goal) is cut at the task's timeout too, not after the batch's own 5-minute check limit."""
    repo = make_repo(tmp_path / "repo", COMPLETE)
    hang = "sleep {seconds} & wait"
    once_then_hang = (
        "test -f done.txt && if [ -f checked ]; then "
        + hang.format(seconds="301.5")
        + "; else touch checked; fi"
    )
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {
                "id": "setup",
                "repo": str(repo),
                "objective": "x",
                "setup": hang.format(seconds="300.5"),
                "timeout": "3s",
            },
            {"id": "check", "repo": str(repo), "objective": "x", "check": once_then_hang, "timeout": "12s"},
        ],
    )
    started = time.monotonic()
    code, _, err = batch(str(tasks), "--workers", "2")
    assert time.monotonic() - started < 40, err
    assert code == 1, err
    by_id = {r["id"]: r for r in read_results(tmp_path / "tasks-results.jsonl")}
    assert by_id["setup"]["status"] == "timeout" and by_id["setup"]["detail"] == "setup timed out"
    assert by_id["check"]["status"] == "timeout", by_id["check"]
    assert by_id["check"]["detail"] == "the final check ran past the task's timeout"
    assert by_id["check"]["duration_s"] < 30
    for name, seconds in (("setup", "300.5"), ("check", "301.5")):  # dead, sandboxed or not
        assert _sleeping(seconds) == [], f"{name}'s background sleep survived its timeout"
