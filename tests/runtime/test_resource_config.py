"""``caddie config``'s logic: listing every discovered item and switching one in the right settings file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.errors import ConfigurationError
from caddie.resources.discovery import DiscoveryRequest, discover
from caddie.runtime.factory import load_extension_set
from caddie.runtime.resource_config import find_items, list_resources, set_enabled, toggle
from caddie.runtime.trust import remember_trust
from tests.resources.helpers import write_json, write_skill, write_template


def settings(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def one(items: list[object], ref: str) -> object:
    found = find_items(items, ref)  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


async def test_list_and_switch_user_and_project_items(tmp_path: Path) -> None:
    cwd = tmp_path / "proj"
    write_skill(agent_dir() / "skills" / "mine", "mine", "Mine.")
    write_template(agent_dir() / "prompts", "fix", "Fix $1")
    write_skill(cwd / ".caddie" / "skills" / "theirs", "theirs", "Project's.")
    (agent_dir() / "extensions").mkdir(parents=True)
    (agent_dir() / "extensions" / "hello.py").write_text("def register(api):\n    pass\n")
    write_json(agent_dir() / "settings.json", {"theme": "dark", "skills": ["~/somewhere"]})
    remember_trust(cwd, True)

    items, _ = list_resources(str(cwd))
    ids = {i.id: i.enabled for i in items}
    assert ids == {
        "extension:hello": True,
        "extension:mulligan": True,
        "extension:goal": True,
        "extension:mcp": True,
        "skill:theirs": True,
        "skill:mine": True,
        "prompt:fix": True,
    }
    message = set_enabled(str(cwd), one(items, "skill:mine"), False)  # type: ignore[arg-type]
    assert message.endswith("skill mine is now off")
    set_enabled(str(cwd), one(items, "prompt:fix"), False)  # type: ignore[arg-type]
    set_enabled(str(cwd), one(items, "skill:theirs"), False)  # type: ignore[arg-type]
    set_enabled(str(cwd), one(items, "extension:hello"), False)  # type: ignore[arg-type]
    set_enabled(str(cwd), one(items, "extension:goal"), False)  # type: ignore[arg-type]
    assert settings(agent_dir() / "settings.json") == {
        "theme": "dark",
        "skills": ["~/somewhere", "-skills/mine"],
        "prompts": ["-prompts/fix.md"],
        "extensions": ["-extensions/hello.py"],
        "disabledExtensions": ["goal"],
    }
    assert settings(cwd / ".caddie" / "settings.json") == {"skills": ["-skills/theirs"]}

    found = discover(DiscoveryRequest(str(cwd), project_trusted=True))
    assert found.skills == [] and found.prompts == []
    loaded = await load_extension_set(str(cwd), extension_paths=[], no_extensions=False, trust=None)
    assert [e.name for e in loaded.extensions] == ["mulligan", "mcp"]

    items, _ = list_resources(str(cwd))
    now, _message = toggle(str(cwd), one(items, "skill:mine"))  # type: ignore[arg-type]
    assert now.enabled
    assert settings(agent_dir() / "settings.json")["skills"] == ["~/somewhere", "+skills/mine"]
    assert [s.name for s in discover(DiscoveryRequest(str(cwd), project_trusted=True)).skills] == ["mine"]


def test_items_from_the_command_line_cannot_be_switched(tmp_path: Path) -> None:
    from caddie.resources.discovery import ResourceItem

    item = ResourceItem("skill", "cli-skill", str(tmp_path / "SKILL.md"), "cli", "cli")
    with pytest.raises(ConfigurationError, match="comes from the cli"):
        set_enabled(str(tmp_path), item, False)


def test_a_settings_file_that_is_not_json_is_left_alone(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "mine", "mine", "Mine.")
    items, _ = list_resources(str(tmp_path))
    (agent_dir() / "settings.json").write_text("{ not json")
    with pytest.raises(ConfigurationError, match="is not valid JSON"):
        set_enabled(str(tmp_path), one(items, "skill:mine"), False)  # type: ignore[arg-type]
    assert (agent_dir() / "settings.json").read_text() == "{ not json"


def test_projects_with_skills_templates_or_packages_ask_for_trust(tmp_path: Path) -> None:
    from caddie.runtime.trust import project_has_code

    plain = tmp_path / "plain"
    plain.mkdir()
    assert not project_has_code(plain)
    for setup in (
        lambda p: write_skill(p / ".caddie" / "skills" / "s", "s", "S."),
        lambda p: write_template(p / ".caddie" / "prompts", "t", "T"),
        lambda p: write_skill(p / ".agents" / "skills" / "group" / "s", "s", "S."),
        lambda p: write_json(p / ".caddie" / "settings.json", {"packages": ["x"]}),
    ):
        project = tmp_path / f"p{len(list(tmp_path.iterdir()))}"
        (project / ".git").mkdir(parents=True)
        setup(project)
        assert project_has_code(project)


async def test_reload_finds_new_skills_and_enable_skill_commands_false_keeps_the_text(tmp_path: Path) -> None:
    from tests.runtime.harness import start_session

    write_skill(agent_dir() / "skills" / "first", "first", "First.")
    run = await start_session(tmp_path, settings={"enableSkillCommands": False})
    session = run.session
    assert "<name>first</name>" in session.state().system_prompt
    assert session.core.prompter.expand_text("/skill:first now") == "/skill:first now"
    assert [c.name for c in session.commands() if c.kind == "skill"] == []
    write_skill(agent_dir() / "skills" / "second", "second", "Second.")
    await session.reload()
    assert "<name>second</name>" in session.state().system_prompt
