"""Editing one settings file in place (``caddie install``, ``caddie config``): keep every other key, write
atomically, refuse to touch a file that is not valid JSON (the user's text would be lost)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caddie.config.settings import read_json_object
from caddie.errors import ConfigurationError


class SettingsEditError(ConfigurationError):
    """The settings file cannot be changed; the message says why and what to do."""


def update_settings_file(path: Path, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Apply ``change`` to the file's object and write it back — only when something changed: a refusal
    (``caddie remove`` of something not installed) leaves the file byte for byte as it was."""
    data, warning = read_json_object(path)
    if warning:
        raise SettingsEditError(f"{warning}; fix it first, then try again")
    before = copy.deepcopy(data)
    change(data)
    if data == before:
        return data
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise SettingsEditError(f"cannot write {path}: {e.strerror or e}") from None
    return data
