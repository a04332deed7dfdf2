"""The task file of ``caddie batch``: one JSON object per line, validated before anything runs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caddie import errors, untrusted
from caddie.modes.batch.goal_options import check_option
from caddie.untrusted import read_regular

FIELDS = ("id", "repo", "ref", "objective", "budget", "check", "model", "setup", "timeout")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


class BatchError(errors.UsageError):
    """A user mistake (bad task file, bad option): one line, exit code 2."""


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    repo: str
    ref: str | None = None
    objective: str | None = None
    budget: int | None = None
    check: str | None = None
    model: str | None = None
    setup: str | None = None
    timeout: float | None = None

    @property
    def goal_objective(self) -> str:
        if self.objective:
            return self.objective
        return f"Make the check command `{self.check}` exit 0."

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Task:
        fields: dict[str, Any] = {name: data.get(name) for name in FIELDS}
        return Task(**fields)


def parse_duration(value: object) -> float:
    """``600``, ``90s``, ``30m``, ``2h`` → seconds (a bare number is seconds)."""
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
    else:
        raise ValueError
    if seconds <= 0:
        raise ValueError
    return seconds


_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|/\.|\.lock(?:/|$)")


def is_ref_name(ref: str) -> bool:
    """A name git takes as a branch, tag or commit (``git check-ref-format --allow-onelevel`` rules), and
    never one that git could read as an option (``--upload-pack=…``)."""
    if not ref or ref.startswith(("-", "/", ".")) or ref.endswith(("/", ".")) or ref == "@":
        return False
    return _BAD_REF.search(ref) is None


def is_url(repo: str) -> bool:
    return "://" in repo or bool(re.match(r"^[\w.-]+@[\w.-]+:", repo))


def _text(data: dict[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise BatchError(f"{where}: {key!r} must be a non-empty string")
    return value


def parse_task(line: str, where: str, base: Path) -> Task:
    try:
        data = untrusted.loads(line)
    except json.JSONDecodeError as e:
        raise BatchError(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
    except ValueError as e:  # nested too deeply
        raise BatchError(f"{where}: {e}") from None
    if not isinstance(data, dict):
        raise BatchError(f"{where}: a task is a JSON object with at least id and repo")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise BatchError(
            f"{where}: unknown field {', '.join(repr(k) for k in unknown)} (allowed: {', '.join(FIELDS)})"
        )
    for key in ("id", "repo"):
        if key not in data:
            raise BatchError(f"{where}: missing field {key!r}")
    task_id = _text(data, "id", where)
    assert task_id is not None
    if not _ID.match(task_id):
        raise BatchError(
            f"{where}: id {task_id!r} must be 1-128 letters, digits, '.', '_' or '-' (it names a directory)"
        )
    repo = _text(data, "repo", where)
    assert repo is not None
    if not is_url(repo):
        path = Path(repo).expanduser()
        if not path.is_absolute():
            path = (base / path).resolve()
        if not (path / ".git").exists():
            raise BatchError(f"{where}: repo {repo!r} is not a git repository ({path})")
        repo = str(path)
    objective = _text(data, "objective", where)
    check = _text(data, "check", where)
    if objective is None and check is None:
        raise BatchError(f"{where}: give an 'objective', a 'check', or both")
    if objective is not None:
        try:
            check_option("goal", objective)
        except (ValueError, errors.UsageError) as e:
            raise BatchError(f"{where}: objective: {e}") from None
    budget: int | None = None
    if data.get("budget") is not None:
        raw = data["budget"]
        try:
            if isinstance(raw, bool) or not isinstance(raw, int | str):
                raise ValueError(raw)
            parsed = raw if isinstance(raw, int) and raw > 0 else check_option("goal-budget", str(raw))
            if not isinstance(parsed, int):
                raise ValueError(raw)
            budget = parsed
        except (ValueError, errors.UsageError):
            raise BatchError(
                f'{where}: budget {raw!r} is not a token count (e.g. 200000 or "200k")'
            ) from None
    timeout: float | None = None
    if data.get("timeout") is not None:
        try:
            timeout = parse_duration(data["timeout"])
        except ValueError:
            raise BatchError(
                f'{where}: timeout {data["timeout"]!r} is not a duration (seconds, or e.g. "90s", "30m", "2h")'
            ) from None
    ref = _text(data, "ref", where)
    if ref is not None and not is_ref_name(ref):
        raise BatchError(
            f"{where}: ref {ref!r} is not a branch, tag or commit name (no leading '-', no spaces, "
            "none of ~^:?*[\\, no '..' or '@{')"
        )
    return Task(
        id=task_id,
        repo=repo,
        ref=ref,
        objective=objective,
        budget=budget,
        check=check,
        model=_text(data, "model", where),
        setup=_text(data, "setup", where),
        timeout=timeout,
    )


def load_tasks(path: Path) -> list[Task]:
    """Every task of the file, or a BatchError naming the first bad line."""
    try:
        text = read_regular(path).decode("utf-8")
    except FileNotFoundError:
        raise BatchError(f"no task file at {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BatchError(f"cannot read {path}: {e}") from None
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    base = path.parent.resolve()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name} line {number}"
        task = parse_task(line, where, base)
        if task.id in seen:
            raise BatchError(f"{where}: id {task.id!r} is already used on line {seen[task.id]}")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise BatchError(f"{path} has no tasks (one JSON object per line, with id and repo)")
    return tasks
