"""The optional JSONL debug log (``mulligan.log.file``): one ``{ts, level, event, sessionId, data?}`` per line.

Off by default. Writing never raises: a bad path or unserialisable data is reported on stderr instead.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from caddie.extensions.api import json_stringify

Level: TypeAlias = Literal["debug", "info", "warn", "error"]
_NO_DATA: Any = object()


def iso_timestamp() -> str:
    """The current time as ``Date.prototype.toISOString`` prints it."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class DebugLog:
    """Appends log lines to ``path`` (None = off)."""

    def __init__(self, path: str | None = None) -> None:
        self.path = path

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def write(self, level: Level, event: str, session_id: str, data: Any = _NO_DATA) -> None:
        dest = self.path
        if dest is None:
            return
        line: dict[str, Any] = {
            "ts": iso_timestamp(),
            "level": level,
            "event": event,
            "sessionId": session_id,
        }
        if data is not _NO_DATA:
            line["data"] = data
        try:
            text = json_stringify(line) + "\n"
            with open(dest, "a", encoding="utf-8") as f:
                f.write(text)
        except Exception as err:
            try:
                sys.stderr.write(
                    f"[mulligan] log: write failed (event={event} level={level} dest={dest}): {err}\n"
                )
            except Exception:  # stderr itself is gone: nowhere left to report the failed log write
                pass

    def debug(self, event: str, session_id: str, data: Any = _NO_DATA) -> None:
        self.write("debug", event, session_id, data)

    def info(self, event: str, session_id: str, data: Any = _NO_DATA) -> None:
        self.write("info", event, session_id, data)

    def warn(self, event: str, session_id: str, data: Any = _NO_DATA) -> None:
        self.write("warn", event, session_id, data)

    def error(self, event: str, session_id: str, data: Any = _NO_DATA) -> None:
        self.write("error", event, session_id, data)
