"""The results file: one JSON line per task as it ends; the last line of a task id is its state."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict) and isinstance(record.get("id"), str):
                    records[record["id"]] = record
        return records

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.path.open("ab") as f:
            if f.tell() > 0 and not self._ends_with_newline():
                f.write(b"\n")  # after a torn line, start a fresh one
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

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
