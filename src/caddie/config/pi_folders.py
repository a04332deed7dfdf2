"""What Pi's own folders hold that caddie does not read — a project's ``.pi/``, Pi's agent folder
``~/.pi/agent`` — as one line each for the user.

caddie keeps its configuration in ``.caddie/`` and ``~/.caddie/agent`` (docs/configuration.md, "Where things
live"); a Pi user's ``settings.json``, ``models.json``, logins or ``SYSTEM.md`` would otherwise be left out
without a word. A Pi file is named only while caddie's own counterpart is missing, and only when it holds
something (Pi writes ``{}`` files on its first run). Pi's ``sandbox.json`` is read (caddie.sandbox.config), so
it is not named here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

PI_PROJECT_ITEMS = (
    "settings.json",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
    "extensions",
    "skills",
    "prompts",
    "themes",
)
"""What Pi 0.84.4 reads from a project's ``.pi/`` folder (besides ``sandbox.json``, which caddie reads too)."""


def pi_project_notices(cwd: str | Path) -> list[str]:
    """One line when the project's ``.pi/`` holds items whose ``.caddie/`` counterpart is missing."""
    pi, caddie = Path(cwd) / ".pi", Path(cwd) / ".caddie"
    if not pi.is_dir():
        return []
    missing = [name for name in PI_PROJECT_ITEMS if (pi / name).exists() and not (caddie / name).exists()]
    if not missing:
        return []
    return [
        f"this project's .pi/ folder is Pi's: caddie does not read its {', '.join(missing)}; copy them to "
        ".caddie/ to use them (extensions there are Python: docs/configuration.md)"
    ]


PI_AGENT_FILES = (
    "settings.json",
    "models.json",
    "auth.json",
    "keybindings.json",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
)
"""Files of Pi's agent folder that caddie has a counterpart for in its own."""


def _holds_something(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    if path.suffix != ".json":
        return bool(text)
    try:
        return bool(json.loads(text))
    except ValueError:
        return bool(text)


def pi_agent_notices(caddie_agent: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """One line when Pi's agent folder (``PI_CODING_AGENT_DIR``, else ``~/.pi/agent``) holds files whose
    counterpart in caddie's agent folder is missing. Nothing when ``PI_CODING_AGENT_DIR`` is set without
    caddie's own folder chosen: ``pi_variable_notices`` has said so already."""
    env = os.environ if env is None else env
    named = env.get("PI_CODING_AGENT_DIR")
    if named and not (env.get("CADDIE_CODING_AGENT_DIR") or env.get("CADDIE_DIR")):
        return []
    pi = Path(named).expanduser() if named else Path.home() / ".pi" / "agent"
    if not pi.is_dir() or pi.resolve() == caddie_agent.expanduser().resolve():
        return []
    missing = [
        name for name in PI_AGENT_FILES if _holds_something(pi / name) and not (caddie_agent / name).exists()
    ]
    if not missing:
        return []
    return [
        f"Pi's agent folder {pi} has {', '.join(missing)}, which caddie does not read: caddie keeps its own "
        f"in {caddie_agent}; copy them there to use them (docs/configuration.md)"
    ]


PI_EXTENSION_SUFFIXES = (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs")
"""Pi's extension files (TypeScript or JavaScript), which caddie cannot run."""

PI_GALLERY_FIELDS = ("image", "video")
"""The ``pi`` manifest's fields for Pi's package gallery (pi.dev/packages), which caddie has no counterpart of."""


def _pi_manifest(folder: Path) -> dict[str, object] | None:
    """The ``pi`` object of the folder's ``package.json`` (``{}`` for one tagged only with the ``pi-package``
    keyword); None when the folder is not a Pi package."""
    try:
        data = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    manifest = data.get("pi")
    if isinstance(manifest, dict):
        return manifest
    keywords = data.get("keywords")
    return {} if isinstance(keywords, list) and "pi-package" in keywords else None


def _is_python_project(folder: Path) -> bool:
    return any((folder / name).is_file() for name in ("pyproject.toml", "setup.py", "__init__.py"))


def pi_package_problem(folder: Path) -> tuple[bool, str] | None:
    """What a package folder holds of Pi's: None for none; else (whether caddie can still install it — it is
    a Python project too —, what the user is told after the source's name)."""
    manifest = _pi_manifest(folder)
    if manifest is None:
        return None
    gallery = [f for f in PI_GALLERY_FIELDS if f in manifest]
    gallery_note = (
        f"; its gallery fields ({', '.join(gallery)}) are for Pi's package gallery, which caddie does not have"
        if gallery
        else ""
    )
    if _is_python_project(folder):
        return True, (
            "its package.json \"pi\" manifest is Pi's and not read: caddie loads what pyproject.toml's "
            f"caddie.* entry points declare{gallery_note}"
        )
    return False, (
        'is a Pi package (package.json with a "pi" manifest), whose extensions are TypeScript: caddie installs '
        "Python packages that declare caddie.* entry points in pyproject.toml (docs/packages.md)"
        f"{gallery_note}"
    )
