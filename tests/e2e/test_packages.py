"""Packages end to end: install the example package from examples/ (offline, with uv), use its extension,
skill and prompt template, switch them with ``caddie config``, remove it; project packages; broken ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TypedDict

from tests.e2e.conftest import Caddie
from tests.support import fake_llm as fl

EXAMPLE = Path(__file__).parents[2] / "examples" / "package"


class _Offline(TypedDict):
    UV_OFFLINE: str
    UV_NO_PROGRESS: str


OFFLINE: _Offline = {"UV_OFFLINE": "1", "UV_NO_PROGRESS": "1"}


def settings(caddie: Caddie) -> dict[str, object]:
    result: dict[str, object] = json.loads((caddie.home / "agent" / "settings.json").read_text())
    return result


def ask(caddie: Caddie, *args: str) -> tuple[fl.RecordedRequest, str]:
    caddie.llm.push(fl.text("ok"))
    result = caddie.run("-p", "--no-session", "--model", "fake/fake-model", *args, **OFFLINE)
    assert result.returncode == 0, result.stderr
    return caddie.llm.llm_requests[-1], result.stderr


def test_install_use_switch_update_and_remove_the_example_package(caddie: Caddie, tmp_path: Path) -> None:
    example = tmp_path / "example-package"
    shutil.copytree(EXAMPLE, example)
    installed = caddie.run("install", str(example), timeout=180, **OFFLINE)
    assert installed.returncode == 0, installed.stderr
    assert "extensions: example" in installed.stdout and "skills: example" in installed.stdout
    assert settings(caddie)["packages"] == [str(example)]
    envs = list((caddie.home / "agent" / "packages").iterdir())
    assert len(envs) == 1 and (envs[0] / "caddie-package.json").is_file()

    listed = caddie.run("list", **OFFLINE)
    assert listed.returncode == 0 and f"{example}  [user]" in listed.stdout
    assert "prompts: example" in listed.stdout

    # the extension: a command (no model call) and a tool the model is offered
    greet = caddie.run("-p", "--no-session", "--model", "fake/fake-model", "/greet Ann", **OFFLINE)
    assert greet.returncode == 0, greet.stderr
    assert "Hello, Ann! (from caddie-example-package)" in greet.stdout + greet.stderr
    # the prompt template, expanded; the skill, in the system prompt; the tool, offered
    request, _ = ask(caddie, "/changelog 1.2.0 security fixes only")
    assert request.last_user_text == (
        "Draft the changelog entry for version 1.2.0 of this project, from the git history since the previous "
        "tag.\nsecurity fixes only"
    )
    assert "<name>release-notes</name>" in (request.system or "")
    assert "word_count" in request.tool_names
    request, _ = ask(caddie, "/skill:release-notes v2")
    assert (request.last_user_text or "").startswith('<skill name="release-notes" location="')
    assert (request.last_user_text or "").endswith("</skill>\n\nv2")

    # caddie config: list, then switch the skill and the extension off and back on
    config = caddie.run("config", "--json", **OFFLINE)
    items = {i["id"]: i for i in json.loads(config.stdout)}
    assert items["skill:release-notes"]["enabled"] is True
    assert items["extension:example"]["package"] == str(example)
    off = caddie.run("config", "off", "skill:release-notes", **OFFLINE)
    assert off.returncode == 0 and "skill release-notes is now off" in off.stdout, off.stderr
    caddie.run("config", "off", "extension:example", **OFFLINE)
    assert settings(caddie)["packages"] == [
        {"source": str(example), "skills": ["-release-notes"], "extensions": ["-example"]}
    ]
    request, _ = ask(caddie, "/changelog 3")
    assert (
        "<name>release-notes</name>" not in (request.system or "") and "word_count" not in request.tool_names
    )
    assert (request.last_user_text or "").startswith("Draft the changelog entry for version 3")
    caddie.run("config", "toggle", "skill:release-notes", **OFFLINE)
    caddie.run("config", "on", "extension:example", **OFFLINE)
    request, _ = ask(caddie, "hi")
    assert "<name>release-notes</name>" in (request.system or "") and "word_count" in request.tool_names

    # the whole package off
    caddie.run("config", "off", f"package:{example}", **OFFLINE)
    request, _ = ask(caddie, "/changelog 4")
    assert request.last_user_text == "/changelog 4" and "word_count" not in request.tool_names
    caddie.run("config", "on", f"package:{example}", **OFFLINE)

    # caddie update reinstalls a local package from its folder
    template = example / "src" / "caddie_example_package" / "prompts" / "changelog.md"
    template.write_text("Changelog for $1, updated.")
    updated = caddie.run("update", timeout=180, **OFFLINE)
    assert updated.returncode == 0, updated.stderr
    request, _ = ask(caddie, "/changelog 4.1")
    assert request.last_user_text == "Changelog for 4.1, updated."

    removed = caddie.run("remove", str(example), **OFFLINE)
    assert removed.returncode == 0, removed.stderr
    assert settings(caddie)["packages"] == []
    assert list((caddie.home / "agent" / "packages").iterdir()) == []
    request, _ = ask(caddie, "/changelog 5")
    assert request.last_user_text == "/changelog 5" and "<available_skills>" not in (request.system or "")
    again = caddie.run("remove", str(example), **OFFLINE)
    assert again.returncode == 2 and "is not installed" in again.stderr


def test_trusted_projects_install_their_packages_on_first_run(caddie: Caddie) -> None:
    (caddie.project / ".caddie").mkdir()
    (caddie.project / ".caddie" / "settings.json").write_text(json.dumps({"packages": [str(EXAMPLE)]}))
    request, stderr = ask(caddie, "/changelog 1.0")
    assert request.last_user_text == "/changelog 1.0"
    assert "ignored packages because this project is not trusted" in stderr
    assert not (caddie.project / ".caddie" / "packages").exists()

    request, stderr = ask(caddie, "--trust", "/changelog 1.0")
    assert (request.last_user_text or "").startswith("Draft the changelog entry for version 1.0")
    assert "installed project package" in stderr
    assert len(list((caddie.project / ".caddie" / "packages").iterdir())) == 1
    request, stderr = ask(caddie, "--trust", "/changelog 1.1")
    assert "installed project package" not in stderr  # only the first run installs


def test_a_package_that_fails_to_import_is_named_and_skipped(caddie: Caddie, tmp_path: Path) -> None:
    source = tmp_path / "broken"
    module = source / "src" / "broken_pkg"
    (module / "prompts").mkdir(parents=True)
    (module / "__init__.py").write_text("import not_a_module_anywhere  # noqa\n")
    (module / "prompts" / "still.md").write_text("Templates of a broken package still work: $1\n")
    (source / "pyproject.toml").write_text(
        '[project]\nname = "broken-pkg"\nversion = "0.1.0"\n'
        '[project.entry-points."caddie.extensions"]\nboom = "broken_pkg"\n'
        '[project.entry-points."caddie.prompts"]\nboom = "broken_pkg:prompts"\n'
        '[project.entry-points."caddie.skills"]\nescape = "broken_pkg:../../x"\n'  # not module[:attr]
        '[build-system]\nrequires = ["uv_build>=0.8.0,<0.20"]\nbuild-backend = "uv_build"\n'
    )
    installed = caddie.run("install", str(source), timeout=180, **OFFLINE)
    assert installed.returncode == 0, installed.stderr
    bad_entry = (
        "caddie.skills entry point escape = 'broken_pkg:../../x' is not module or module:attr; ignored"
    )
    assert bad_entry in installed.stderr
    for command in (["--help"], ["list"], ["config", "--json"]):  # one bad entry bricks nothing
        result = caddie.run(*command, **OFFLINE)
        assert result.returncode == 0, (command, result.stderr)
    request, stderr = ask(caddie, "/still yes")
    assert bad_entry in stderr and "Traceback" not in stderr
    assert (
        f"package broken-pkg ({source}): extension boom failed to load: ModuleNotFoundError: "
        "No module named 'not_a_module_anywhere'"
    ) in stderr
    assert (
        request.last_user_text == "Templates of a broken package still work: yes\n"
    )  # no frontmatter: as is


def test_install_mistakes_are_one_line(caddie: Caddie, tmp_path: Path) -> None:
    missing = caddie.run("install", str(tmp_path / "nowhere"), **OFFLINE)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"caddie: no such package folder: {tmp_path / 'nowhere'}"
    bad = caddie.run("install", "not a name!", **OFFLINE)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "is not a PyPI name" in bad.stderr
    unknown = caddie.run("config", "off", "skill:nope", **OFFLINE)
    assert unknown.returncode == 2 and "nothing called skill:nope was found" in unknown.stderr
    settings_file = caddie.home / "agent" / "settings.json"
    settings_file.write_text('{"theme":"dark",   "packages": [  ]}\n')  # the user's own layout
    not_there = caddie.run("remove", "caddie-not-installed", **OFFLINE)
    assert not_there.returncode == 2 and "is not installed" in not_there.stderr
    assert settings_file.read_text() == '{"theme":"dark",   "packages": [  ]}\n'  # a refusal writes nothing
