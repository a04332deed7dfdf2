"""Ctrl+C: scheduling stops, the running goal ends after its turn, the results file resumes the batch."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from caddie.modes.batch.progress import RichProgress
from tests.batch.helpers import bash, batch, completions, make_repo, read_results, tool, write_tasks


def test_ctrl_c_lets_the_running_goal_stop_and_a_rerun_finishes(tmp_path: Path, faux_env: Path) -> None:
    script = [
        bash("touch started.txt; sleep 1"),
        bash("sleep 1"),
        bash("sleep 1"),
        tool("update_goal", {"status": "complete"}),
        "Done.",
    ]
    repo = make_repo(tmp_path / "repo", script)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "repo": str(repo), "objective": f"task {i}"} for i in range(3)],
    )
    command = [
        sys.executable,
        "-m",
        "caddie",
        "batch",
        str(tasks),
        "--model",
        "faux/faux-1",
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = tmp_path / "tasks-results-work" / "workspaces" / "t0" / "started.txt"
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline and proc.poll() is None, "the first task never started"
        time.sleep(0.05)
    # a second batch on the same results file and work directory is refused, naming the one running
    code, second_out, second_err = batch(str(tasks), "--workers", "1")
    assert code == 2 and second_out == "" and len(second_err.splitlines()) == 1, second_err
    assert second_err.startswith(
        f"caddie batch: {tmp_path / 'tasks-results.jsonl'} is in use by another batch"
    )
    assert f"(pid {proc.pid}: " in second_err and " batch " in second_err
    code, _, second_err = batch(
        str(tasks), "--out", str(tmp_path / "other.jsonl"), "--workdir", str(tmp_path / "tasks-results-work")
    )
    assert code == 2 and f"{tmp_path / 'tasks-results-work' / '.caddie-batch.lock'} is in use" in second_err

    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, err
    assert "stopping: no new task starts, running goals end after their current turn" in err
    [record] = read_results(tmp_path / "tasks-results.jsonl")
    assert record["id"] == "t0" and record["status"] == "stopped" and record["exit_code"] == 4
    assert "not run (the batch was interrupted): t1, t2" in out
    assert not (tmp_path / "tasks-results-work" / "workspaces" / "t1").exists()
    session = Path(record["session"])
    assert completions(session) == 0

    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    latest = {r["id"]: r for r in read_results(tmp_path / "tasks-results.jsonl")}
    assert {r["status"] for r in latest.values()} == {"complete"}
    assert latest["t0"]["session"] == str(session) and completions(session) == 1
    assert os.path.exists(latest["t2"]["session"])


def test_the_live_bar_shows_counts_by_status_and_spend() -> None:
    err = io.StringIO()
    progress = RichProgress(err)  # a StringIO is no terminal: the text stays plain
    progress.begin(3, 1, "local pool, 2 workers")
    progress.tick(2, 1234)
    progress.finished({"id": "a", "status": "budget", "duration_s": 1.5, "tokens_in": 10, "tokens_out": 2})
    progress.finished({"id": "b", "status": "complete", "duration_s": 1.0, "tokens_in": 1, "tokens_out": 1})
    progress.tick(0, 2000)
    progress.end()
    text = err.getvalue()
    assert "caddie batch: 3 tasks, 1 already finished; running on local pool, 2 workers" in text
    assert (
        "a: budget in 1.5 s, 12 tokens" in text and "b: complete" not in text
    )  # only failures above the bar
    assert "3/3" in text and "2,000 tokens · 1 complete · 1 budget" in text
