"""Pi's commands example (``api.get_commands()``): extension commands, prompt templates and skills, each with
its source and file, listed through a real session."""

from __future__ import annotations

from pathlib import Path

from caddie.extensions.api import SlashCommandInfo, SourceInfo
from tests.examples.harness import with_example


def project_with_resources(cwd: Path) -> tuple[Path, Path]:
    prompts = cwd / ".caddie" / "prompts"
    prompts.mkdir(parents=True)
    template = prompts / "review.md"
    template.write_text("---\ndescription: Review code\n---\nReview $1 carefully.\n")
    skill = cwd / ".caddie" / "skills" / "tidy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: tidy\ndescription: Tidy the imports\n---\nSort imports.\n")
    return template, skill


async def test_get_commands_lists_templates_and_skills_with_their_source(tmp_path: Path) -> None:
    template, skill = project_with_resources(tmp_path)
    # skills are listed even where skill commands are off, as Pi's getCommands lists them
    run = await with_example(tmp_path, "commands.py", trust=True, settings={"enableSkillCommands": False})
    listed = run.session.core.runner.extensions[0].api.get_commands()  # type: ignore[union-attr]
    by_name = {c.name: c for c in listed}
    example = by_name["commands"].path
    assert by_name["commands"] == SlashCommandInfo(
        "commands", "List available slash commands", "extension", example, None, SourceInfo(example, "cli")
    )  # loaded as with -e: this run only
    assert example.endswith("commands.py")
    assert by_name["review"].source == "prompt" and by_name["review"].path == str(template)
    assert by_name["review"].description == "Review code" and by_name["review"].scope == "project"
    assert by_name["review"].source_info == SourceInfo(
        str(template), "auto", "project", base_dir=str(tmp_path / ".caddie")
    )
    assert by_name["skill:tidy"].source == "skill" and by_name["skill:tidy"].path == str(skill)
    assert [c.source for c in listed] == sorted(
        (c.source for c in listed), key=["extension", "prompt", "skill"].index
    )
    await run.session.shutdown("quit")


async def test_slash_commands_groups_them_and_shows_a_path(tmp_path: Path) -> None:
    template, _ = project_with_resources(tmp_path)
    run = await with_example(tmp_path, "commands.py", trust=True)
    run.ui.answers = ["/review - Review code", True]
    await run.session.prompt("/commands")
    assert run.ui.asked == [("select", "Available Commands"), ("confirm", "review")]
    assert run.ui.notices[-1] == (str(template), "info")
    run.ui.answers = ["--- Skills ---"]
    await run.session.prompt("/commands skill")
    assert run.ui.notices[-1] == (str(template), "info")  # a heading picks nothing
    await run.session.prompt("/commands tool")
    assert run.ui.notices[-1] == ("Unknown source 'tool': use extension, prompt or skill", "error")
    await run.session.shutdown("quit")


def test_the_listing_rows() -> None:
    from examples.extensions.commands import listing

    commands = [
        SlashCommandInfo("commands", "List", "extension", "/x/commands.py"),
        SlashCommandInfo("review", None, "prompt", "/p/review.md", "project"),
        SlashCommandInfo("skill:tidy", "Tidy", "skill", "/s/tidy/SKILL.md", "user"),
    ]
    assert listing(commands) == [
        "--- Extensions ---", "/commands - List", "--- Prompts ---", "/review", "--- Skills ---", "/skill:tidy - Tidy",
    ]  # fmt: skip
    assert listing(commands, "prompt") == ["--- Prompts ---", "/review"]
