"""Themes: ``dark`` and ``light`` built in, custom ones from JSON files in Pi's theme format.

A theme file is Pi's: ``{"name": ..., "vars": {...}, "colors": {...}}`` where a colour is ``"#rrggbb"``, an
xterm 256-colour index, ``""`` (the terminal's default) or the name of a var. The Pi tokens that have a
place in caddie's screen are used (table below); the others are accepted and ignored, so a Pi theme file
works unchanged. Themes are found in the ``caddie.themes`` folders of installed packages (settings
``"packages"``, each package's ``"themes"`` filter applied to the themes' names), in
``~/.caddie/agent/themes/*.json``, in trusted projects' ``.caddie/themes/*.json`` and in the files or
directories listed in settings ``"themes"`` — a later one wins over an earlier one of the same name;
settings ``"theme"`` names the one to use. ``NO_COLOR`` still wins: everything is then drawn in grey.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.theme import Theme

from caddie.modes.theme_files import (
    PI_TO_TEXTUAL,
    ExportColours,
    PackageThemes,
    ThemeColours,
    ThemeError,
    export_colours,
    package_theme_places,
    read_theme_files,
    read_theme_json,
    theme_files,
    xterm_color,
)

__all__ = [
    "DARK", "LIGHT", "PI_TO_TEXTUAL", "ExportColours", "FoundThemes", "PackageThemes", "ThemeError",
    "ThemeFile", "builtin_themes", "discover_themes", "export_colours", "load_theme_file",
    "package_theme_places", "theme_files", "theme_from_json", "xterm_color",
]  # fmt: skip

DARK = "dark"
LIGHT = "light"

_BUILTIN: dict[str, Theme] = {
    DARK: Theme(
        name=DARK, primary="#0178D4", secondary="#7a7a8c", accent="#ffa62b", warning="#e0b341",
        error="#e0585b", success="#4EBF71", foreground="#e0e0e0", background="#121212", surface="#1e1e1e",
        panel="#2a2a36", dark=True,
    ),
    LIGHT: Theme(
        name=LIGHT, primary="#0060b0", secondary="#6b6b80", accent="#b35900", warning="#9a6700",
        error="#c62828", success="#2e7d32", foreground="#1f1f1f", background="#fafafa", surface="#efefef",
        panel="#e2e4ee", dark=False,
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class ThemeFile:
    path: Path
    theme: Theme


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def theme_from_json(data: Any, path: Path) -> Theme:
    """A Textual theme from Pi's theme JSON (see the module docstring)."""
    return textual_theme(read_theme_json(data, path))


def textual_theme(checked: ThemeColours) -> Theme:
    """The Textual theme of a checked theme file (the shades a file leaves out: the built-in dark or light
    theme's, by the brightness of its backgrounds)."""
    name, mapped = checked.name, dict(checked.colours)
    background = mapped.get("boost") or mapped.get("surface") or mapped.get("panel")
    dark = _luminance(background) < 0.5 if background else True
    base = _BUILTIN[DARK if dark else LIGHT]
    boost = mapped.pop("boost", None)
    return Theme(
        name=name,
        primary=mapped["primary"],
        secondary=mapped.get("secondary", base.secondary),
        accent=mapped.get("accent", base.accent),
        warning=mapped.get("warning", base.warning),
        error=mapped.get("error", base.error),
        success=mapped.get("success", base.success),
        foreground=mapped.get("foreground", base.foreground),
        background=base.background,
        surface=mapped.get("surface", base.surface),
        panel=mapped.get("panel", base.panel),
        boost=boost,
        dark=dark,
    )


def load_theme_file(path: Path) -> Theme:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ThemeError(f"{path}: cannot read it ({e.strerror or e})") from None
    except json.JSONDecodeError as e:
        raise ThemeError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    return theme_from_json(data, path)


@dataclass
class FoundThemes:
    themes: dict[str, Theme]
    """Built-in and custom themes by name."""
    paths: dict[str, Path]
    """The file of each custom theme."""
    warnings: list[str]
    """One per unusable file."""


def discover_themes(places: Iterable[Path], packages: Iterable[PackageThemes] = ()) -> FoundThemes:
    """Built-in and custom themes (blocking: file reads). Package themes come first, so the user's own files
    win over a package's theme of the same name."""
    themes = dict(_BUILTIN)
    paths: dict[str, Path] = {}
    warnings: list[str] = []
    for path, checked in read_theme_files(places, packages):
        if isinstance(checked, str):
            warnings.append(checked)
            continue
        theme = textual_theme(checked)
        themes[theme.name] = theme
        paths[theme.name] = path
    return FoundThemes(themes, paths, warnings)


def builtin_themes() -> dict[str, Theme]:
    return dict(_BUILTIN)
