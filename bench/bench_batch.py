"""Benchmark: scheduling overhead of ``caddie batch`` per task, on the local pool and on local Ray, and
memory and storage per task.

    uv run python bench/bench_batch.py [--tasks 200] [--workers 2] [--backends local,ray]

Every task is the same instant goal (the faux model completes it in one reply, no check), in a clone of a
small repo, so the batch's own cost is what is left over. For each backend:

- wall: the batch's run from first submission to the last result written (the Scheduler's run);
- task time: the sum of every task's own duration as its worker measured it (clone, goal process, diff);
- overhead: wall × workers − task time, i.e. slot time not spent inside a task (dispatch, waiting for a
  result to be noticed, writing results) — per task and as a share of the task time.

Ray runs on ``ray.init(num_cpus=workers)`` started once before the batch (its start-up is reported apart,
as on a cluster it is paid once). Memory: peak RSS of each task's goal process (from wait4), the RSS of the
process that runs it (the driver for the local pool, the Ray worker for Ray), sampled every 0.2 s. Storage:
bytes per task of session file, log, results line and workspace. Target (issue 18): a 200-task batch adds
under 10% over the sum of the tasks' own run times on 2 cores. Results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SCRIPT = [{"toolCalls": [{"name": "update_goal", "arguments": {"status": "complete"}}]}, "Done."]


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "faux-script.json").write_text(json.dumps(SCRIPT))
    for i in range(20):  # a small project: 20 source files
        (path / f"mod{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n" * 20)
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q"], cwd=path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=path, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=path, check=True)
    return path


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Peak RSS of every process that runs a task (worker_pid of running/<id>.json)."""

    def __init__(self, running: Path) -> None:
        super().__init__(daemon=True)
        self.running = running
        self.peak: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for f in self.running.glob("*.json"):
                try:
                    pid = json.loads(f.read_text())["worker_pid"]
                except (OSError, ValueError, KeyError):
                    continue
                self.peak[pid] = max(self.peak.get(pid, 0), rss_kb(pid))


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def run_backend(name: str, root: Path, tasks: int, workers: int) -> dict[str, Any]:
    from caddie.modes.batch.backends import Backend, LocalBackend, RayBackend
    from caddie.modes.batch.progress import PlainProgress
    from caddie.modes.batch.results import ResultsFile
    from caddie.modes.batch.scheduler import Scheduler
    from caddie.modes.batch.tasks import load_tasks
    from caddie.modes.batch.worker import RunSettings

    base = root / name
    base.mkdir()
    repo = make_repo(base / "repo")
    tasks_file = base / "tasks.jsonl"
    tasks_file.write_text(
        "".join(
            json.dumps({"id": f"t{i:05d}", "repo": str(repo), "objective": "finish"}) + "\n"
            for i in range(tasks)
        )
    )
    workdir = base / "work"
    env = {k: v for k, v in os.environ.items() if k.startswith("CADDIE_")}
    settings = RunSettings(workdir=str(workdir), model="faux/faux-1", env=env)
    init_seconds = 0.0
    backend: Backend
    if name == "ray":
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        init_seconds = time.perf_counter() - t0
        backend = RayBackend(settings, None, workers, 1.0, None, 2)
    else:
        backend = LocalBackend(settings, workers)
    (workdir / "running").mkdir(parents=True, exist_ok=True)
    sampler = Sampler(workdir / "running")
    sampler.start()
    results = base / "results.jsonl"
    scheduler = Scheduler(
        load_tasks(tasks_file),
        backend,
        ResultsFile(results),
        PlainProgress(io.StringIO()),
        str(workdir),
        None,
    )
    t0 = time.perf_counter()
    outcome = scheduler.run()
    wall = time.perf_counter() - t0
    sampler.done.set()
    backend.close()
    if name == "ray":
        import ray

        ray.shutdown()
    records = list(outcome.records.values())
    statuses = {r["status"] for r in records}
    assert statuses == {"complete"} and len(records) == tasks, statuses
    task_time = sum(r["duration_s"] for r in records)
    overhead = wall * workers - task_time
    sessions = du(workdir / "sessions") / tasks
    logs = du(workdir / "logs") / tasks
    workspaces = du(workdir / "workspaces") / tasks
    line = results.stat().st_size / tasks
    workers_rss = sorted(sampler.peak.values())
    return {
        "backend": name,
        "tasks": tasks,
        "workers": workers,
        "ray_init_s": round(init_seconds, 2),
        "wall_s": round(wall, 2),
        "task_time_s": round(task_time, 2),
        "median_task_s": round(statistics.median(r["duration_s"] for r in records), 3),
        "overhead_per_task_ms": round(1000 * overhead / tasks, 1),
        "overhead_pct": round(100 * overhead / task_time, 2),
        "goal_process_rss_mb_median": statistics.median(r["max_rss_mb"] for r in records),
        "runner_rss_mb_median": round(statistics.median(workers_rss) / 1024, 1) if workers_rss else None,
        "runner_processes": len(workers_rss),
        "bytes_per_task": {
            "session": round(sessions),
            "log": round(logs),
            "results_line": round(line),
            "workspace": round(workspaces),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backends", default="local,ray")
    args = parser.parse_args()
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    with tempfile.TemporaryDirectory(prefix="caddie-bench-batch-") as tmp:
        root = Path(tmp)
        os.environ["CADDIE_DIR"] = str(root / "home")
        os.environ["CADDIE_FAUX_SCRIPT"] = "faux-script.json"
        for name in args.backends.split(","):
            print(json.dumps(run_backend(name, root, args.tasks, args.workers)), flush=True)


if __name__ == "__main__":
    main()
