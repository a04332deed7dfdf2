"""Skills: parsing, validation warnings, the system-prompt block and ``/skill:`` expansion, on real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caddie.resources.skills import (
    Skill,
    SkillExpansionError,
    expand_skill_command,
    format_skills_for_prompt,
    load_skill_file,
    skill_files,
    validate_name,
)
from caddie.runtime.system_prompt import ToolLine, build_system_prompt
from tests.resources.helpers import write_skill


def test_a_valid_skill_loads_with_its_folder_as_base(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "pdf-tools", "pdf-tools", "Extracts text from PDF files.")
    loaded = load_skill_file(path, "user")
    assert loaded.warnings == []
    assert loaded.skill == Skill(
        "pdf-tools", "Extracts text from PDF files.", str(path), str(tmp_path / "pdf-tools"), "user", False
    )


def test_name_falls_back_to_the_folder_and_violations_only_warn(tmp_path: Path) -> None:
    no_name = load_skill_file(write_skill(tmp_path / "from-folder", None, "Has no name field."))
    assert no_name.skill is not None and no_name.skill.name == "from-folder"
    bad = load_skill_file(write_skill(tmp_path / "x", "Bad--Name-", "Loads anyway."))
    assert bad.skill is not None and bad.skill.name == "Bad--Name-"
    assert [w.split(": ", 1)[1] for w in bad.warnings] == [
        "name contains invalid characters (must be lowercase a-z, 0-9, hyphens only)",
        "name must not start or end with a hyphen",
        "name must not contain consecutive hyphens",
    ]
    long = load_skill_file(write_skill(tmp_path / "long", "long", "d" * 1025))
    assert long.skill is not None
    assert long.warnings == [
        f"skill {tmp_path / 'long' / 'SKILL.md'}: description exceeds 1024 characters (1025)"
    ]


def test_validate_name_rules() -> None:
    assert validate_name("pdf-processing") == []
    assert validate_name("a" * 65) == ["name exceeds 64 characters (65)"]
    assert validate_name("-pdf") == ["name must not start or end with a hyphen"]


def test_missing_description_warns_once_and_skips(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "nodesc", "nodesc", None)
    loaded = load_skill_file(path)
    assert loaded.skill is None
    assert loaded.warnings == [f"skill {path} has no description in its frontmatter; skipped"]
    blank = load_skill_file(write_skill(tmp_path / "blank", "blank", '"  "'))
    assert blank.skill is None and len(blank.warnings) == 1


def test_unreadable_and_broken_files_warn_and_never_raise(tmp_path: Path) -> None:
    binary = tmp_path / "bin" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"---\nname: bin\ndescription: \xff\xfe\n---\n")
    loaded = load_skill_file(binary)
    assert loaded.skill is None
    assert loaded.warnings == [f"skill {binary} could not be read (it is not UTF-8 text); skipped"]
    broken = tmp_path / "yaml" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\nname: [unclosed\ndescription: x\n---\nbody\n")
    result = load_skill_file(broken)
    assert result.skill is None and len(result.warnings) == 1
    assert result.warnings[0].startswith(f"skill {broken}: invalid YAML frontmatter")
    if os.geteuid() != 0:  # root reads everything
        locked = write_skill(tmp_path / "locked", "locked", "Locked away.")
        locked.chmod(0)
        try:
            assert load_skill_file(locked).warnings == [
                f"skill {locked} could not be read (Permission denied); skipped"
            ]
        finally:
            locked.chmod(0o644)


def test_a_plain_markdown_file_without_frontmatter_is_not_a_skill(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# just notes\n")
    assert load_skill_file(notes).skill is None
    assert load_skill_file(notes).warnings == []


def test_walk_modes(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root / "alpha", "alpha", "A.")
    write_skill(root / "alpha" / "nested", "nested", "Not reached: alpha is a skill folder.")
    write_skill(root / "group" / "beta", "beta", "B.")
    (root / "group" / "gamma.md").write_text("---\ndescription: G.\n---\nbody\n")
    (root / "top.md").write_text("---\ndescription: T.\n---\nbody\n")
    write_skill(root / ".hidden" / "h", "h", "Hidden.")
    write_skill(root / "node_modules" / "n", "n", "Dependency.")

    def rel(paths: list[str]) -> list[str]:
        return [os.path.relpath(p, root) for p in paths]

    assert rel(skill_files(root, "caddie")) == ["alpha/SKILL.md", "group/beta/SKILL.md", "top.md"]
    assert rel(skill_files(root, "agents")) == ["alpha/SKILL.md", "group/beta/SKILL.md", "group/gamma.md"]


def test_prompt_block_is_pis_format_escaped_and_hides_disabled_model_invocation() -> None:
    skills = [
        Skill("a-skill", 'Use for <tags> & "quotes"', "/s/a/SKILL.md", "/s/a"),
        Skill("manual", "Only by command", "/s/m/SKILL.md", "/s/m", disable_model_invocation=True),
    ]
    assert format_skills_for_prompt(skills) == (
        "\n\nThe following skills provide specialized instructions for specific tasks.\n"
        "Use the read tool to load a skill's file when the task matches its description.\n"
        "When a skill file references a relative path, resolve it against the skill directory (parent of "
        "SKILL.md / dirname of the path) and use that absolute path in tool commands.\n"
        "\n"
        "<available_skills>\n"
        "  <skill>\n"
        "    <name>a-skill</name>\n"
        "    <description>Use for &lt;tags&gt; &amp; &quot;quotes&quot;</description>\n"
        "    <location>/s/a/SKILL.md</location>\n"
        "  </skill>\n"
        "</available_skills>"
    )
    assert format_skills_for_prompt(skills[1:]) == ""


def test_system_prompt_lists_skills_only_when_read_is_active() -> None:
    skills = [Skill("demo", "Demo skill.", "/s/demo/SKILL.md", "/s/demo")]
    with_read = build_system_prompt(cwd="/p", tools=[ToolLine("read", "Read files")], skills=skills)
    without = build_system_prompt(cwd="/p", tools=[ToolLine("bash", "Run commands")], skills=skills)
    assert "<available_skills>" in with_read
    assert with_read.index("</available_skills>") < with_read.index("\nCurrent date:")
    assert "<available_skills>" not in without
    custom = build_system_prompt(
        cwd="/p", tools=[ToolLine("read", None)], custom_prompt="Mine.", skills=skills
    )
    assert custom.startswith("Mine.\n\nThe following skills")


def test_skill_command_expands_to_pis_message(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "demo", "demo", "Demo.", body="\n# Demo\n\nSteps.\n\n")
    skill = load_skill_file(path).skill
    assert skill is not None
    expected_block = (
        f'<skill name="demo" location="{path}">\nReferences are relative to {tmp_path / "demo"}.\n\n'
        "# Demo\n\nSteps.\n</skill>"
    )
    assert expand_skill_command("/skill:demo", [skill]) == expected_block
    assert expand_skill_command("/skill:demo  fix  the bug ", [skill]) == expected_block + "\n\nfix  the bug"
    assert expand_skill_command("/skill:other x", [skill]) == "/skill:other x"
    assert expand_skill_command("use /skill:demo", [skill]) == "use /skill:demo"
    path.unlink()
    with pytest.raises(SkillExpansionError, match="Cannot read the skill file"):
        expand_skill_command("/skill:demo", [skill])


def test_symlink_loops_in_a_skills_folder_end_quickly(tmp_path: Path) -> None:
    write_skill(tmp_path / "real", "real", "A real skill.")
    (tmp_path / "a").symlink_to(".")
    (tmp_path / "b").symlink_to(".")
    (tmp_path / "real" / "up").symlink_to("..")
    nested = tmp_path
    for _ in range(30):  # deeper than the walk goes
        nested = nested / "d"
    write_skill(nested, "too-deep", "Too deep.")
    assert skill_files(tmp_path) == [str(tmp_path / "real" / "SKILL.md")]
