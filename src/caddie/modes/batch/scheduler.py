"""The batch's driver: which tasks still need to run, when a new one may start, and what is written."""

from __future__ import annotations

import collections
import signal
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from caddie.modes.batch.backends import Backend, Finished
from caddie.modes.batch.progress import Progress
from caddie.modes.batch.results import ResultsFile, is_final, spent
from caddie.modes.batch.tasks import Task
from caddie.modes.batch.worker import NOT_STARTED, TaskPaths, latest_session


@dataclass(slots=True)
class Outcome:
    records: dict[str, dict[str, Any]]  # the latest record of every task of the file
    not_run: list[str]  # never started (spend cap or Ctrl+C)
    stopped: list[str]  # started, then stopped by the batch: continue on the next run
    skipped: int  # already finished before this run
    spent: int
    stop_reason: str | None = None  # "cap", "interrupt" or "write"
    ran: list[str] = field(default_factory=list)
    write_error: str | None = None
    """Why the results file could not be written (a full disk): the batch stopped there."""


def _lost_record(finished: Finished, workdir: str) -> dict[str, Any]:
    paths = TaskPaths.of(workdir, finished.task.id)
    session = latest_session(paths.sessions)
    return {
        "id": finished.task.id,
        "status": "error",
        "exit_code": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost": 0.0,
        "duration_s": None,
        "check_exit": None,
        "check_tail": "",
        "session": str(session) if session else None,
        "workspace": str(paths.workspace),
        "diff_stat": "",
        "attempts": None,
        "detail": f"the task was lost: {finished.error}",
    }


class Scheduler:
    def __init__(
        self,
        tasks: list[Task],
        backend: Backend,
        results: ResultsFile,
        progress: Progress,
        workdir: str,
        total_budget: int | None,
        poll: float = 0.2,
    ) -> None:
        self.tasks = tasks
        self.backend = backend
        self.results = results
        self.progress = progress
        self.workdir = workdir
        self.total_budget = total_budget
        self.poll = poll
        self.stop_reason: str | None = None
        self.write_error: str | None = None
        self._interrupts = 0
        self._lock = threading.Lock()

    def interrupt(self) -> None:
        """Ctrl+C: the first stops scheduling and lets running goals end their turn; the second stops them
        now (their sessions stay resumable)."""
        with self._lock:
            self._interrupts += 1
            count = self._interrupts
        if count == 1:
            if self.stop_reason is None:
                self.stop_reason = "interrupt"
            self.backend.request_stop()
            self.progress.message(
                "stopping: no new task starts, running goals end after their current turn "
                "(Ctrl+C again to stop them now)"
            )
        elif count == 2:
            self.stop_reason = "interrupt"
            self.backend.request_kill()
            self.progress.message("stopping the running goals now; their sessions stay resumable")

    def run(self) -> Outcome:
        previous = self.results.load()
        ids = {t.id for t in self.tasks}
        records = {i: r for i, r in previous.items() if i in ids}
        todo = collections.deque(t for t in self.tasks if not is_final(records.get(t.id)))
        skipped = len(self.tasks) - len(todo)
        recorded = {t.id: spent(records.get(t.id)) for t in self.tasks}
        running: dict[str, Task] = {}
        ran: list[str] = []
        old_handler = None
        if threading.current_thread() is threading.main_thread():
            old_handler = signal.signal(signal.SIGINT, lambda *_: self.interrupt())
        self.progress.begin(len(self.tasks), skipped, self.backend.description)
        total = sum(recorded.values())
        self.backend.limit_spend(self.total_budget, total)  # every reply is charged before the next request
        try:
            while True:
                live = self.backend.live_spend() if running else {}
                total = sum(recorded.values()) + sum(live.get(i, 0) for i in running)
                if self.total_budget is not None and total >= self.total_budget and self.stop_reason is None:
                    self.stop_reason = "cap"
                    self.backend.request_stop()
                    self.progress.message(
                        f"spend cap reached ({total:,} of {self.total_budget:,} tokens): no new task starts, "
                        "running goals stop at their next budget check"
                    )
                while self.stop_reason is None and todo and len(running) < self.backend.capacity:
                    task = todo.popleft()
                    running[task.id] = task
                    ran.append(task.id)
                    self.backend.submit(task)
                if not running and (not todo or self.stop_reason is not None):
                    break
                for finished in self.backend.wait(self.poll):
                    record = finished.record or _lost_record(finished, self.workdir)
                    running.pop(finished.task.id, None)
                    if record.get("status") == NOT_STARTED:
                        todo.appendleft(finished.task)
                        ran.remove(finished.task.id)
                        continue
                    records[finished.task.id] = record
                    recorded[finished.task.id] = spent(record)
                    self._record(record)
                    self.progress.finished(record)
                self.progress.tick(len(running), total)
        finally:
            if old_handler is not None:
                signal.signal(signal.SIGINT, old_handler)
            self.progress.end()
        total = sum(recorded.values())
        stopped = [t.id for t in self.tasks if (records.get(t.id) or {}).get("status") == "stopped"]
        return Outcome(
            records=records,
            not_run=[t.id for t in todo],
            stopped=stopped,
            skipped=skipped,
            spent=total,
            stop_reason=self.stop_reason,
            ran=ran,
            write_error=self.write_error,
        )

    def _record(self, record: dict[str, Any]) -> None:
        """Append a task's line; when the results file cannot be written (a full disk) the batch stops at
        once: the running goals are stopped (their sessions stay resumable) and nothing new starts. A task
        whose line is not written simply runs again — continuing its session — on the next run."""
        if self.write_error is not None:
            return
        try:
            self.results.append(record)
        except OSError as e:
            self.write_error = f"cannot write {self.results.path}: {e.strerror or e}"
            self.stop_reason = "write"
            self.backend.request_kill()
            self.progress.message(
                "stopping: the results file cannot be written (the reason follows at the end)"
            )


def status_counts(records: dict[str, dict[str, Any]]) -> Counter[str]:
    return Counter(str(r.get("status")) for r in records.values())
