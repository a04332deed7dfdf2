"""The themes the app knows (built in, from theme files and packages) and the one in use.

``/settings`` lists and switches them; extensions reach them through ``ctx.ui`` (``get_all_themes``,
``get_theme``, ``set_theme``, ``theme``). Finding theme files is themes.py's; this only keeps the book.

Hot reload, as Pi: while the theme in use came from a file, the file's modification time and size are
polled on a timer (a ``stat`` every half second; no watcher thread, no dependency). A change that has
settled for one poll is read and applied; a file that cannot be used keeps the theme on screen and says
why once; a file that is gone for a moment (an editor saving) is waited for silently.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.theme import Theme

from caddie.modes.interactive.themes import (
    DARK,
    FoundThemes,
    ThemeError,
    builtin_themes,
    discover_themes,
    load_theme_file,
)
from caddie.modes.theme_files import ExportColours, export_colours, theme_places

if TYPE_CHECKING:
    from textual.timer import Timer

    from caddie.extensions.ui_components import ThemeView
    from caddie.runtime.session import AgentSession
    from caddie.runtime.session_api import Session

FileStamp = tuple[int, int] | None
"""A theme file's modification time (ns) and size; None while it cannot be read."""


def file_stamp(path: Path) -> FileStamp:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def find_themes(session: Session) -> FoundThemes:
    """The session's custom themes (blocking: reads files): user, trusted project, settings ``"themes"``,
    packages; ``--no-themes`` skips the discovery; ``--theme PATH`` adds places (the ``RUN_ONLY`` block)."""
    return discover_themes(*theme_places(session))


class ThemeBook:
    """Themes registered with the app by name, with the file each came from (None: built in)."""

    POLL_SECONDS = 0.5
    """How often the file of the theme in use is looked at (hot reload)."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.themes: dict[str, Theme] = {}
        self.paths: dict[str, Path | None] = {}
        self.wanted: str | None = None
        """The settings' theme, not found yet while extensions may still bring it."""
        self.add(builtin_themes(), {})
        self._timer: Timer | None = None
        self._warn: Callable[[str], None] = lambda _warning: None
        self._watched: Path | None = None
        self._applied: FileStamp = None
        """The stamp of the watched file when it was last read (or found unusable)."""
        self._seen: FileStamp = None
        """The stamp at the previous poll: a change is read once it has settled for one poll."""

    def add(self, themes: dict[str, Theme], paths: dict[str, Path]) -> None:
        for name, theme in themes.items():
            self.app.register_theme(theme)
            self.themes[name] = theme
            self.paths[name] = paths.get(name)

    def names(self) -> list[str]:
        return sorted(self.themes)

    @property
    def current(self) -> str:
        name = self.app.theme
        return name if name in self.themes else DARK

    def use(self, name: str) -> bool:
        """Switch to the theme called ``name``; False when there is none of that name."""
        if name not in self.themes:
            return False
        self.app.theme = name
        return True

    def add_view(self, view: ThemeView) -> None:
        """An extension's theme (``ui.set_theme(ThemeView)``), made a Textual theme and registered."""
        dark = DARK if view.dark else "light"
        base = self.themes.get(dark) or builtin_themes()[DARK]
        colors = {"accent": "primary", "muted": "secondary", "success": "success", "error": "error",
                  "warning": "warning", "text": "foreground", "borderAccent": "accent"}  # fmt: skip
        fields = {target: view.colors[token] for token, target in colors.items() if token in view.colors}
        theme = Theme(
            name=view.name,
            primary=fields.get("primary", base.primary),
            secondary=fields.get("secondary", base.secondary),
            accent=fields.get("accent", base.accent),
            warning=fields.get("warning", base.warning),
            error=fields.get("error", base.error),
            success=fields.get("success", base.success),
            foreground=fields.get("foreground", base.foreground),
            background=base.background,
            surface=base.surface,
            panel=base.panel,
            dark=view.dark,
        )
        self.add({view.name: theme}, {})

    def get(self, name: str) -> Theme | None:
        return self.themes.get(name)

    async def load(self, session: AgentSession, warn: Callable[[str], None], *, again: bool = False) -> None:
        """Custom themes (files read in a worker thread: user, trusted project, settings ``"themes"``,
        packages), then the one settings ``"theme"`` (or ``--use-theme``) names. ``--no-themes`` skips the
        discovery; ``--theme PATH`` adds places (the ``RUN_ONLY`` block of the settings). ``again``
        (``/reload``): theme files gone since are dropped, and the theme in use is applied afresh."""
        self.watch(warn)
        found = await asyncio.to_thread(find_themes, session)
        if again:
            self._drop_files(found.paths)
        self.add(found.themes, found.paths)
        for warning in found.warnings:
            warn(warning)
        wanted = session.settings.get("theme") or DARK
        if isinstance(wanted, str) and self.use(wanted):
            if again:
                self.app.mutate_reactive(App.theme)  # the same name, maybe new colours: restyle
            return
        if isinstance(wanted, str) and session.extensions.has_handlers("resources_discover"):
            self.wanted = wanted  # an extension may bring it (``add_extension_themes``)
            return
        warn(self.unknown_theme(wanted))
        self.use(DARK)

    def watch(self, warn: Callable[[str], None]) -> None:
        """Start polling the theme in use's file (once; ``warn`` says why a changed file is not used)."""
        self._warn = warn
        if self._timer is None:
            self._timer = self.app.set_interval(self.POLL_SECONDS, self.poll, name="theme-hot-reload")

    def poll(self) -> None:
        """One look at the file of the theme in use; re-applies it when it changed and settled."""
        name = self.current
        path = self.paths.get(name)
        if path != self._watched:  # another theme (or none from a file): read it once it has settled, as
            self._watched, self._applied = path, None  # it may have changed since it was read
            self._seen = file_stamp(path) if path is not None else None
            return
        if path is None:
            return
        stamp = file_stamp(path)
        settled, self._seen = stamp == self._seen, stamp
        if stamp is None or stamp == self._applied or not settled:
            return
        self._applied = stamp
        try:
            theme = load_theme_file(path)
        except ThemeError as e:
            self._warn(f"{e} (the theme {name} stays as it was)")
            return
        theme = dataclasses.replace(theme, name=name)  # a file whose name changed keeps its place
        if theme == self.themes.get(name):
            return  # as it was read: nothing to restyle
        self.themes[name] = theme
        self.app.register_theme(theme)
        self.app.mutate_reactive(App.theme)  # the same name, new colours: restyle

    def export_colours(self) -> ExportColours | None:
        """The theme in use's ``export`` colours, for ``/export`` (None: a built-in theme, or none given)."""
        path = self.paths.get(self.current)
        return export_colours(path) if path is not None else None

    def unknown_theme(self, wanted: object) -> str:
        return f'settings "theme" is {wanted!r}; the themes are: {", ".join(self.names())}. Using dark.'

    async def add_extension_themes(self, session: AgentSession, warn: Callable[[str], None]) -> None:
        """The theme files and folders extensions returned from ``resources_discover`` (after start-up and
        after /reload), then the settings' theme if it is one of them."""
        places = [Path(p) for p in session.state().theme_paths]
        missing = [p for p in places if not p.exists()]
        found = await asyncio.to_thread(discover_themes, [p for p in places if p not in missing])
        self.add({name: found.themes[name] for name in found.paths}, found.paths)
        for warning in [
            *found.warnings,
            *(f"{p}: no theme file or folder here (resources_discover)" for p in missing),
        ]:
            warn(warning)
        wanted, self.wanted = self.wanted, None
        if wanted is not None and not self.use(wanted):
            warn(self.unknown_theme(wanted))
            self.use(DARK)

    def _drop_files(self, read_again: dict[str, Path]) -> None:
        """Forget the themes whose file was removed, or no longer names them (``read_again``: the themes
        just read, by name). Themes an extension brought are judged by their own file too, so a reload
        racing ``add_extension_themes`` keeps them."""
        files = set(read_again.values())

        def gone(name: str, path: Path | None) -> bool:
            return path is not None and (not path.exists() or (path in files and name not in read_again))

        for name in [n for n, path in self.paths.items() if gone(n, path)]:
            self.app.unregister_theme(name)
            del self.themes[name]
            del self.paths[name]
