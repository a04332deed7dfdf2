"""Pi 0.84.4's forms of the package commands and of ``-e`` that mean something else in caddie are refused or
warned about in one line (docs/packages.md, "Pi's forms"), never silently reinterpreted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.cli_args import CliError, pi_manage_arguments
from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["update", "--extensions"], ["update"]),
        (["update", "--extension", "pkg"], ["update", "pkg"]),
        (["update", "--extension=pkg", "-na"], ["update", "pkg"]),
        (["update", "-a", "--models"], ["update", "-a", "--models"]),
        (["install", "-a", "pkg", "-l"], ["install", "pkg", "-l"]),
        (["remove", "--no-approve", "pkg"], ["remove", "pkg"]),
        (["list"], ["list"]),
        (["list", "-a"], ["list", "--trust"]),
        (["config", "-na", "--json"], ["config", "--json"]),
        (["config", "off", "skill:x", "--approve"], ["config", "off", "skill:x", "--trust"]),
    ],
)
def test_pi_forms_that_mean_the_same_become_caddies_without_a_line(
    argv: list[str], expected: list[str]
) -> None:
    assert pi_manage_arguments(argv) == (expected, [])


def test_update_all_updates_the_packages_and_says_caddie_itself_is_not_updated() -> None:
    argv, notices = pi_manage_arguments(["update", "--all"])
    assert argv == ["update"]
    assert len(notices) == 1 and "does not update itself" in notices[0] and "uv tool upgrade" in notices[0]


@pytest.mark.parametrize("argv", [["update", "--self"], ["update", "pi"], ["update", "self", "--force"]])
def test_a_self_update_alone_is_refused(argv: list[str]) -> None:
    with pytest.raises(CliError, match="does not update itself"):
        pi_manage_arguments(argv)


def test_local_install_that_ignores_the_project_is_refused_as_pi_refuses_it() -> None:
    with pytest.raises(CliError, match="-na"):
        pi_manage_arguments(["install", "-l", "-na", "pkg"])


def test_the_command_refuses_a_self_update_and_warns_on_update_all(caddie: Caddie) -> None:
    refused = caddie.run("update", "--self")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "caddie does not update itself" in refused.stderr
    done = caddie.run("update", "--all")
    assert done.returncode == 0, done.stderr
    assert "caddie: warning: caddie does not update itself" in done.stderr
    assert "No packages to update." in done.stdout


@pytest.mark.parametrize("source", ["npm:pi-foo", "git:github.com/user/repo", "https://github.com/user/repo"])
def test_an_extension_pi_would_install_for_one_run_is_refused_before_anything_runs(
    caddie: Caddie, source: str
) -> None:
    result = caddie.run("-e", source, "-p", "--model", "fake/fake-model", "hi")
    assert result.returncode == 2
    assert result.stderr.startswith(f"caddie: -e {source}: caddie does not install")
    assert result.stderr.count("\n") == 1
    assert caddie.llm.llm_requests == []  # nothing was sent
    assert caddie.session_files() == []


def test_an_existing_folder_whose_name_looks_like_a_source_still_loads(caddie: Caddie) -> None:
    folder = caddie.project / "git:ext"
    folder.mkdir()
    (folder / "__init__.py").write_text(
        "def register(api):\n    api.on('session_start', lambda e, ctx: None)\n"
    )
    caddie.llm.push(fl.text("hello"))
    result = caddie.run("-e", "git:ext", "-p", "--model", "fake/fake-model", "hi")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello"


@pytest.mark.parametrize(
    ("colorfgbg", "theme", "line"),
    [("15;0", "dark", False), ("0;15", "light", False), ("0;default;7", "light", False), ("", "dark", True)],
)
def test_use_theme_light_slash_dark_follows_the_terminal_background(
    colorfgbg: str, theme: str, line: bool
) -> None:
    from caddie.cli_args import theme_for_terminal

    chosen, notice = theme_for_terminal("light/dark", {"COLORFGBG": colorfgbg} if colorfgbg else {})
    assert chosen == theme
    assert (notice is not None) == line
    if notice:
        assert notice == (
            "--use-theme light/dark: caddie cannot tell the terminal's background (no COLORFGBG); using dark"
        )
    assert theme_for_terminal("solarized", {}) == ("solarized", None)


def test_use_theme_pair_without_a_known_background_says_which_it_uses(caddie: Caddie) -> None:
    caddie.llm.push(fl.text("hello"))
    result = caddie.run("--use-theme", "paper/night", "-p", "--model", "fake/fake-model", "hi", COLORFGBG="")
    assert result.returncode == 0, result.stderr
    assert "caddie: warning: --use-theme paper/night: caddie cannot tell" in result.stderr
    assert result.stdout.strip() == "hello"


def _pi_package(folder: Path, **manifest: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "extensions").mkdir()
    (folder / "extensions" / "index.ts").write_text("export default function (pi) {}\n")
    package = {
        "name": "my-package",
        "keywords": ["pi-package"],
        "pi": {"extensions": ["./extensions"], **manifest},
    }
    (folder / "package.json").write_text(json.dumps(package))
    return folder


def test_installing_a_pi_package_folder_is_refused_in_one_line_naming_its_gallery_fields(
    caddie: Caddie,
) -> None:
    _pi_package(caddie.project / "pipkg", video="https://e.com/d.mp4", image="https://e.com/s.png")
    result = caddie.run("install", "./pipkg")
    assert result.returncode == 2
    assert result.stderr == (
        'caddie: ./pipkg is a Pi package (package.json with a "pi" manifest), whose extensions are TypeScript: '
        "caddie installs Python packages that declare caddie.* entry points in pyproject.toml (docs/packages.md); "
        "its gallery fields (image, video) are for Pi's package gallery, which caddie does not have\n"
    )
    assert not (caddie.home / "agent" / "settings.json").exists()  # nothing was written


def test_a_python_package_with_a_pi_manifest_too_is_told_the_manifest_is_not_read(tmp_path: Path) -> None:
    from caddie.cli_args import check_package_sources

    folder = _pi_package(tmp_path / "both", image="https://e.com/s.png")
    (folder / "pyproject.toml").write_text('[project]\nname = "both"\nversion = "0.1.0"\n')
    assert check_package_sources(["install", "-l", "./both"], str(tmp_path)) == [
        "./both: its package.json \"pi\" manifest is Pi's and not read: caddie loads what pyproject.toml's "
        "caddie.* entry points declare; its gallery fields (image) are for Pi's package gallery, which caddie "
        "does not have"
    ]
    assert check_package_sources(["remove", "./both"], str(tmp_path)) == []
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "package.json").write_text(
        '{"name": "plain"}'
    )  # an npm package, not Pi's: uv says what is wrong
    assert check_package_sources(["install", "./plain", "pypi-name"], str(tmp_path)) == []


def test_pis_typescript_extensions_given_to_e_are_refused_before_anything_runs(caddie: Caddie) -> None:
    _pi_package(caddie.project / "pipkg")
    for source, start in (
        (
            "pipkg/extensions/index.ts",
            "caddie: -e pipkg/extensions/index.ts: a TypeScript or JavaScript extension is Pi's",
        ),
        ("pipkg", 'caddie: -e pipkg is a Pi package (package.json with a "pi" manifest)'),
    ):
        result = caddie.run("-e", source, "-p", "--model", "fake/fake-model", "hi")
        assert result.returncode == 2
        assert result.stderr.startswith(start) and result.stderr.count("\n") == 1
    assert caddie.llm.llm_requests == []
