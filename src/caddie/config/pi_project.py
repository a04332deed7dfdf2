"""What a Pi project's own ``.pi/`` folder holds that caddie does not read, as one line for the user.

caddie reads a project's configuration from ``.caddie/`` (docs/configuration.md, "Where things live"); a Pi
user's ``.pi/settings.json``, ``SYSTEM.md`` or skills would otherwise be left out without a word. Pi's
``.pi/sandbox.json`` is read (caddie.sandbox.config), so it is not named here.
"""

from __future__ import annotations

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
