"""``models-store.json``: the model lists of providers whose catalogue is dynamic (a Radius gateway, an
extension's ``refreshModels``), in Pi's file and format, written under the same cross-process lock.

    {"radius": {"baseUrl": "https://radius.pi.dev/v1", "api": "pi-messages", "models": [...], "checkedAt": 1767225600000}}

Each entry has a models.json provider's shape (plus ``checkedAt``), so the registry applies it the same way.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from caddie.ai.oauth.types import now_ms
from caddie.config.file_lock import FileLock

ModelRefresher = Callable[[], Awaitable[Sequence[Mapping[str, Any]]]]
"""An extension's ``refreshModels``: the provider's current models (models.json's model shape)."""


class ModelsStore:
    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, dict[str, Any]]:
        """Every stored entry (a broken file reads as empty: the lists are only a cache)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            k: {f: v for f, v in e.items() if f != "checkedAt"}
            for k, e in data.items()
            if isinstance(e, dict)
        }

    def write(self, provider: str, entry: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(self.path):
            try:
                data = json.loads(self.path.read_text(encoding="utf-8-sig"))
            except (OSError, ValueError):
                data = {}
            if not isinstance(data, dict):
                data = {}
            data[provider] = {**entry, "checkedAt": now_ms()}
            fd, tmp = tempfile.mkstemp(prefix=".models-store.", suffix=".tmp", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, ensure_ascii=False)
            os.replace(tmp, self.path)
