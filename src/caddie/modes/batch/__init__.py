"""``caddie batch TASKS.jsonl``: many headless goals at once, on a local pool or a Ray cluster.

Layout: ``tasks`` (the task file), ``worker`` (one task end to end, wherever it runs), ``backends`` (local
pool, Ray), ``scheduler`` (what starts when, the results file, spend cap, Ctrl+C), ``progress`` (live
display), ``results`` (the results file), ``stop_extension`` (loaded into each goal's process to stop it at
its next budget check). See docs/batch.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO

from caddie.errors import UsageError
from caddie.modes.batch.goal_options import check_option
from caddie.modes.batch.tasks import BatchError, Task, load_tasks

USAGE = "caddie batch TASKS.jsonl [--out results.jsonl] [--workers N] [--ray [ADDRESS]] [--total-budget TOKENS] [--model …]"
FORWARDED_ENV_PREFIX = "CADDIE_"

EXIT_ALL_COMPLETE = 0
EXIT_SOME_NOT_COMPLETE = 1
EXIT_USAGE = 2
EXIT_CAP = 3
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise BatchError(f"{message} (see caddie batch --help)")


def _parser() -> _Parser:
    p = _Parser(
        prog="caddie batch",
        usage=USAGE,
        description="Run many headless goals at once, one per line of TASKS.jsonl: on a local pool of "
        "processes, or on Ray with --ray. Re-running the same command resumes: finished tasks are skipped, "
        "interrupted ones continue from their sessions.",
        epilog='task line: {"id", "repo", "ref"?, "objective"?, "budget"?, "check"?, "model"?, '
        '"setup"?, "timeout"?} — see docs/batch.md. Exit code: 0 every task complete, 1 some task '
        "ended otherwise, 2 a usage mistake, 3 the spend cap left tasks unfinished, 130 interrupted.",
        allow_abbrev=False,
    )
    p.add_argument("tasks", metavar="TASKS.jsonl", nargs="?", help="one task per line")
    p.add_argument("--out", metavar="FILE", help="results file, appended to (default: <TASKS>-results.jsonl)")
    p.add_argument(
        "--workdir", metavar="DIR", help="workspaces, sessions and logs (default: <out>-work, next to --out)"
    )
    p.add_argument("--workers", type=int, metavar="N", help="tasks at a time (default: the number of CPUs)")
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="run on Ray: a local instance, or join the cluster at ADDRESS (e.g. auto, ray://head:10001)",
    )
    p.add_argument(
        "--total-budget", metavar="TOKENS", help="spend cap across all tasks (input+output), e.g. 5M"
    )
    p.add_argument("--model", metavar="PROVIDER/ID", help="model for tasks that do not name one")
    p.add_argument(
        "--retries", type=int, default=2, metavar="N", help="restarts of a task whose worker died (default 2)"
    )
    p.add_argument("--task-cpus", type=float, default=1.0, metavar="N", help="Ray: CPUs per task (default 1)")
    p.add_argument("--task-memory", metavar="BYTES", help="Ray: memory per task, e.g. 2G (default: none)")
    p.add_argument(
        "--sandbox",
        choices=["off", "read-only", "workspace-write"],
        metavar="MODE",
        help='where each task\'s setup, goal commands and check run (default: settings "sandbox", else '
        "workspace-write: the workspace writable, secrets unreadable, no network unless allowed); "
        "off runs them unsandboxed. See docs/sandbox.md",
    )
    return p


def _bytes(text: str) -> int:
    raw = text.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(raw[-1:], 1)
    number = raw[:-1] if raw[-1:] in "KMGT" else raw
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise BatchError(f"--task-memory {text!r} is not a size (e.g. 2G, 512M)") from None
    if value <= 0:
        raise BatchError(f"--task-memory {text!r} must be positive")
    return value


def _summary(outcome: Any, out: TextIO, results_path: Path, workdir: Path, total_budget: int | None) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from caddie.modes.batch.progress import STATUS_ORDER

    console = Console(file=out, highlight=False, width=max(100, Console(file=out).width))
    table = Table(box=box.SIMPLE, title="caddie batch", title_justify="left")
    for name in ("status", "tasks", "tokens in", "tokens out", "cost", "time"):
        table.add_column(name, justify="left" if name == "status" else "right")
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in outcome.records.values():
        groups.setdefault(str(record.get("status")), []).append(record)
    order = [s for s in STATUS_ORDER if s in groups] + sorted(set(groups) - set(STATUS_ORDER))
    for status in order:
        rs = groups[status]
        approx = "≈" if any(r.get("tokens_estimated") for r in rs) else ""
        table.add_row(
            status,
            str(len(rs)),
            f"{approx}{sum(int(r.get('tokens_in') or 0) for r in rs):,}",
            f"{approx}{sum(int(r.get('tokens_out') or 0) for r in rs):,}",
            f"${sum(float(r.get('cost') or 0) for r in rs):.4f}",
            f"{sum(float(r.get('duration_s') or 0) for r in rs):.1f} s",
        )
    if outcome.not_run:
        table.add_row("not run", str(len(outcome.not_run)), "", "", "", "")
    console.print(table)
    unfinished = [i for s in ("error", "timeout") for i in (r["id"] for r in groups.get(s, []))]
    if unfinished:
        console.print(
            f"failed: {', '.join(unfinished[:20])}{' …' if len(unfinished) > 20 else ''}", markup=False
        )
    why = {
        "cap": "the spend cap was reached",
        "interrupt": "the batch was interrupted",
        "write": "the results file could not be written",
    }.get(outcome.stop_reason or "", "")
    if outcome.not_run:
        names = ", ".join(outcome.not_run[:20]) + (" …" if len(outcome.not_run) > 20 else "")
        console.print(f"not run ({why}): {names}", markup=False, soft_wrap=True)
    if outcome.stopped:
        console.print(
            f"stopped before the end ({why or 'stopped'}): {', '.join(outcome.stopped[:20])}", markup=False
        )
    approx = "≈" if any(r.get("tokens_estimated") for r in outcome.records.values()) else ""
    spend = f"{approx}{outcome.spent:,} tokens spent" + (
        f" of a {total_budget:,} cap" if total_budget else ""
    )
    if approx:
        spend += " (≈: some servers reported no usage; caddie estimated it)"
    console.print(
        f"{spend}; results: {results_path}; workspaces and sessions: {workdir}", markup=False, soft_wrap=True
    )
    if outcome.not_run or outcome.stopped:
        more = " with a higher --total-budget" if outcome.stop_reason == "cap" else ""
        console.print(f"run the same command again{more} to continue", markup=False, soft_wrap=True)


def _check_sandbox(settings: Any, workdir: Path) -> None:
    """Before any task starts: the sandbox the tasks will run in can start here (else one line, exit 2)."""
    from caddie.modes.batch.worker import TaskFailed, task_sandbox

    try:
        task_sandbox(settings, workdir).close()
    except TaskFailed as e:
        raise BatchError(str(e)) from None


def keep_stdout_from_ray(out: TextIO) -> TextIO:
    """Ray's driver prints its own messages (``(raylet) A worker died …``) on the process's stdout, in the
    middle of the summary a script may parse. When ``out`` is the real stdout, fd 1 (and ``sys.stdout``)
    now lead to stderr for the rest of the process, and the summary goes to the returned copy of the real
    stdout."""
    if out is not sys.stdout:
        return out
    try:
        fd = out.fileno()
        err_fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's StringIO)
        return out
    out.flush()
    private = os.dup(fd)
    os.dup2(err_fd, fd)
    sys.stdout = sys.stderr
    return os.fdopen(private, "w", encoding="utf-8", errors="replace", closefd=True)


def run_batch_command(argv: list[str], out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        return _run(argv, out, err)
    except BatchError as e:
        err.write(f"caddie batch: {e}\n")
        return EXIT_USAGE


def _run(argv: list[str], out: TextIO, err: TextIO) -> int:
    from caddie.modes.batch.lock import lock_batch

    args = _parser().parse_args(argv)
    if args.tasks is None and args.ray and Path(args.ray).is_file():
        args.tasks, args.ray = args.ray, ""  # "--ray TASKS.jsonl": the file is the task list, not an address
    if args.tasks is None:
        raise BatchError(f"name the task file: {USAGE}")
    if args.workers is not None and args.workers < 1:
        raise BatchError("--workers must be at least 1")
    if args.retries < 0:
        raise BatchError("--retries must be 0 or more")
    if args.task_cpus <= 0:
        raise BatchError("--task-cpus must be positive")
    total_budget = None
    if args.total_budget is not None:
        try:
            parsed = check_option("goal-budget", args.total_budget)  # a token count as --goal-budget takes it
            if not isinstance(parsed, int):
                raise ValueError(parsed)
            total_budget = parsed
        except (ValueError, UsageError):
            raise BatchError(f"--total-budget {args.total_budget!r} is not a token count (e.g. 5M)") from None
    tasks_path = Path(args.tasks).expanduser().resolve()
    tasks = load_tasks(tasks_path)
    results_path = (
        Path(args.out).expanduser().resolve()
        if args.out
        else tasks_path.with_name(f"{tasks_path.stem}-results.jsonl")
    )
    workdir = (
        Path(args.workdir).expanduser().resolve()
        if args.workdir
        else results_path.with_name(f"{results_path.stem}-work")
    )
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        results_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BatchError(f"cannot create {workdir}: {e.strerror or e}") from None
    lock = lock_batch(results_path, workdir)  # a second batch on the same files is refused here
    try:
        return _run_locked(args, tasks, results_path, workdir, total_budget, out, err)
    finally:
        lock.release()


def _run_locked(
    args: argparse.Namespace,
    tasks: list[Task],
    results_path: Path,
    workdir: Path,
    total_budget: int | None,
    out: TextIO,
    err: TextIO,
) -> int:
    from caddie.modes.batch.backends import Backend, LocalBackend, RayBackend, default_workers
    from caddie.modes.batch.progress import PlainProgress, Progress, RichProgress
    from caddie.modes.batch.results import ResultsFile
    from caddie.modes.batch.scheduler import Scheduler
    from caddie.modes.batch.worker import RunSettings

    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV_PREFIX)}
    settings = RunSettings(
        workdir=str(workdir), model=args.model, retries=args.retries, env=env, sandbox=args.sandbox
    )
    _check_sandbox(settings, workdir)
    backend: Backend
    if args.ray is not None:
        out = keep_stdout_from_ray(out)
        backend = RayBackend(
            settings,
            address=args.ray or None,
            workers=args.workers,
            task_cpus=args.task_cpus,
            task_memory=_bytes(args.task_memory) if args.task_memory else None,
            max_retries=args.retries,
        )
    else:
        backend = LocalBackend(settings, args.workers or default_workers())
    progress: Progress = RichProgress(err) if err.isatty() else PlainProgress(err)
    try:
        outcome = Scheduler(
            tasks, backend, ResultsFile(results_path), progress, str(workdir), total_budget
        ).run()
    finally:
        backend.close()
    _summary(outcome, out, results_path, workdir, total_budget)
    out.flush()
    if outcome.write_error is not None:
        err.write(
            f"caddie batch: {outcome.write_error}. Every line written before is kept; free some space and run "
            "the same command again to continue (unrecorded tasks continue from their sessions).\n"
        )
        return EXIT_SOME_NOT_COMPLETE
    if outcome.stop_reason == "interrupt":
        return EXIT_INTERRUPTED
    if outcome.not_run or outcome.stopped:
        return EXIT_CAP
    complete = all(r.get("status") == "complete" for r in outcome.records.values())
    return EXIT_ALL_COMPLETE if complete and len(outcome.records) == len(tasks) else EXIT_SOME_NOT_COMPLETE
