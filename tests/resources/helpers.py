"""Writing skill folders and templates on disk for the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_skill(
    folder: Path, name: str | None, description: str | None, body: str = "Do the thing.\n"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    lines.append("---")
    path = folder / "SKILL.md"
    path.write_text("\n".join(lines) + "\n\n" + body, encoding="utf-8")
    return path


def write_template(folder: Path, name: str, body: str, description: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    front = f"---\ndescription: {description}\n---\n" if description else ""
    path = folder / f"{name}.md"
    path.write_text(front + body, encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
