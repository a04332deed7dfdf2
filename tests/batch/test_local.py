"""``caddie batch`` on the local pool: 20 tasks of every outcome, resume, a killed worker, the spend cap."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

from tests.batch.helpers import (
    bash,
    batch,
    check_twenty,
    completions,
    goal_states,
    make_repo,
    read_results,
    spend_cap_then_resume,
    tool,
    twenty_tasks,
    write_tasks,
)


def test_twenty_tasks_end_as_scripted_and_a_rerun_skips_them(tmp_path: Path, faux_env: Path) -> None:
    tasks, expected = twenty_tasks(tmp_path)
    results = tmp_path / "out" / "results.jsonl"

    code, out, err = batch(str(tasks), "--out", str(results), "--workers", "4")

    assert code == 1, err  # some tasks ended other than complete
    check_twenty(tmp_path, expected, results, tmp_path / "out" / "results-work")
    assert "caddie batch: 20 tasks; running on local pool, 4 workers" in err
    assert err.count("] t") == 20  # a plain line per finished task (stderr is not a terminal)
    for status, count in {"complete": 8, "budget": 3, "runaway": 3, "error": 4, "timeout": 2}.items():
        assert any(line.split()[:2] == [status, str(count)] for line in out.splitlines()), out

    code, out, err = batch(str(tasks), "--out", str(results), "--workers", "4")
    assert code == 1
    assert "20 tasks, 20 already finished" in err
    assert len(read_results(results)) == 20  # nothing ran again


def test_a_killed_goal_process_is_restarted_and_completes_exactly_once(
    tmp_path: Path, faux_env: Path
) -> None:
    script = [bash("touch started.txt; sleep 2"), tool("update_goal", {"status": "complete"}), "Done."]
    repo = make_repo(tmp_path / "repo", script)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": "victim", "repo": str(repo), "objective": "finish"}]
    )
    workdir = tmp_path / "tasks-results-work"
    outcome: list[tuple[int, str, str]] = []
    runner = threading.Thread(target=lambda: outcome.append(batch(str(tasks))))
    runner.start()
    started = workdir / "workspaces" / "victim" / "started.txt"
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.05)
    child = json.loads((workdir / "running" / "victim.json").read_text())["child_pid"]
    os.kill(child, signal.SIGKILL)
    runner.join(timeout=120)
    assert not runner.is_alive()

    code, _, err = outcome[0]
    assert code == 0, err
    [record] = read_results(tmp_path / "tasks-results.jsonl")
    assert record["status"] == "complete" and record["attempts"] == 2
    [session] = (workdir / "sessions" / "victim").glob("*.jsonl")  # the second run continued the first
    assert record["session"] == str(session)
    assert completions(session) == 1 and len({s["id"] for s in goal_states(session)}) == 1
    log = (workdir / "logs" / "victim.log").read_text()
    assert "killed by signal 9; resuming the goal" in log and f"(resuming {session.name})" in log


def test_the_spend_cap_stops_scheduling_and_a_rerun_continues(tmp_path: Path, faux_env: Path) -> None:
    spend_cap_then_resume(tmp_path)
