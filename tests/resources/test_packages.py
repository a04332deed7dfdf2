"""Package sources, filters and failed installs (real uv, offline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.resources.packages import (
    PackageError,
    configured_packages,
    filter_enabled,
    install,
    install_dir,
    packages_root,
    parse_source,
)
from tests.resources.helpers import write_json


@pytest.mark.parametrize(
    ("source", "kind", "requirement", "identity", "pinned"),
    [
        ("caddie-tools", "pypi", "caddie-tools", "caddie-tools", False),
        ("pypi:Caddie_Tools==1.2", "pypi", "Caddie_Tools==1.2", "caddie-tools", True),
        (
            "git:github.com/me/tools",
            "git",
            "git+https://github.com/me/tools",
            "https://github.com/me/tools",
            False,
        ),
        (
            "git:github.com/me/tools@v1",
            "git",
            "git+https://github.com/me/tools@v1",
            "https://github.com/me/tools",
            True,
        ),
        (
            "https://github.com/me/tools.git@abc",
            "git",
            "git+https://github.com/me/tools.git@abc",
            "https://github.com/me/tools",
            True,
        ),
        (
            "git:git@github.com:me/tools@v2",
            "git",
            "git+ssh://git@github.com/me/tools@v2",
            "ssh://git@github.com/me/tools",
            True,
        ),
        ("ssh://git@host/me/tools", "git", "git+ssh://git@host/me/tools", "ssh://git@host/me/tools", False),
        ("git+https://host/x/y@main", "git", "git+https://host/x/y@main", "https://host/x/y", True),
    ],
)
def test_sources(
    source: str, kind: str, requirement: str, identity: str, pinned: bool, tmp_path: Path
) -> None:
    spec = parse_source(source, "user", tmp_path)
    assert (spec.kind, spec.requirement, spec.identity, spec.pinned) == (kind, requirement, identity, pinned)


def test_local_paths_resolve_against_the_command_line_or_the_settings_folder(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    assert parse_source("./pkg", "user", tmp_path, relative_to=tmp_path).identity == str(tmp_path / "pkg")
    assert parse_source("pkg", "user", tmp_path, relative_to=tmp_path).kind == "local"  # it exists
    assert parse_source("./x", "user", tmp_path).identity == str(agent_dir() / "x")
    assert parse_source("../vendor/p", "project", tmp_path).identity == str(tmp_path / "vendor" / "p")
    with pytest.raises(PackageError, match="is not a PyPI name"):
        parse_source("two words", "user", tmp_path)
    with pytest.raises(PackageError, match="empty"):
        parse_source("  ", "user", tmp_path)


def test_settings_entries_project_first_and_bad_ones_warn(tmp_path: Path) -> None:
    write_json(
        agent_dir() / "settings.json", {"packages": ["shared", {"source": "mine", "enabled": False}, 42]}
    )
    write_json(tmp_path / ".caddie" / "settings.json", {"packages": [{"source": "shared", "skills": ["-x"]}]})
    specs, warnings = configured_packages(tmp_path, project_trusted=True)
    assert [(s.source, s.scope, s.enabled, s.filters) for s in specs] == [
        ("shared", "project", True, {"skills": ["-x"]}),
        ("mine", "user", False, {}),
    ]
    assert len(warnings) == 1 and 'needs a "source"' in warnings[0]
    specs, _ = configured_packages(tmp_path, project_trusted=False)
    assert [s.scope for s in specs] == ["user", "user"]


def test_filters() -> None:
    assert filter_enabled("a", None)
    assert not filter_enabled("a", [])
    assert filter_enabled("a", ["a", "b"]) and not filter_enabled("c", ["a", "b"])
    assert not filter_enabled("a", ["-a"]) and filter_enabled("b", ["-a"])
    assert filter_enabled("c", ["a", "+c"]) and not filter_enabled("a", ["+a", "-a"])


def test_a_failed_first_install_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_OFFLINE", "1")
    spec = parse_source("caddie-surely-no-such-package-3f9a", "user", tmp_path)
    with pytest.raises(PackageError, match="could not install caddie-surely-no-such-package-3f9a"):
        install(spec, tmp_path)
    assert not install_dir(spec, tmp_path).exists()
    assert (
        not packages_root("user", tmp_path).exists() or list(packages_root("user", tmp_path).iterdir()) == []
    )


def test_without_uv_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pkg").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(PackageError, match=r"installing packages needs uv, which is not on PATH"):
        install(parse_source(str(tmp_path / "pkg"), "user", tmp_path), tmp_path)
