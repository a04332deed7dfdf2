"""The results file: one JSON line per task as it ends; the last line of a task id is its state."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from caddie import untrusted
from caddie.modes.batch.worker import FINAL_STATUSES


class ResultsFile:
    """Appended to, never rewritten: re-running the same batch reads it to skip finished tasks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, dict[str, Any]]:
        """The last record of every task id (a torn last line — a killed batch — is ignored)."""
        records: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return records
        with self.path.open("rb") as f:
            for line in f:
                try:
                    record = untrusted.loads(line)
                except ValueError:  # a torn or hand-mangled line
                    continue
                if isinstance(record, dict) and isinstance(record.get("id"), str):
                    records[record["id"]] = record
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Append one whole line. ``OSError`` (a full disk) leaves the file as it was before the call — no
        fragment for the next line to be glued to — so every line already written stays readable."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = untrusted.utf8(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size > 0 and not self._ends_with_newline():
                line = b"\n" + line  # after a torn line (a killed batch), start a fresh one
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"


def is_final(record: dict[str, Any] | None) -> bool:
    return record is not None and record.get("status") in FINAL_STATUSES


def spent(record: dict[str, Any] | None) -> int:
    if record is None:
        return 0
    return int(record.get("tokens_in") or 0) + int(record.get("tokens_out") or 0)
