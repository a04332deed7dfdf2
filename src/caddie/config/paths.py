"""Locations on disk. ``CADDIE_DIR`` overrides the root (default ``~/.caddie``)."""

from __future__ import annotations

import os
from pathlib import Path


def caddie_root() -> Path:
    env = os.environ.get("CADDIE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".caddie"


def agent_dir() -> Path:
    """``~/.caddie/agent``: settings.json, models.json, extensions/, sessions/."""
    return caddie_root() / "agent"


def sessions_root() -> Path:
    return agent_dir() / "sessions"


def project_dir(cwd: str | Path) -> Path:
    """The project-local folder ``<cwd>/.caddie``."""
    return Path(cwd) / ".caddie"
