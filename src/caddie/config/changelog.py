"""caddie's CHANGELOG.md: where the installed copy is, its entries by version, and what start-up shows.

As Pi's: an entry is a ``## [x.y.z] …`` section (headings that name no version end the entry before them);
``/changelog`` shows every entry, oldest first; a new session shows the entries newer than the settings'
``lastChangelogVersion`` and records the running version, or only records it on a first run (nothing shown).
``collapseChangelog`` turns the start-up text into one line. Pi also rewrites relative links to its GitHub
repository at the entry's tag; caddie's changelog links nothing, so it shows the text as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import caddie
from caddie.config.settings import Settings

NO_ENTRIES = "No changelog entries found."
_VERSION_HEADING = re.compile(r"##\s+\[?(\d+)\.(\d+)\.(\d+)\]?")

Version = tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class ChangelogEntry:
    version: Version
    text: str
    """The section as written, its ``##`` heading included, without surrounding blank lines."""


@dataclass(frozen=True, slots=True)
class StartupChangelog:
    """What a new session shows about the changelog, and what it records."""

    text: str | None
    """Markdown (the new entries) or, collapsed, one line; None: nothing to show."""
    collapsed: bool
    record_version: str | None
    """The version to save as ``lastChangelogVersion`` (None: leave the setting alone)."""


def changelog_path() -> Path | None:
    """The CHANGELOG.md that came with caddie: inside the installed package (the wheel puts it there), or
    at the root of a source checkout; None when neither has one."""
    packaged = resources.files(caddie).joinpath("CHANGELOG.md")
    if packaged.is_file():
        return Path(str(packaged))
    checkout = Path(caddie.__file__).resolve().parents[2] / "CHANGELOG.md"
    return checkout if checkout.is_file() else None


def read_changelog(path: Path | None = None) -> list[ChangelogEntry]:
    """The entries of ``path`` (default: caddie's own), newest first as written; [] when it is missing or
    unreadable."""
    path = path or changelog_path()
    if path is None:
        return []
    try:
        return parse_changelog(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return []


def parse_changelog(text: str) -> list[ChangelogEntry]:
    entries: list[ChangelogEntry] = []
    version: Version | None = None
    lines: list[str] = []
    for line in [*text.split("\n"), "## end"]:
        if not line.startswith("## "):
            if version is not None:
                lines.append(line)
            continue
        if version is not None:
            entries.append(ChangelogEntry(version, "\n".join(lines).strip()))
        found = _VERSION_HEADING.match(line)
        version = (int(found[1]), int(found[2]), int(found[3])) if found else None
        lines = [line]
    return entries


def parse_version(text: str) -> Version:
    """``"1.2"`` → ``(1, 2, 0)``; parts that are not numbers count as 0 (as Pi reads the setting)."""
    parts = [int(p) if p.isdigit() else 0 for p in text.strip().split(".")[:3]]
    padded = [*parts, 0, 0, 0]
    return (padded[0], padded[1], padded[2])


def newer_than(entries: list[ChangelogEntry], last_seen: str) -> list[ChangelogEntry]:
    seen = parse_version(last_seen)
    return [e for e in entries if e.version > seen]


def full_changelog(entries: list[ChangelogEntry]) -> str:
    """``/changelog``: every entry, oldest first (the newest ends next to the editor), as Pi shows them."""
    return "\n\n".join(e.text for e in reversed(entries)) if entries else NO_ENTRIES


def startup_changelog(
    entries: list[ChangelogEntry],
    last_seen: object,
    running_version: str,
    *,
    session_has_messages: bool,
    collapse: bool,
) -> StartupChangelog:
    """What a session that starts shows: nothing for a resumed session or a first run (which records the
    version), else the entries newer than ``last_seen`` (recording the running version when there are
    any)."""
    if session_has_messages:
        return StartupChangelog(None, collapse, None)
    if not isinstance(last_seen, str) or not last_seen:
        return StartupChangelog(None, collapse, running_version)
    new = newer_than(entries, last_seen)
    if not new:
        return StartupChangelog(None, collapse, None)
    if collapse:
        latest = ".".join(str(n) for n in new[0].version)
        line = f"Updated to v{latest}. Use /changelog to view full changelog."
        return StartupChangelog(line, True, running_version)
    return StartupChangelog("\n\n".join(e.text for e in new), False, running_version)


def take_startup_changelog(settings: Settings, *, session_has_messages: bool) -> StartupChangelog:
    """``startup_changelog`` for caddie's own changelog and these settings, saving the version it records
    as ``lastChangelogVersion`` in the global settings (a file that cannot be written only means the notes
    show again next time)."""
    shown = startup_changelog(
        read_changelog(),
        settings.get("lastChangelogVersion"),
        caddie.__version__,
        session_has_messages=session_has_messages,
        collapse=settings.get("collapseChangelog") is True,
    )
    if shown.record_version is not None:
        try:
            settings.save_global({"lastChangelogVersion": shown.record_version})
        except (OSError, ValueError):
            pass
    return shown
