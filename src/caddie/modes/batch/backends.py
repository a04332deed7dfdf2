"""Where tasks run: a local pool (default) or Ray. Both take a task, run ``worker.run_task`` somewhere, and
hand back its record as soon as it ends; both carry live spend and the stop/kill signals to running tasks."""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import importlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from caddie.modes.batch.tasks import BatchError, Task
from caddie.modes.batch.worker import RunSettings, run_task

SPEND_REFRESH_S = 2.0
"""How often the driver asks Ray's control actor for the live spend (for the progress line)."""


@dataclass(slots=True)
class Finished:
    task: Task
    record: dict[str, Any] | None
    error: str | None = None  # the task could not run at all (a worker lost past its retries, …)


class Backend(Protocol):
    capacity: int
    description: str

    def submit(self, task: Task) -> None: ...

    def wait(self, timeout: float) -> list[Finished]: ...

    def live_spend(self) -> dict[str, int]: ...

    def limit_spend(self, cap: int | None, already: int) -> None:
        """The spend cap, and what tasks of the file spent in earlier runs: from now on every reply is
        charged against ``cap`` before its task may make another request."""
        ...

    def request_stop(self) -> None: ...

    def request_kill(self) -> None: ...

    def close(self) -> None: ...


class SpendLedger:
    """Live spend per task against the batch's cap: the one rule both controls (local, Ray actor) apply."""

    def __init__(self) -> None:
        self.spend: dict[str, int] = {}
        self.total = 0
        self.cap: int | None = None
        self.stop = False
        self.kill = False

    def limit(self, cap: int | None, already: int) -> None:
        self.cap = cap
        self.total = already + sum(self.spend.values())

    def charge(self, task_id: str, tokens: int) -> bool:
        """Count a reply; False (and stop everything) once the cap is reached."""
        self.spend[task_id] = self.spend.get(task_id, 0) + tokens
        self.total += tokens
        if self.cap is not None and self.total >= self.cap:
            self.stop = True
        return not self.stop


class LocalControl:
    """Shared by the scheduler and the pool's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ledger = SpendLedger()
        self._stop = threading.Event()
        self._kill = threading.Event()

    def limit(self, cap: int | None, already: int) -> None:
        with self._lock:
            self._ledger.limit(cap, already)

    def charge(self, task_id: str, tokens: int) -> bool:
        with self._lock:
            go = self._ledger.charge(task_id, tokens)
        if not go:
            self._stop.set()
        return go

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._ledger.spend)

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def kill_requested(self) -> bool:
        return self._kill.is_set()

    def request_stop(self) -> None:
        self._stop.set()

    def request_kill(self) -> None:
        self._stop.set()
        self._kill.set()


class LocalBackend:
    """A pool of ``workers`` slots on this machine; each task's goal is its own child process."""

    def __init__(self, settings: RunSettings, workers: int) -> None:
        self.settings = settings
        self.capacity = workers
        self.description = f"local pool, {workers} worker{'s' if workers != 1 else ''}"
        self.control = LocalControl()
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="caddie-batch")
        self._futures: dict[cf.Future[dict[str, Any]], Task] = {}

    def submit(self, task: Task) -> None:
        self._futures[self._pool.submit(run_task, task, self.settings, self.control)] = task

    def wait(self, timeout: float) -> list[Finished]:
        if not self._futures:
            time.sleep(timeout)
            return []
        done, _ = cf.wait(list(self._futures), timeout=timeout, return_when=cf.FIRST_COMPLETED)
        out = []
        for future in done:
            task = self._futures.pop(future)
            try:
                out.append(Finished(task, future.result()))
            except Exception as e:  # a bug in the worker: the task is an error, the batch goes on
                out.append(Finished(task, None, f"{type(e).__name__}: {e}"))
        return out

    def live_spend(self) -> dict[str, int]:
        return self.control.snapshot()

    def limit_spend(self, cap: int | None, already: int) -> None:
        self.control.limit(cap, already)

    def request_stop(self) -> None:
        self.control.request_stop()

    def request_kill(self) -> None:
        self.control.request_kill()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


# ------------------------------------------------------------------------------------------------------
# Ray


class BatchControlActor:
    """One per batch, on the cluster (named so in Ray's dashboard): running tasks charge each reply here
    (one actor call per reply); the stop and kill signals are awaited, not polled — each task run makes one
    ``wait_for`` call per signal and checks it locally with ``ray.wait(timeout=0)``, so waiting creates no
    Ray tasks."""

    def __init__(self) -> None:
        self.ledger = SpendLedger()
        self._events: dict[str, asyncio.Event] = {}

    def _event(self, name: str) -> asyncio.Event:
        if name not in self._events:
            self._events[name] = asyncio.Event()
        return self._events[name]

    def _update(self) -> None:
        if self.ledger.stop:
            self._event("stop").set()
        if self.ledger.kill:
            self._event("kill").set()

    async def limit(self, cap: int | None, already: int) -> None:
        self.ledger.limit(cap, already)
        self._update()

    async def charge(self, task_id: str, tokens: int) -> bool:
        go = self.ledger.charge(task_id, tokens)
        self._update()
        return go

    async def snapshot(self) -> dict[str, int]:
        return dict(self.ledger.spend)

    async def set_flags(self, stop: bool, kill: bool) -> None:
        self.ledger.stop = self.ledger.stop or stop
        self.ledger.kill = self.ledger.kill or kill
        self._update()

    async def wait_for(self, name: str) -> bool:
        """Returns once the batch stops (``"stop"``) or kills (``"kill"``) its tasks."""
        await self._event(name).wait()
        return True


class RayControl:
    """The worker side of the control actor: a charge per reply; the stop and kill signals are one pending
    actor call each, checked without a round trip."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self._waits: dict[str, Any] = {}
        self._seen: set[str] = set()

    def charge(self, task_id: str, tokens: int) -> bool:
        ray: Any = importlib.import_module("ray")
        try:
            go: bool = ray.get(self.actor.charge.remote(task_id, tokens), timeout=60)
        except Exception:  # the driver is gone: nobody can say the cap allows more
            return False
        return go

    def _signalled(self, name: str) -> bool:
        if name in self._seen:
            return True
        ray: Any = importlib.import_module("ray")
        if name not in self._waits:
            self._waits[name] = self.actor.wait_for.remote(name)
        try:
            ready, _ = ray.wait([self._waits[name]], timeout=0)
        except Exception:  # the driver is gone: keep going as told last
            return False
        if ready:
            self._seen.add(name)
        return bool(ready)

    def stop_requested(self) -> bool:
        return self._signalled("stop")

    def kill_requested(self) -> bool:
        return self._signalled("kill")

    def close(self) -> None:
        """Cancel the waits still pending in the actor (the task is over)."""
        ray: Any = importlib.import_module("ray")
        for name, ref in self._waits.items():
            if name not in self._seen:
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
        self._waits.clear()


def ray_run_task(task: dict[str, Any], settings: RunSettings, actor: Any) -> dict[str, Any]:
    """The Ray task (named ``caddie:<task id>`` in Ray's dashboard): a plain function, so a worker imports it
    from the installed ``caddie`` package."""
    ray: Any = importlib.import_module("ray")
    control = RayControl(actor)
    try:
        name = ray.get_runtime_context().get_task_name()
        return run_task(Task.from_json(task), settings, control, f"Ray task {name}")
    finally:
        control.close()


class RayBackend:
    """Tasks as Ray tasks: ``num_cpus``/``memory`` per task, retried by Ray when their worker dies."""

    def __init__(
        self,
        settings: RunSettings,
        address: str | None,
        workers: int | None,
        task_cpus: float,
        task_memory: int | None,
        max_retries: int,
    ) -> None:
        # Under `uv run`, Ray would start each worker with `uv run` in a packaged copy of the current
        # directory (a fresh virtualenv per worker node); the tasks need the caddie this driver runs. Ray
        # reads this when it is imported.
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        try:
            ray: Any = importlib.import_module("ray")  # optional extra; typed loosely so mypy needs no Ray
        except ImportError:
            raise BatchError(
                "--ray needs Ray: install the extra with pip install 'caddie-agent[ray]' "
                "(or uv sync --extra ray in a checkout)"
            ) from None
        self._ray: Any = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            try:
                ray.init(
                    address=address or None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise BatchError(
                    f"cannot start or join Ray at {address or 'a local instance'}: {e}"
                ) from None
        cpus = float(ray.cluster_resources().get("CPU", 1))
        self.capacity = workers or max(1, int(cpus // task_cpus))
        where = f"Ray at {address}" if address else "local Ray"
        self.description = f"{where}, {cpus:g} CPUs, {self.capacity} tasks at a time"
        self.settings = settings
        self._actor: Any = ray.remote(num_cpus=0)(BatchControlActor).remote()
        self._options: dict[str, Any] = {"num_cpus": task_cpus, "max_retries": max_retries}
        if task_memory:
            self._options["memory"] = task_memory
        self._remote: Any = ray.remote(ray_run_task)
        self._refs: dict[Any, Task] = {}
        self._spend: dict[str, int] = {}
        self._spend_at = 0.0
        self._stop_wait: Any = None
        self._stop_seen = False

    def submit(self, task: Task) -> None:
        ref = self._remote.options(**self._options, name=f"caddie:{task.id}").remote(
            task.to_json(), self.settings, self._actor
        )
        self._refs[ref] = task

    def wait(self, timeout: float) -> list[Finished]:
        if not self._refs:
            time.sleep(timeout)
            return []
        ray = self._ray
        refs = list(self._refs)
        done, _ = ray.wait(refs, num_returns=1, timeout=timeout)
        if done:  # take everything else that is ready too
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
        out = []
        for ref in done:
            task = self._refs.pop(ref)
            try:
                out.append(Finished(task, ray.get(ref)))
            except Exception as e:  # lost past its retries, or a bug in the worker
                message = str(e).strip().splitlines()
                out.append(Finished(task, None, f"{type(e).__name__}: {message[0] if message else ''}"))
        return out

    def live_spend(self) -> dict[str, int]:
        """The control actor's spend, asked at most every ``SPEND_REFRESH_S`` — and at once when the cap
        stops the batch — so a long batch does not fill Ray's task list with snapshot calls."""
        ray = self._ray
        if self._stop_wait is None:
            self._stop_wait = self._actor.wait_for.remote("stop")
        stopped_now = not self._stop_seen and bool(ray.wait([self._stop_wait], timeout=0)[0])
        self._stop_seen = self._stop_seen or stopped_now
        now = time.monotonic()
        if stopped_now or now - self._spend_at >= SPEND_REFRESH_S:
            self._spend_at = now
            with contextlib.suppress(Exception):
                self._spend = ray.get(self._actor.snapshot.remote(), timeout=10)
        return dict(self._spend)

    def limit_spend(self, cap: int | None, already: int) -> None:
        self._ray.get(self._actor.limit.remote(cap, already), timeout=60)

    def request_stop(self) -> None:
        self._actor.set_flags.remote(True, False)

    def request_kill(self) -> None:
        self._actor.set_flags.remote(True, True)

    def close(self) -> None:
        if self._owns:
            self._ray.shutdown()


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)
