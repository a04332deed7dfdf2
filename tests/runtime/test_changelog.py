"""caddie's changelog: parsed as Pi parses CHANGELOG.md, shipped in the wheel, and what a new session shows."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import caddie
from caddie.config.changelog import (
    NO_ENTRIES,
    changelog_path,
    full_changelog,
    newer_than,
    parse_changelog,
    read_changelog,
    startup_changelog,
    take_startup_changelog,
)
from caddie.config.paths import agent_dir
from caddie.config.settings import load_settings

REPO = Path(__file__).resolve().parents[2]

SAMPLE = """# Changelog

intro text, not an entry

## [2.0.0] - 2026-12-03

- two

## Unreleased notes without a version

- dropped, as Pi drops them

## 1.10.0

### Added

- ten

## [1.2.3]
- one-two-three
"""


def test_entries_are_the_version_sections_newest_first_as_written() -> None:
    entries = parse_changelog(SAMPLE)
    assert [e.version for e in entries] == [(2, 0, 0), (1, 10, 0), (1, 2, 3)]
    assert entries[0].text == "## [2.0.0] - 2026-12-03\n\n- two"
    assert entries[1].text == "## 1.10.0\n\n### Added\n\n- ten"
    assert "dropped" not in full_changelog(entries)


def test_slash_changelog_shows_every_entry_oldest_first() -> None:
    text = full_changelog(parse_changelog(SAMPLE))
    assert text.index("1.2.3") < text.index("1.10.0") < text.index("2.0.0")
    assert full_changelog([]) == NO_ENTRIES


def test_newer_than_compares_numerically() -> None:
    entries = parse_changelog(SAMPLE)
    assert [e.version for e in newer_than(entries, "1.9.9")] == [(2, 0, 0), (1, 10, 0)]
    assert [e.version for e in newer_than(entries, "2")] == []
    assert len(newer_than(entries, "junk")) == 3  # parts that are not numbers count as 0, as in Pi


def test_startup_shows_what_is_new_and_records_the_running_version() -> None:
    entries = parse_changelog(SAMPLE)
    shown = startup_changelog(entries, "1.5.0", "2.0.0", session_has_messages=False, collapse=False)
    assert shown.text == "## [2.0.0] - 2026-12-03\n\n- two\n\n## 1.10.0\n\n### Added\n\n- ten"
    assert shown.record_version == "2.0.0"
    collapsed = startup_changelog(entries, "1.5.0", "2.0.0", session_has_messages=False, collapse=True)
    assert collapsed.text == "Updated to v2.0.0. Use /changelog to view full changelog."
    assert collapsed.collapsed


def test_startup_shows_nothing_on_a_first_run_a_resumed_session_or_when_up_to_date() -> None:
    entries = parse_changelog(SAMPLE)
    first = startup_changelog(entries, None, "2.0.0", session_has_messages=False, collapse=False)
    assert first.text is None and first.record_version == "2.0.0"
    resumed = startup_changelog(entries, "1.0.0", "2.0.0", session_has_messages=True, collapse=False)
    assert resumed.text is None and resumed.record_version is None
    current = startup_changelog(entries, "2.0.0", "2.0.0", session_has_messages=False, collapse=False)
    assert current.text is None and current.record_version is None


def test_the_seen_version_is_saved_to_the_global_settings(tmp_path: Path) -> None:
    settings = load_settings(tmp_path)
    first = take_startup_changelog(settings, session_has_messages=False)
    assert first.text is None
    saved = json.loads((agent_dir() / "settings.json").read_text())
    assert saved["lastChangelogVersion"] == caddie.__version__
    (agent_dir() / "settings.json").write_text(json.dumps({"lastChangelogVersion": "0.0.1"}))
    again = take_startup_changelog(load_settings(tmp_path), session_has_messages=False)
    assert again.text is not None and again.text.startswith(f"## [{caddie.__version__}]")


def test_caddie_ships_its_changelog() -> None:
    """A source checkout reads the root CHANGELOG.md; the wheel carries it inside the package, where
    changelog_path looks first."""
    assert changelog_path() == REPO / "CHANGELOG.md"
    entries = read_changelog()
    assert entries and ".".join(map(str, entries[0].version)) == caddie.__version__
    hatch = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert hatch["force-include"]["CHANGELOG.md"] == "caddie/CHANGELOG.md"


def test_the_changelog_settings_are_known_keys(tmp_path: Path) -> None:
    from caddie.config.settings_keys import settings_notices

    (agent_dir()).mkdir(parents=True, exist_ok=True)
    (agent_dir() / "settings.json").write_text(
        json.dumps({"lastChangelogVersion": "0.1.0", "collapseChangelog": True})
    )
    assert settings_notices(load_settings(tmp_path).files) == []
