"""Theme files without a screen: where they are, what they hold, and a theme's ``export`` colours.

Pi's theme JSON is read and checked here (``read_theme_json``), and the places theme files come from are
listed here (``theme_places``), with no Textual import: ``caddie export`` and RPC's ``export_html`` look up
the settings' theme's ``export`` section (``settings_export_colours``) without loading the terminal UI.
The interactive mode's themes.py makes Textual themes from what this reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from caddie.config.paths import agent_dir
from caddie.config.settings import RUN_ONLY
from caddie.errors import ConfigurationError

if TYPE_CHECKING:
    from caddie.runtime.session_api import Session

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


def resolve_colour(value: Any, variables: dict[str, Any], where: str, depth: int = 0) -> str | None:
    """A theme colour (``#hex``, 0-255 index, ``""`` or a var's name) as ``#hex``; None for ``""``."""
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
        return resolve_colour(variables[value], variables, where, depth + 1)
    raise ThemeError(f"{where}: {value!r} is neither a #hex colour, a 0-255 index nor a var")


@dataclass(frozen=True, slots=True)
class ThemeColours:
    """A checked theme file: its name and its colours by Textual theme colour (``PI_TO_TEXTUAL``)."""

    name: str
    colours: dict[str, str]


def read_theme_json(data: Any, path: Path) -> ThemeColours:
    """Pi's theme JSON checked (see themes.py's module docstring); ThemeError says what is wrong."""
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
            resolved = resolve_colour(colors[token], variables, f"{path}: colors.{token}")
            if resolved is not None:
                mapped[target] = resolved
    if "primary" not in mapped:
        raise ThemeError(f"{path}: colors.accent must be a colour (it is the theme's primary colour)")
    return ThemeColours(name, mapped)


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


def theme_places(session: Session) -> tuple[list[Path], list[PackageThemes]]:
    """Where the session's custom themes are (blocking: reads package metadata): user, trusted project,
    settings ``"themes"``, then ``--theme PATH`` (the ``RUN_ONLY`` block); packages' folders apart.
    ``--no-themes`` leaves only ``--theme``'s."""
    run = session.settings.get(RUN_ONLY) or {}
    discover = not run.get("noThemes")
    places = [agent_dir() / "themes"] if discover else []
    trusted = session.state().project_trusted
    if trusted and discover:
        places.append(Path(session.cwd) / ".caddie" / "themes")
    for place in (session.settings.get("themes", []) or []) if discover else []:
        if isinstance(place, str):
            places.append(Path(session.cwd) / Path(place).expanduser())
    places += [Path(place) for place in run.get("themes", [])]
    packages = package_theme_places(session.cwd, project_trusted=trusted) if discover else []
    return places, packages


def read_theme_files(
    places: Iterable[Path], packages: Iterable[PackageThemes] = ()
) -> Iterator[tuple[Path, ThemeColours | str]]:
    """Each theme file in the order a later one wins (packages' first, so the user's own files win over a
    package's theme of the same name): the checked theme, or why it cannot be used. Themes a package's
    filter leaves out are skipped."""
    from caddie.resources.packages import filter_enabled

    sources: list[tuple[Path, list[str] | None]] = [
        (path, patterns) for folder, patterns in packages for path in theme_files([folder])
    ]
    sources += [(path, None) for path in theme_files(places)]
    for path, patterns in sources:
        try:
            theme = read_theme_json(json.loads(path.read_text(encoding="utf-8")), path)
        except ThemeError as e:
            yield path, str(e)
            continue
        except (OSError, json.JSONDecodeError) as e:
            yield path, f"{path}: cannot use this theme file ({e})"
            continue
        if patterns is None or filter_enabled(theme.name, patterns):
            yield path, theme


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
            value = resolve_colour(section[key], dict(variables), f"{path}: export.{key}")
        except ThemeError:
            return None
        return value if value is not None and _CSS_HEX.fullmatch(value) else None  # nothing else reaches CSS

    colours = ExportColours(colour("pageBg"), colour("cardBg"), colour("infoBg"))
    return colours if colours.page or colours.card or colours.info else None


def settings_export_colours(session: Session) -> ExportColours | None:
    """The ``export`` colours of the theme the settings name (``caddie export``, RPC's ``export_html``:
    no screen, so the settings' theme, as Pi's exports use it); None for a built-in or unknown theme."""
    wanted = session.settings.get("theme")
    if not isinstance(wanted, str):
        return None
    found: Path | None = None
    for path, theme in read_theme_files(*theme_places(session)):
        if isinstance(theme, ThemeColours) and theme.name == wanted:
            found = path  # a later file of the same name wins, as in the app
    return export_colours(found) if found is not None else None
