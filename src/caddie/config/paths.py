"""Locations on disk. ``CADDIE_DIR`` overrides the root (default ``~/.caddie``); ``CADDIE_CODING_AGENT_DIR``
(the twin of Pi's ``PI_CODING_AGENT_DIR``) names the agent folder itself and wins over ``CADDIE_DIR``."""

from __future__ import annotations

import os
from pathlib import Path


def caddie_root() -> Path:
    env = os.environ.get("CADDIE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".caddie"


def agent_dir() -> Path:
    """``~/.caddie/agent``: settings.json, models.json, auth.json, extensions/, sessions/."""
    direct = os.environ.get("CADDIE_CODING_AGENT_DIR")
    return Path(direct).expanduser() if direct else caddie_root() / "agent"


def sessions_root() -> Path:
    return agent_dir() / "sessions"


def project_dir(cwd: str | Path) -> Path:
    """The project-local folder ``<cwd>/.caddie``."""
    return Path(cwd) / ".caddie"
