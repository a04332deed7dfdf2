"""Live progress of a batch: a rich progress bar with counts by status and spend on a terminal, plain
lines otherwise (one per finished task, and a status line now and then)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Protocol, TextIO

STATUS_ORDER = ("complete", "budget", "runaway", "blocked", "error", "timeout", "stopped")


def counts_text(counts: Counter[str]) -> str:
    return " · ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if counts[s]) or "nothing finished yet"


def task_line(record: dict[str, Any]) -> str:
    tokens = int(record.get("tokens_in") or 0) + int(record.get("tokens_out") or 0)
    line = (
        f"{record['id']}: {record.get('status')} in {float(record.get('duration_s') or 0):.1f} s, "
        f"{tokens:,} tokens, ${float(record.get('cost') or 0):.4f}"
    )
    if record.get("detail") and record.get("status") != "complete":
        line += f" — {record['detail']}"
    return line


class Progress(Protocol):
    def begin(self, total: int, done: int, description: str) -> None: ...

    def finished(self, record: dict[str, Any]) -> None: ...

    def tick(self, running: int, spent: int) -> None: ...

    def message(self, text: str) -> None: ...

    def end(self) -> None: ...


class PlainProgress:
    """For logs and pipes: a line per finished task, and a status line every ``every`` seconds."""

    def __init__(self, err: TextIO, every: float = 30.0) -> None:
        self.err = err
        self.every = every
        self.total = self.done = 0
        self.counts: Counter[str] = Counter()
        self._last = time.monotonic()

    def _write(self, text: str) -> None:
        self.err.write(f"caddie batch: {text}\n")
        self.err.flush()

    def begin(self, total: int, done: int, description: str) -> None:
        self.total, self.done = total, done
        skipped = f", {done} already finished" if done else ""
        self._write(f"{total} tasks{skipped}; running on {description}")

    def finished(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.counts[str(record.get("status"))] += 1
        self._write(f"[{self.done}/{self.total}] {task_line(record)}")

    def tick(self, running: int, spent: int) -> None:
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._write(
                f"{self.done}/{self.total} done, {running} running, {spent:,} tokens spent — "
                f"{counts_text(self.counts)}"
            )

    def message(self, text: str) -> None:
        self._write(text)

    def end(self) -> None:
        pass


class RichProgress:
    """For a person at a terminal: one live bar, with failures printed above it as they happen."""

    def __init__(self, err: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(file=err, highlight=False)
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
            transient=False,
        )
        self.task_id: Any = None
        self.counts: Counter[str] = Counter()
        self.running = 0
        self.spent = 0

    def _info(self) -> str:
        return f"{self.running} running · {self.spent:,} tokens · {counts_text(self.counts)}"

    def begin(self, total: int, done: int, description: str) -> None:
        skipped = f", {done} already finished" if done else ""
        self.console.print(f"caddie batch: {total} tasks{skipped}; running on {description}")
        self.task_id = self.bar.add_task("batch", total=total, completed=done, info=self._info())
        self.bar.start()

    def finished(self, record: dict[str, Any]) -> None:
        self.counts[str(record.get("status"))] += 1
        if record.get("status") != "complete":
            self.bar.console.print(task_line(record), markup=False)
        self.bar.update(self.task_id, advance=1, info=self._info())

    def tick(self, running: int, spent: int) -> None:
        self.running, self.spent = running, spent
        self.bar.update(self.task_id, info=self._info())

    def message(self, text: str) -> None:
        self.bar.console.print(f"caddie batch: {text}", markup=False)

    def end(self) -> None:
        self.bar.stop()
