"""``caddie batch`` on the local pool: 20 tasks of every outcome, resume, a killed worker, the spend cap."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.batch.helpers import (
    COMPLETE,
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
from tests.interop.pi import skip_or_fail


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


def test_the_spend_cap_holds_with_instant_replies(tmp_path: Path, faux_env: Path) -> None:
    """Replies that come faster than any polling: every reply is charged before its task's next request, so
    the spend passes the cap by at most one reply per running task (2,500 + 2 × 700)."""
    reply = {"usage": {"input": 600, "output": 100}}
    repo = make_repo(tmp_path / "repo", [bash(f"echo {i}", **reply) for i in range(40)])
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "repo": str(repo), "objective": f"task {i}"} for i in range(6)],
    )
    code, _, err = batch(str(tasks), "--workers", "2", "--total-budget", "2500")
    assert code == 3, err
    records = read_results(tmp_path / "tasks-results.jsonl")
    spent = sum(r["tokens_in"] + r["tokens_out"] for r in records)
    assert 2500 <= spent <= 2500 + 2 * 700, (spent, records)
    assert {r["status"] for r in records} == {"stopped"}


DISK_FULL_RUN = """
set -u
mount -t tmpfs -o size=8k tmpfs "$OUT" || exit 97
printf '%s\\n' "$OLD_LINE" > "$OUT/results.jsonl"
head -c 4096 /dev/zero > "$OUT/filler"  # one page of two: the results file keeps what is left of its own
"$PYTHON" -m caddie batch "$TASKS" --model faux/faux-1 --workers 1 --out "$OUT/results.jsonl" \\
  --workdir "$WORK" >"$SAVE/out1" 2>"$SAVE/err1"
echo $? > "$SAVE/code1"
cp "$OUT/results.jsonl" "$SAVE/after-full.jsonl"
rm "$OUT/filler"
"$PYTHON" -m caddie batch "$TASKS" --model faux/faux-1 --workers 1 --out "$OUT/results.jsonl" \\
  --workdir "$WORK" >"$SAVE/out2" 2>"$SAVE/err2"
echo $? > "$SAVE/code2"
cp "$OUT/results.jsonl" "$SAVE/final.jsonl"
"""


def test_a_full_disk_under_out_is_one_line_and_loses_nothing(tmp_path: Path, faux_env: Path) -> None:
    """The results file on a file system that fills up (a tmpfs of two pages, in a user and mount namespace
    of its own): one clear line, a non-zero exit, every line written before intact, and a re-run with room
    again finishes the batch."""
    if shutil.which("unshare") is None:
        skip_or_fail("needs unshare (util-linux) to mount a small tmpfs")
    repo = make_repo(tmp_path / "repo", COMPLETE)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{i}", "repo": str(repo), "objective": f"task {i}"} for i in range(2)],
    )
    out, save = tmp_path / "out", tmp_path / "save"
    out.mkdir()
    save.mkdir()
    old_line = json.dumps({"id": "from-an-older-file", "status": "complete", "detail": "x" * 3700})
    env = {
        **os.environ,
        "OUT": str(out),
        "SAVE": str(save),
        "TASKS": str(tasks),
        "WORK": str(tmp_path / "work"),
        "PYTHON": sys.executable,
        "OLD_LINE": old_line,
    }
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", DISK_FULL_RUN], env=env, capture_output=True, timeout=240
    )
    if done.returncode != 0 or not (save / "code1").exists():
        skip_or_fail(f"cannot mount a tmpfs in a user namespace here: {done.stderr.decode()[-300:]}")

    err1 = (save / "err1").read_text()
    assert int((save / "code1").read_text()) == 1, err1
    assert "Traceback" not in err1 and "internal error" not in err1
    [line] = [
        ln for ln in err1.splitlines() if "No space left on device" in ln and ln.startswith("caddie batch: ")
    ]
    assert f"cannot write {out / 'results.jsonl'}: No space left on device" in line
    assert "run the same command again to continue" in line
    assert (save / "after-full.jsonl").read_text() == old_line + "\n"  # intact, no fragment after it

    assert int((save / "code2").read_text()) == 0, (save / "err2").read_text()
    final = (save / "final.jsonl").read_text().splitlines()
    assert final[0] == old_line
    assert sorted(json.loads(ln)["id"] for ln in final[1:]) == ["t0", "t1"]
    assert {json.loads(ln)["status"] for ln in final[1:]} == {"complete"}
