"""``caddie batch --ray`` on a local Ray instance (one ``ray.init(num_cpus=2)`` for the module)."""

from __future__ import annotations

import importlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caddie.modes.batch.backends import BatchControlActor, RayControl
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
from tests.support import extras

os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # read on import: workers use this Python
pytestmark = pytest.mark.extra("ray")  # skipped without the ray extra (failed under CI=1)
ray: Any = None


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    global ray
    if not extras.installed("ray"):
        yield  # the tests themselves skip (or fail in CI) with the reason
        return
    ray = importlib.import_module("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_twenty_tasks_on_ray(tmp_path: Path, faux_env: Path) -> None:
    tasks, expected = twenty_tasks(tmp_path)
    results = tmp_path / "results.jsonl"

    code, out, err = batch(str(tasks), "--out", str(results), "--ray")

    assert code == 1, err
    assert any(line.split()[:2] == ["complete", "8"] for line in out.splitlines()), out
    check_twenty(tmp_path, expected, results, tmp_path / "results-work")
    assert "running on local Ray, 2 CPUs, 2 tasks at a time" in err
    assert ray.is_initialized()  # the batch joined the instance it found and left it running

    code, _, err = batch(str(tasks), "--out", str(results), "--ray")
    assert "20 tasks, 20 already finished" in err and len(read_results(results)) == 20


def test_a_killed_ray_worker_is_retried_and_the_task_completes_once(tmp_path: Path, faux_env: Path) -> None:
    script = [bash("touch started.txt; sleep 2"), tool("update_goal", {"status": "complete"}), "Done."]
    repo = make_repo(tmp_path / "repo", script)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl", [{"id": "victim", "repo": str(repo), "objective": "finish"}]
    )
    workdir = tmp_path / "tasks-results-work"
    outcome: list[tuple[int, str, str]] = []
    runner = threading.Thread(target=lambda: outcome.append(batch(str(tasks), "--ray")))
    runner.start()
    started = workdir / "workspaces" / "victim" / "started.txt"
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.05)
    running = json.loads((workdir / "running" / "victim.json").read_text())
    assert running["worker_pid"] != os.getpid()  # a Ray worker process, not the driver
    os.kill(running["worker_pid"], signal.SIGKILL)
    runner.join(timeout=120)
    assert not runner.is_alive()

    code, _, err = outcome[0]
    assert code == 0, err
    [record] = read_results(tmp_path / "tasks-results.jsonl")
    assert record["status"] == "complete" and record["attempts"] == 2
    [session] = (workdir / "sessions" / "victim").glob("*.jsonl")
    assert record["session"] == str(session)
    assert completions(session) == 1 and len({s["id"] for s in goal_states(session)}) == 1
    with pytest.raises(ProcessLookupError):  # the goal process of the dead worker died with it
        os.kill(running["child_pid"], 0)
    runs = [ln for ln in (workdir / "logs" / "victim.log").read_text().splitlines() if ln.startswith("--- ")]
    assert len(runs) == 2 and all(ln.endswith("(Ray task caddie:victim)") for ln in runs)  # named by id


class CountingControl(BatchControlActor):
    """The batch's control actor, counting the calls it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    async def wait_for(self, name: str) -> bool:
        self._count(f"wait_for {name}")
        return await super().wait_for(name)

    async def charge(self, task_id: str, tokens: int) -> bool:
        self._count("charge")
        return await super().charge(task_id, tokens)

    async def counted(self) -> dict[str, int]:
        return dict(self.calls)


def test_asking_whether_to_stop_creates_no_ray_tasks() -> None:
    """A task's worker asks about stop and kill often (every poll); that costs one pending actor call per
    signal for the whole task, not one Ray task per poll. A reply is one call (its charge)."""
    actor = ray.remote(num_cpus=0)(CountingControl).remote()
    ray.get(actor.limit.remote(1000, 0))
    control = RayControl(actor)
    for _ in range(200):
        assert not control.stop_requested() and not control.kill_requested()
    assert control.charge("t", 600) is True
    assert control.charge("t", 600) is False  # the cap: stop
    deadline = time.monotonic() + 10
    while not control.stop_requested():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not control.kill_requested()
    control.close()
    assert ray.get(actor.counted.remote()) == {"wait_for stop": 1, "wait_for kill": 1, "charge": 2}


def test_the_spend_cap_stops_ray_tasks_and_a_rerun_continues(tmp_path: Path, faux_env: Path) -> None:
    spend_cap_then_resume(tmp_path, "--ray")
