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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.theme import Theme

from caddie.errors import ConfigurationError

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

PI_TO_TEXTUAL: dict[str, str] = {
    "accent": "primary",
    "borderAccent": "accent",
    "muted": "secondary",
    "warning": "warning",
    "error": "error",
    "success": "success",
    "text": "foreground",
    "selectedBg": "surface",
    "toolPendingBg": "panel",
    "userMessageBg": "boost",
}
"""Pi colour token → Textual theme colour (Textual derives the shades and ``$text-*`` variants)."""


class ThemeError(ConfigurationError, ValueError):
    """A theme file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class ThemeFile:
    path: Path
    theme: Theme


def xterm_color(index: int) -> str:
    """``#rrggbb`` of an xterm 256-colour palette index."""
    system = [
        "#000000", "#800000", "#008000", "#808000", "#000080", "#800080", "#008080", "#c0c0c0",
        "#808080", "#ff0000", "#00ff00", "#ffff00", "#0000ff", "#ff00ff", "#00ffff", "#ffffff",
    ]  # fmt: skip
    if index < 16:
        return system[index]
    if index < 232:
        cube = index - 16
        levels = [0 if n == 0 else 55 + n * 40 for n in (cube // 36, cube // 6 % 6, cube % 6)]
        return "#" + "".join(f"{v:02x}" for v in levels)
    grey = 8 + (index - 232) * 10
    return f"#{grey:02x}{grey:02x}{grey:02x}"


def _resolve(value: Any, variables: dict[str, Any], where: str, depth: int = 0) -> str | None:
    if isinstance(value, bool) or depth > 8:
        raise ThemeError(f"{where}: {value!r} is not a colour")
    if isinstance(value, int):
        if not 0 <= value <= 255:
            raise ThemeError(f"{where}: colour index {value} is outside 0-255")
        return xterm_color(value)
    if not isinstance(value, str):
        raise ThemeError(f"{where}: {value!r} is not a colour")
    if value == "":
        return None
    if value.startswith("#") and len(value) in (4, 7):
        return value
    if value in variables:
        return _resolve(variables[value], variables, where, depth + 1)
    raise ThemeError(f"{where}: {value!r} is neither a #hex colour, a 0-255 index nor a var")


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def theme_from_json(data: Any, path: Path) -> Theme:
    """A Textual theme from Pi's theme JSON (see the module docstring)."""
    if not isinstance(data, dict):
        raise ThemeError(f"{path}: a theme file is a JSON object with name and colors")
    name = data.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise ThemeError(f'{path}: "name" must be a non-empty string without "/"')
    variables = data.get("vars") or {}
    colors = data.get("colors")
    if not isinstance(variables, dict) or not isinstance(colors, dict):
        raise ThemeError(f'{path}: "colors" (and "vars", when present) must be objects')
    mapped: dict[str, str] = {}
    for token, target in PI_TO_TEXTUAL.items():
        if token in colors:
            resolved = _resolve(colors[token], variables, f"{path}: colors.{token}")
            if resolved is not None:
                mapped[target] = resolved
    if "primary" not in mapped:
        raise ThemeError(f"{path}: colors.accent must be a colour (it is the theme's primary colour)")
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


def theme_files(places: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for place in places:
        if place.is_dir():
            files += sorted(place.glob("*.json"))
        elif place.suffix == ".json" and place.exists():
            files.append(place)
    return files


PackageThemes = tuple[Path, list[str] | None]
"""A package's themes folder and the package's ``"themes"`` filter (None: every theme)."""


def package_theme_places(cwd: str, *, project_trusted: bool) -> list[PackageThemes]:
    """The ``caddie.themes`` folders of the configured, installed and enabled packages (blocking: reads the
    packages' metadata; nothing is imported). Packages that are not installed are warned about elsewhere."""
    from caddie.resources.packages import configured_packages, inspect_package

    specs, _ = configured_packages(cwd, project_trusted=project_trusted)
    places: list[PackageThemes] = []
    for spec in specs:
        if not spec.enabled:
            continue
        for resource in inspect_package(spec, cwd).resources:
            if resource.kind == "themes" and resource.path is not None:
                places.append((resource.path, spec.filters.get("themes")))
    return places


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
    from caddie.resources.packages import filter_enabled

    themes = dict(_BUILTIN)
    paths: dict[str, Path] = {}
    warnings: list[str] = []
    sources: list[tuple[Path, list[str] | None]] = [
        (path, patterns) for folder, patterns in packages for path in theme_files([folder])
    ]
    sources += [(path, None) for path in theme_files(places)]
    for path, patterns in sources:
        try:
            theme = theme_from_json(json.loads(path.read_text(encoding="utf-8")), path)
        except ThemeError as e:
            warnings.append(str(e))
            continue
        except (OSError, json.JSONDecodeError) as e:
            warnings.append(f"{path}: cannot use this theme file ({e})")
            continue
        if patterns is not None and not filter_enabled(theme.name, patterns):
            continue
        themes[theme.name] = theme
        paths[theme.name] = path
    return FoundThemes(themes, paths, warnings)


@dataclass(frozen=True, slots=True)
class ExportColours:
    """A theme file's ``export`` section (Pi's): the backgrounds of the HTML export (``#rrggbb``, None: not
    given)."""

    page: str | None
    """``pageBg``: behind everything."""
    card: str | None
    """``cardBg``: the entries, search line and buttons."""
    info: str | None
    """``infoBg``: compaction and branch summaries, label badges."""


_CSS_HEX = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?")


def export_colours(path: Path) -> ExportColours | None:
    """The ``export`` section of the theme file at ``path`` (colours as in ``colors``: hex, 0-255 index or
    a var); None when it has none, or no usable colour (the page then keeps caddie's own look). A value
    that is not a colour is left out, as Pi leaves out what it cannot read."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    section = data.get("export") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return None
    variables = data.get("vars")
    variables = variables if isinstance(variables, Mapping) else {}

    def colour(key: str) -> str | None:
        if key not in section:
            return None
        try:
            value = _resolve(section[key], dict(variables), f"{path}: export.{key}")
        except ThemeError:
            return None
        return value if value is not None and _CSS_HEX.fullmatch(value) else None  # nothing else reaches CSS

    colours = ExportColours(colour("pageBg"), colour("cardBg"), colour("infoBg"))
    return colours if colours.page or colours.card or colours.info else None


def builtin_themes() -> dict[str, Theme]:
    return dict(_BUILTIN)
