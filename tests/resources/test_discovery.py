"""Where skills and templates come from: precedence, trust, settings lists, switches, and warnings."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from caddie.config.paths import agent_dir
from caddie.resources.discovery import (
    DiscoveryRequest,
    ExtraPath,
    agents_home,
    ancestor_agents_skill_dirs,
    discover,
    is_enabled,
)
from tests.resources.helpers import write_json, write_skill, write_template


def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    cwd = root / "sub" / "dir"
    cwd.mkdir(parents=True)
    return cwd


def names(resources_items: Sequence[object]) -> list[str]:
    return [getattr(i, "name") for i in resources_items]  # noqa: B009


def test_every_location_in_precedence_order(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    repo = cwd.parent.parent
    write_skill(agent_dir() / "skills" / "user-caddie", "user-caddie", "U1.")
    write_skill(agents_home() / "skills" / "user-agents", "user-agents", "U2.")
    write_skill(cwd / ".caddie" / "skills" / "proj-caddie", "proj-caddie", "P1.")
    write_skill(cwd / ".agents" / "skills" / "cwd-agents", "cwd-agents", "P2.")
    write_skill(repo / ".agents" / "skills" / "root-agents", "root-agents", "P3.")
    write_skill(tmp_path / ".agents" / "skills" / "above-git-root", "above", "Never: outside the repo.")
    write_skill(tmp_path / "shared" / "from-settings", "from-settings", "S.")
    write_skill(tmp_path / "cli" / "from-cli", "from-cli", "C.")
    write_json(agent_dir() / "settings.json", {"skills": [str(tmp_path / "shared")]})

    found = discover(DiscoveryRequest(str(cwd), project_trusted=True, skill_paths=[str(tmp_path / "cli")]))
    assert names(found.skills) == [
        "from-cli",
        "from-settings",
        "proj-caddie",
        "cwd-agents",
        "root-agents",
        "user-caddie",
        "user-agents",
    ]
    assert found.warnings == []
    assert {s.name: s.source for s in found.skills}["proj-caddie"] == "project"
    assert {s.name: s.source for s in found.skills}["user-agents"] == "user"


def test_project_skills_and_templates_need_trust(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    write_skill(cwd / ".caddie" / "skills" / "proj", "proj", "P.")
    write_skill(cwd / ".agents" / "skills" / "agents", "agents", "A.")
    write_template(cwd / ".caddie" / "prompts", "deploy", "Deploy $1")
    write_skill(tmp_path / "elsewhere" / "listed", "listed", "Listed by the project.")
    write_json(cwd / ".caddie" / "settings.json", {"skills": [str(tmp_path / "elsewhere")]})
    write_template(agent_dir() / "prompts", "mine", "Mine")

    untrusted = discover(DiscoveryRequest(str(cwd), project_trusted=False))
    assert names(untrusted.skills) == []
    assert names(untrusted.prompts) == ["mine"]
    trusted = discover(DiscoveryRequest(str(cwd), project_trusted=True))
    assert names(trusted.skills) == ["listed", "proj", "agents"]
    assert names(trusted.prompts) == ["deploy", "mine"]


def test_no_skills_keeps_cli_skills_and_no_templates_keeps_cli_templates(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "discovered", "discovered", "D.")
    write_template(agent_dir() / "prompts", "found", "F")
    cli_skill = write_skill(tmp_path / "mine", "mine", "M.")
    cli_template = write_template(tmp_path / "t", "explicit", "E")
    found = discover(
        DiscoveryRequest(
            str(tmp_path),
            no_skills=True,
            skill_paths=[str(cli_skill)],
            no_prompt_templates=True,
            prompt_paths=[str(cli_template)],
        )
    )
    assert names(found.skills) == ["mine"]
    assert names(found.prompts) == ["explicit"]


def test_collisions_keep_the_first_and_warn_once(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    first = write_skill(cwd / ".caddie" / "skills" / "dup", "dup", "Project's.")
    second = write_skill(agent_dir() / "skills" / "dup", "dup", "User's.")
    tp = write_template(cwd / ".caddie" / "prompts", "fix", "project")
    tu = write_template(agent_dir() / "prompts", "fix", "user")
    found = discover(DiscoveryRequest(str(cwd), project_trusted=True))
    assert [(s.name, s.description) for s in found.skills] == [("dup", "Project's.")]
    assert found.prompts[0].content == "project"
    assert found.warnings == [
        f'skill "dup" at {second} is ignored: {first} has the same name',
        f'prompt template "/fix" at {tu} is ignored: {tp} has the same name',
    ]


def test_the_same_file_twice_is_loaded_once_silently(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "real" / "one", "one", "One.")
    (agent_dir() / "skills").mkdir(parents=True)
    os.symlink(real.parent, agent_dir() / "skills" / "one")
    found = discover(DiscoveryRequest(str(tmp_path), skill_paths=[str(tmp_path / "real")]))
    assert names(found.skills) == ["one"] and found.warnings == []


def test_missing_paths_and_bad_files_warn_but_discovery_goes_on(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "good", "good", "Good.")
    write_skill(agent_dir() / "skills" / "nodesc", "nodesc", None)
    (tmp_path / "file.txt").write_text("x")
    found = discover(
        DiscoveryRequest(str(tmp_path), skill_paths=[str(tmp_path / "nope"), str(tmp_path / "file.txt")])
    )
    assert names(found.skills) == ["good"]
    assert found.warnings == [
        f"skill path {tmp_path / 'nope'} does not exist",
        f"skill path {tmp_path / 'file.txt'} is not a Markdown (.md) file or a folder",
        f"skill {agent_dir() / 'skills' / 'nodesc' / 'SKILL.md'} has no description in its frontmatter; skipped",
    ]


def test_extension_paths_come_last(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "same", "same", "User's.")
    write_skill(tmp_path / "ext" / "same", "same", "Extension's.")
    write_skill(tmp_path / "ext" / "extra", "extra", "Extra.")
    write_template(tmp_path / "extp", "ext-prompt", "hello")
    found = discover(
        DiscoveryRequest(
            str(tmp_path),
            extension_skill_paths=[ExtraPath(str(tmp_path / "ext"), "myext")],
            extension_prompt_paths=[ExtraPath(str(tmp_path / "extp"), "myext")],
        )
    )
    assert [(s.name, s.source) for s in found.skills] == [("same", "user"), ("extra", "extension myext")]
    assert [(p.name, p.source) for p in found.prompts] == [("ext-prompt", "extension myext")]
    assert len(found.warnings) == 1 and "is ignored" in found.warnings[0]


def test_switches_in_settings_turn_discovered_items_off_and_on(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "keep", "keep", "K.")
    write_skill(agent_dir() / "skills" / "drop", "drop", "D.")
    write_skill(agent_dir() / "skills" / "old-a", "old-a", "A.")
    write_skill(agent_dir() / "skills" / "old-b", "old-b", "B.")
    write_template(agent_dir() / "prompts", "p1", "x")
    write_template(agent_dir() / "prompts", "p2", "y")
    write_json(
        agent_dir() / "settings.json",
        {
            "skills": ["-skills/drop", "!skills/old-*", "+skills/old-b"],
            "prompts": [f"-{agent_dir()}/prompts/p2.md"],
        },
    )
    found = discover(DiscoveryRequest(str(tmp_path)))
    assert names(found.skills) == ["keep", "old-b"]
    assert names(found.prompts) == ["p1"]
    off = {i.name for i in found.items if not i.enabled}
    assert off == {"drop", "old-a", "p2"}


def test_is_enabled_matches_relative_absolute_and_skill_folders(tmp_path: Path) -> None:
    base = str(tmp_path)
    skill = str(tmp_path / "skills" / "x" / "SKILL.md")
    assert is_enabled(skill, [], base)
    assert not is_enabled(skill, ["-skills/x"], base)
    assert not is_enabled(skill, ["-./skills/x/"], base)
    assert not is_enabled(skill, [f"-{tmp_path}/skills/x/SKILL.md"], base)
    assert is_enabled(skill, ["-skills/y"], base)
    assert is_enabled(skill, ["!skills/*", "+skills/x"], base)
    assert not is_enabled(skill, ["+skills/x", "-skills/x"], base)


def test_agents_dirs_stop_at_the_git_root(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    dirs = ancestor_agents_skill_dirs(str(cwd))
    assert dirs == [
        str(cwd / ".agents" / "skills"),
        str(cwd.parent / ".agents" / "skills"),
        str(cwd.parent.parent / ".agents" / "skills"),
    ]


def test_agents_dirs_without_a_git_root_stop_at_home_and_at_folders_others_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    cwd = home / "code" / "proj"
    cwd.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert ancestor_agents_skill_dirs(str(cwd)) == [
        str(cwd / ".agents" / "skills"),
        str(cwd.parent / ".agents" / "skills"),
        str(home / ".agents" / "skills"),  # home is the last (tmp_path above it is not searched)
    ]
    shared = tmp_path / "shared"  # like /tmp: anyone may create shared/.agents
    (shared / "proj").mkdir(parents=True)
    shared.chmod(0o1777)
    assert ancestor_agents_skill_dirs(str(shared / "proj")) == [str(shared / "proj" / ".agents" / "skills")]
