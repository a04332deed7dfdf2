"""One task, start to end, on whatever machine runs it: workspace, setup, the headless goal, check, record.

``run_task`` is what a local pool thread or a Ray worker calls. It returns the task's result record (a plain
dict, the line written to the results file). The goal runs as ``caddie --mode json --goal …`` in a child
process of its own (a new process group, killed with its tools on timeout, and killed if this worker dies),
with its session under ``<workdir>/sessions/<id>/``. A second call for the same task — a retry after a dead
worker, or a later ``caddie batch`` run — finds that workspace and session and continues the goal.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as dt
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from caddie.errors import CaddieError
from caddie.modes.batch.stop_extension import STOP_FILE_ENV
from caddie.modes.batch.tasks import Task

STOP_EXTENSION = str(Path(__file__).with_name("stop_extension.py"))
TAIL_BYTES = 1500
READY_MARK = "caddie-batch-ready"
BASE_MARK = "caddie-batch-base"
FINAL_STATUSES = ("complete", "budget", "runaway", "blocked", "error", "timeout")
GOAL_RUN_MARK = "$ caddie --goal …"
STOPPED = "stopped"  # ended by the batch (spend cap or Ctrl+C): continues on the next run
NOT_STARTED = "not_started"  # never began (the batch was stopping); not written to the results


class Control(Protocol):
    """The worker's line back to the scheduler: live spend, and whether to stop."""

    def report(self, task_id: str, tokens: int) -> None: ...

    def stop_requested(self) -> bool: ...

    def kill_requested(self) -> bool: ...


class NullControl:
    def report(self, task_id: str, tokens: int) -> None:
        pass

    def stop_requested(self) -> bool:
        return False

    def kill_requested(self) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class RunSettings:
    workdir: str
    model: str | None = None
    retries: int = 2  # how often a child killed from outside is restarted (resuming its session)
    env: dict[str, str] = field(default_factory=dict)
    check_timeout: float = 300.0
    poll_seconds: float = 0.25
    kill_grace: float = 5.0


@dataclass(frozen=True, slots=True)
class TaskPaths:
    workspace: Path
    sessions: Path
    log: Path
    stop: Path
    running: Path

    @staticmethod
    def of(workdir: str | Path, task_id: str) -> TaskPaths:
        root = Path(workdir)
        return TaskPaths(
            workspace=root / "workspaces" / task_id,
            sessions=root / "sessions" / task_id,
            log=root / "logs" / f"{task_id}.log",
            stop=root / "running" / f"{task_id}.stop",
            running=root / "running" / f"{task_id}.json",
        )


class TaskFailed(CaddieError):
    """Workspace or setup failed: the task ends with status ``error``."""


def latest_session(directory: Path) -> Path | None:
    files = sorted(directory.glob("*.jsonl")) if directory.is_dir() else []
    return files[-1] if files else None


def tail(data: bytes | str, limit: int = TAIL_BYTES) -> str:
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    return raw[-limit:].decode("utf-8", "replace")


def _git(args: list[str], cwd: Path | None, log: Any, timeout: float | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
    except subprocess.TimeoutExpired:
        raise TaskFailed(f"git {args[0]} timed out") from None
    output = done.stdout + done.stderr
    log.write(f"$ git {' '.join(args)}\n{output}{'' if output.endswith(chr(10)) or not output else chr(10)}")
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise TaskFailed(f"git {args[0]} failed: {last[-1] if last else f'exit {done.returncode}'}")
    return done.stdout.strip()


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.1, deadline - time.monotonic())


def prepare_workspace(task: Task, paths: TaskPaths, log: Any, deadline: float | None) -> str:
    """A clone of the task's repo at its ref under the batch's work directory (never the user's checkout),
    with setup run once. Returns the base commit. An existing, finished workspace is reused as it is."""
    ws = paths.workspace
    git_dir = ws / ".git"
    if (git_dir / READY_MARK).exists():
        return (git_dir / BASE_MARK).read_text().strip()
    if ws.exists():
        shutil.rmtree(ws)  # a clone or setup that never finished: start it again
    ws.parent.mkdir(parents=True, exist_ok=True)
    _git(["clone", "--quiet", "--no-checkout", task.repo, str(ws)], None, log, _remaining(deadline))
    ref = task.ref or "HEAD"
    target = None
    for candidate in (ref, f"origin/{ref}"):
        with contextlib.suppress(TaskFailed):
            target = _git(["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], ws, log)
            break
    if target is None and task.ref:  # a commit the clone does not have yet (e.g. a pull request head)
        with contextlib.suppress(TaskFailed):
            _git(["fetch", "--quiet", "origin", task.ref], ws, log, _remaining(deadline))
            target = _git(["rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"], ws, log)
    if target is None:
        raise TaskFailed(f"ref {ref!r} not found in {task.repo}")
    _git(["checkout", "--quiet", "--detach", target], ws, log, _remaining(deadline))
    (git_dir / BASE_MARK).write_text(target + "\n")
    if task.setup:
        log.write(f"$ {task.setup}\n")
        log.flush()
        try:
            done = subprocess.run(
                task.setup,
                shell=True,
                cwd=ws,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=_remaining(deadline),
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise TaskFailed("setup timed out") from None
        log.write(done.stdout.decode("utf-8", "replace"))
        if done.returncode != 0:
            raise TaskFailed(f"setup exited {done.returncode}: {tail(done.stdout, 300).strip()}")
    (git_dir / READY_MARK).write_text("")
    return target


def _die_with_parent() -> None:  # runs in the child between fork and exec
    # not Linux (no prctl): the child outlives a killed parent, as before
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass(slots=True)
class ChildOutcome:
    exit_code: int | None
    signal: int | None
    goal: dict[str, Any] | None
    goal_reason: str | None
    runaway: bool
    stopped: bool
    killed: bool
    timed_out: bool
    max_rss_kb: int
    stderr_tail: str


def goal_command(task: Task, settings: RunSettings, session: Path | None, paths: TaskPaths) -> list[str]:
    command = [sys.executable, "-m", "caddie", "--mode", "json", "--goal", task.goal_objective]
    if task.budget is not None:
        command += ["--goal-budget", str(task.budget)]
    if task.check:
        command += ["--goal-check", task.check]
    model = task.model or settings.model
    if model:
        command += ["--model", model]
    if session is not None:
        command += ["--session", str(session)]
    else:
        command += ["--session-dir", str(paths.sessions)]
    return [*command, "-e", STOP_EXTENSION]


def run_goal(
    task: Task,
    settings: RunSettings,
    control: Control,
    paths: TaskPaths,
    deadline: float | None,
    log: Any,
) -> ChildOutcome:
    """One run of the headless goal; returns how it ended."""
    paths.stop.unlink(missing_ok=True)
    session = latest_session(paths.sessions)
    paths.sessions.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **settings.env, STOP_FILE_ENV: str(paths.stop), "NO_COLOR": "1"}
    log.write(f"{GOAL_RUN_MARK} ({'resuming ' + session.name if session else 'new session'})\n")
    log.flush()
    proc = subprocess.Popen(
        goal_command(task, settings, session, paths),
        cwd=paths.workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
        start_new_session=True,  # Ctrl+C in the terminal reaches the batch, not the goals
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    paths.running.write_text(
        json.dumps({"worker_pid": os.getpid(), "child_pid": proc.pid, "host": socket.gethostname()})
    )
    goal: dict[str, Any] | None = None
    reason: str | None = None
    runaway = stopped = killed = timed_out = False
    kill_at: float | None = None
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    buffer = b""
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    last_poll = 0.0
    try:
        while True:
            ready = selector.select(timeout=settings.poll_seconds)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.startswith(b'{"type":"message_end"'):
                        message = json.loads(line).get("message") or {}
                        usage = message.get("usage") or {}
                        if message.get("role") == "assistant":
                            spent = int(usage.get("input", 0)) + int(usage.get("output", 0))
                            if spent:
                                control.report(task.id, spent)
                    elif line.startswith(b'{"type":"extension_event"'):
                        event = json.loads(line)
                        if event.get("name") == "goal_state":
                            data = event.get("data") or {}
                            goal = data.get("goal")
                            reason = data.get("reason")
                            runaway = runaway or reason == "runaway"
            now = time.monotonic()
            if kill_at is None and deadline is not None and now >= deadline:
                timed_out = True
                kill_at = now + settings.kill_grace
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            if now - last_poll >= settings.poll_seconds:
                last_poll = now
                if not stopped and control.stop_requested():
                    stopped = True
                    paths.stop.touch()
                if kill_at is None and control.kill_requested():
                    killed = True
                    kill_at = now + settings.kill_grace
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGTERM)
            if kill_at is not None and now >= kill_at:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                kill_at = now + 3600
    finally:
        selector.close()
        proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # tools the goal left running
    paths.running.unlink(missing_ok=True)
    code = proc.returncode
    log.flush()
    return ChildOutcome(
        exit_code=code if code >= 0 else None,
        signal=-code if code < 0 else None,
        goal=goal,
        goal_reason=reason,
        runaway=runaway,
        stopped=stopped,
        killed=killed,
        timed_out=timed_out,
        max_rss_kb=usage.ru_maxrss,
        stderr_tail="",
    )


def classify(outcome: ChildOutcome) -> tuple[str, str | None]:
    """(status, detail) of a finished goal run."""
    goal_status = (outcome.goal or {}).get("status")
    if outcome.timed_out:
        return "timeout", "the task ran past its timeout"
    if outcome.killed:
        return STOPPED, "interrupted (Ctrl+C)"
    code = outcome.exit_code
    if code is None:
        return "error", f"caddie was killed by signal {outcome.signal}"
    if outcome.stopped and goal_status == "active":
        return STOPPED, "stopped by the batch before the goal ended"
    if code == 0:
        return "complete", None
    if code == 3:
        return "budget", None
    if code == 2 and goal_status == "blocked":
        return "blocked", None
    if code == 4 and (outcome.runaway or outcome.goal_reason == "runaway"):
        return "runaway", None
    if code == 4:
        return "error", f"goal paused ({outcome.goal_reason or 'run ended with an error'})"
    if code == 5:
        return "error", "usage limits (rate limit, quota or billing)"
    return "error", f"caddie exited {code}"


def session_usage(path: Path | None) -> tuple[int, int, float]:
    """Input tokens, output tokens and cost of every reply saved in a session file."""
    tokens_in = tokens_out = 0
    cost = 0.0
    if path is None or not path.exists():
        return 0, 0, 0.0
    with path.open("rb") as f:
        for line in f:
            if b'"assistant"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed process
            message = entry.get("message") if entry.get("type") == "message" else None
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            usage = message.get("usage") or {}
            tokens_in += int(usage.get("input", 0))
            tokens_out += int(usage.get("output", 0))
            cost += float((usage.get("cost") or {}).get("total", 0.0))
    return tokens_in, tokens_out, round(cost, 6)


def run_check(command: str, workspace: Path, timeout: float) -> tuple[int | None, str]:
    try:
        done = subprocess.run(
            command,
            shell=True,
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as e:
        return None, tail((e.stdout or b"") + f"\n[check timed out after {timeout:g} s]".encode())
    return done.returncode, tail(done.stdout)


def diff_stat(workspace: Path, base: str, log: Any) -> str:
    try:
        _git(["add", "--all", "--intent-to-add"], workspace, log, 60)
        return _git(["diff", "--shortstat", base], workspace, log, 60)
    except TaskFailed as e:
        return f"({e})"


def run_task(task: Task, settings: RunSettings, control: Control | None = None) -> dict[str, Any]:
    """Run one task to its end (or to the batch's stop) and return its result record."""
    control = control or NullControl()
    if control.stop_requested():  # queued on a busy cluster while the batch began to stop
        return {"id": task.id, "status": NOT_STARTED}
    started = time.monotonic()
    deadline = started + task.timeout if task.timeout else None
    paths = TaskPaths.of(settings.workdir, task.id)
    for directory in (paths.log.parent, paths.running.parent):
        directory.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {"id": task.id}
    status, detail = "error", None
    exit_code: int | None = None
    check_exit: int | None = None
    check_tail = ""
    diff = ""
    attempts = 0
    max_rss_kb = 0
    with paths.log.open("a", encoding="utf-8") as log:
        log.write(f"--- {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')} on {socket.gethostname()}\n")
        try:
            base = prepare_workspace(task, paths, log, deadline)
        except TaskFailed as e:
            detail = str(e)
            base = None
            if deadline is not None and time.monotonic() >= deadline:
                status = "timeout"
        except OSError as e:
            detail = f"workspace: {e}"
            base = None
        if base is not None:
            while True:
                attempts += 1
                outcome = run_goal(task, settings, control, paths, deadline, log)
                max_rss_kb = max(max_rss_kb, outcome.max_rss_kb)
                exit_code = outcome.exit_code
                status, detail = classify(outcome)
                lost = outcome.signal is not None and not (outcome.timed_out or outcome.killed)
                if lost and attempts <= settings.retries and not control.stop_requested():
                    log.write(f"caddie was killed by signal {outcome.signal}; resuming the goal\n")
                    continue
                break
            if task.check and status not in ("timeout", STOPPED):
                check_exit, check_tail = run_check(task.check, paths.workspace, settings.check_timeout)
            diff = diff_stat(paths.workspace, base, log)
        if status == "error" and detail:
            log.write(f"error: {detail}\n")
    session = latest_session(paths.sessions)
    tokens_in, tokens_out, cost = session_usage(session)
    if attempts:  # goal runs of this task so far: retries after a lost worker and earlier batch runs
        with contextlib.suppress(OSError), paths.log.open(encoding="utf-8") as f:
            attempts = sum(1 for line in f if line.startswith(GOAL_RUN_MARK))
    record.update(
        status=status,
        exit_code=exit_code,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost=cost,
        duration_s=round(time.monotonic() - started, 3),
        check_exit=check_exit,
        check_tail=check_tail,
        session=str(session) if session else None,
        workspace=str(paths.workspace),
        diff_stat=diff,
        attempts=attempts,
        host=socket.gethostname(),
        max_rss_mb=round(max_rss_kb / 1024, 1),
        detail=detail,
        finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    return record
