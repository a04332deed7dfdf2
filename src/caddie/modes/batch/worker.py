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

from caddie.config.settings import load_settings
from caddie.errors import ConfigurationError
from caddie.modes.batch.stop_extension import GATE_FD_ENV
from caddie.modes.batch.tasks import Task
from caddie.sandbox import ENV_INSIDE, ENV_MODE, Sandbox, SandboxError, choose_mode, open_sandbox
from caddie.sandbox import load_config as load_sandbox_config

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

    def charge(self, task_id: str, tokens: int) -> bool:
        """Count one reply's tokens; True when the task may make its next model request (the spend cap
        is not reached and the batch is not stopping)."""
        ...

    def stop_requested(self) -> bool: ...

    def kill_requested(self) -> bool: ...


class NullControl:
    def charge(self, task_id: str, tokens: int) -> bool:
        return True

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
    sandbox: str | None = None
    """``caddie batch --sandbox``: the mode of the goals, setup and check (None: settings, else
    workspace-write)."""


@dataclass(frozen=True, slots=True)
class TaskPaths:
    workspace: Path
    sessions: Path
    log: Path
    running: Path

    @staticmethod
    def of(workdir: str | Path, task_id: str) -> TaskPaths:
        root = Path(workdir)
        return TaskPaths(
            workspace=root / "workspaces" / task_id,
            sessions=root / "sessions" / task_id,
            log=root / "logs" / f"{task_id}.log",
            running=root / "running" / f"{task_id}.json",
        )


class TaskFailed(ConfigurationError):
    """A task's workspace or setup cannot be made (a git failure, a missing ref, a setup command that
    failed): the task ends with status ``error``."""


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


def task_sandbox(settings: RunSettings, workspace: Path) -> Sandbox:
    """The sandbox of a task's setup and check: ``--sandbox``, else the global settings (the workspace is a
    clone, never trusted), else workspace-write — the mode the goal's own commands get."""
    try:
        config = load_sandbox_config(str(workspace), load_settings(workspace), project_trusted=False)
        mode = choose_mode(settings.sandbox, config.mode, "workspace-write", *_mode_env())
        return open_sandbox(mode, str(workspace), config)
    except SandboxError as e:
        raise TaskFailed(str(e)) from None


def _mode_env() -> tuple[str | None, str | None]:
    return os.environ.get(ENV_MODE), os.environ.get(ENV_INSIDE)


def sandbox_mode(settings: RunSettings) -> str:
    """The mode tasks will run in (for the clone: a sandboxed task gets no hard links into the source)."""
    try:
        config = load_sandbox_config(settings.workdir, load_settings(settings.workdir), project_trusted=False)
        return choose_mode(settings.sandbox, config.mode, "workspace-write", *_mode_env())
    except SandboxError:
        return "workspace-write"


def prepare_workspace(
    task: Task, paths: TaskPaths, log: Any, deadline: float | None, settings: RunSettings
) -> str:
    """A clone of the task's repo at its ref under the batch's work directory (never the user's checkout),
    with setup run once (in the task's sandbox). Returns the base commit. An existing, finished workspace is
    reused as it is. A sandboxed task's clone copies the objects instead of hard-linking them: through a hard
    link, a command allowed to write the workspace could change the source repository."""
    ws = paths.workspace
    git_dir = ws / ".git"
    if (git_dir / READY_MARK).exists():
        return (git_dir / BASE_MARK).read_text().strip()
    if ws.exists():
        shutil.rmtree(ws)  # a clone or setup that never finished: start it again
    ws.parent.mkdir(parents=True, exist_ok=True)
    links = ["--no-hardlinks"] if sandbox_mode(settings) != "off" else []
    _git(
        ["clone", "--quiet", "--no-checkout", *links, "--", task.repo, str(ws)],
        None,
        log,
        _remaining(deadline),
    )
    ref = task.ref or "HEAD"
    target = None
    for candidate in (ref, f"origin/{ref}"):
        with contextlib.suppress(TaskFailed):
            target = _git(
                ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{candidate}^{{commit}}"], ws, log
            )
            break
    if target is None and task.ref:  # a commit the clone does not have yet (e.g. a pull request head)
        with contextlib.suppress(TaskFailed):
            _git(["fetch", "--quiet", "--", "origin", task.ref], ws, log, _remaining(deadline))
            target = _git(
                ["rev-parse", "--verify", "--quiet", "--end-of-options", "FETCH_HEAD^{commit}"], ws, log
            )
    if target is None:
        raise TaskFailed(f"ref {ref!r} not found in {task.repo}")
    _git(["checkout", "--quiet", "--detach", target, "--"], ws, log, _remaining(deadline))
    (git_dir / BASE_MARK).write_text(target + "\n")
    if task.setup:
        log.write(f"$ {task.setup}\n")
        log.flush()
        sandbox = task_sandbox(settings, ws)
        try:
            code, output, note = run_shell(task.setup, ws, _remaining(deadline), sandbox)
        finally:
            sandbox.close()
        log.write(output.decode("utf-8", "replace"))
        if code is None:
            raise TaskFailed("setup timed out")
        if code != 0:
            raise TaskFailed(
                f"setup exited {code}: {tail(output, 300).strip()}" + (f" {note}" if note else "")
            )
    (git_dir / READY_MARK).write_text("")
    return target


def run_shell(
    command: str, cwd: Path, timeout: float | None, sandbox: Sandbox | None = None
) -> tuple[int | None, bytes, str | None]:
    """Run a task's ``setup`` or ``check`` in a shell of its own process group, in ``sandbox`` (the task's)
    when given: ``(exit code, output, the sandbox's note)``, or ``(None, output so far, None)`` after
    ``timeout``, when the whole group is killed — not just the shell, whose children would live on (and hold
    the output pipe open, so the wait would never end). The note says what the sandbox refused, if the output
    shows it refused something."""
    with (sandbox or Sandbox.off()).prepare(["/bin/sh", "-c", command], str(cwd)) as prepared:
        proc = subprocess.Popen(
            prepared.argv,
            cwd=cwd,
            env=prepared.env,
            pass_fds=prepared.pass_fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            try:  # a process that left the group (setsid) could still hold the pipe: do not wait on it forever
                output, _ = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                output = b""
            return None, output or b"", None
    output = output or b""
    return proc.returncode, output, prepared.explain(tail(output))


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
    if settings.sandbox is not None:
        command += ["--sandbox", settings.sandbox]
    return [*command, "-e", STOP_EXTENSION]


def run_goal(
    task: Task,
    settings: RunSettings,
    control: Control,
    paths: TaskPaths,
    deadline: float | None,
    log: Any,
) -> ChildOutcome:
    """One run of the headless goal; returns how it ended.

    Besides its event stream (stdout), the goal process holds one end of a socket pair, the gate: after
    each reply its batch extension (``stop_extension``) sends the reply's tokens and waits; the answer here
    — ``go``, or ``stop`` once the spend cap is reached or the batch is stopping — comes from
    ``control.charge`` before the process may make its next request."""
    session = latest_session(paths.sessions)
    paths.sessions.mkdir(parents=True, exist_ok=True)
    gate, child_gate = socket.socketpair()
    env = {**os.environ, **settings.env, GATE_FD_ENV: str(child_gate.fileno()), "NO_COLOR": "1"}
    log.write(f"{GOAL_RUN_MARK} ({'resuming ' + session.name if session else 'new session'})\n")
    log.flush()
    try:
        proc = subprocess.Popen(
            goal_command(task, settings, session, paths),
            cwd=paths.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            pass_fds=(child_gate.fileno(),),
            start_new_session=True,  # Ctrl+C in the terminal reaches the batch, not the goals
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    except BaseException:
        gate.close()
        raise
    finally:
        child_gate.close()
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
    buffer = asked = b""
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    selector.register(gate, selectors.EVENT_READ)
    last_poll = 0.0
    try:
        while True:
            ended = False
            for key, _ in selector.select(timeout=settings.poll_seconds):
                if key.fileobj is gate:
                    chunk = gate.recv(4096)
                    if not chunk:
                        selector.unregister(gate)
                        continue
                    asked += chunk
                    *charges, asked = asked.split(b"\n")
                    for charge in charges:  # one per reply: the process waits for this answer
                        tokens = int(charge) if charge.strip().isdigit() else 0
                        go = control.charge(task.id, tokens) and not control.stop_requested()
                        stopped = stopped or not go
                        with contextlib.suppress(OSError):
                            gate.sendall(b"go\n" if go else b"stop\n")
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    ended = True
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.startswith(b'{"type":"extension_event"'):
                        event = json.loads(line)
                        if event.get("name") == "goal_state":
                            data = event.get("data") or {}
                            goal = data.get("goal")
                            reason = data.get("reason")
                            runaway = runaway or reason == "runaway"
            if ended:
                break
            now = time.monotonic()
            if kill_at is None and deadline is not None and now >= deadline:
                timed_out = True
                kill_at = now + settings.kill_grace
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
            if now - last_poll >= settings.poll_seconds:
                last_poll = now
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
        gate.close()
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


def session_usage(path: Path | None) -> tuple[int, int, float, bool]:
    """Input tokens, output tokens and cost of every reply saved in a session file, and whether some of it is
    caddie's estimate (a reply whose server reported no usage: ``"estimated": true`` in its usage)."""
    tokens_in = tokens_out = 0
    cost = 0.0
    estimated = False
    if path is None or not path.exists():
        return 0, 0, 0.0, False
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
            estimated = estimated or usage.get("estimated") is True
    return tokens_in, tokens_out, round(cost, 6), estimated


def run_check(command: str, workspace: Path, timeout: float, settings: RunSettings) -> tuple[int | None, str]:
    """The task's check, after the goal, in the task's sandbox: (exit code or None on timeout, output tail)."""
    try:
        sandbox = task_sandbox(settings, workspace)
    except TaskFailed as e:
        return None, str(e)
    try:
        code, output, note = run_shell(command, workspace, timeout, sandbox)
    finally:
        sandbox.close()
    if code is None:
        return None, tail(output + f"\n[check timed out after {timeout:g} s]".encode())
    return code, tail(output + (f"\n{note}\n".encode() if note else b""))


def diff_stat(workspace: Path, base: str, log: Any) -> str:
    try:
        _git(["add", "--all", "--intent-to-add", "--", "."], workspace, log, 60)
        return _git(["diff", "--shortstat", base, "--"], workspace, log, 60)
    except TaskFailed as e:
        return f"({e})"


def run_task(
    task: Task, settings: RunSettings, control: Control | None = None, where: str = ""
) -> dict[str, Any]:
    """Run one task to its end (or to the batch's stop) and return its result record. ``where`` names the
    run in the task's log (``Ray task caddie:<id>``)."""
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
        when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        log.write(f"--- {when} on {socket.gethostname()}{f' ({where})' if where else ''}\n")
        try:
            base = prepare_workspace(task, paths, log, deadline, settings)
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
                left = _remaining(deadline)
                limit = settings.check_timeout if left is None else min(settings.check_timeout, left)
                check_exit, check_tail = run_check(task.check, paths.workspace, limit, settings)
                if check_exit is None and deadline is not None and time.monotonic() >= deadline:
                    status, detail = "timeout", "the final check ran past the task's timeout"
            diff = diff_stat(paths.workspace, base, log)
        if status == "error" and detail:
            log.write(f"error: {detail}\n")
    session = latest_session(paths.sessions)
    tokens_in, tokens_out, cost, estimated = session_usage(session)
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
    if estimated:  # only then, so results of servers that report usage stay as they were
        record["tokens_estimated"] = True
    return record
