"""Prompt templates and skills in the interactive UI: the slash menu shows them with their source, and
Enter sends the expanded text."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import UserMessage, text_of
from caddie.ai.providers.faux import faux_message
from caddie.config.paths import agent_dir
from caddie.modes.interactive.conversation import SkillBlock, UserBlock
from tests.resources.helpers import write_skill, write_template
from tests.tui.harness import SMALL, make_app, ready, settle, submit, type_text, widget_text


def last_user_text(faux: object) -> str:
    context = faux.requests[-1]  # type: ignore[attr-defined]
    users = [m for m in context.messages if isinstance(m, UserMessage)]
    return text_of(users[-1].content)


async def test_templates_and_skills_in_the_menu_and_expanded_on_enter(tmp_path: Path) -> None:
    template = write_template(
        agent_dir() / "prompts", "review", "Review $1 for ${@:2}", description="Review code"
    )
    write_template(tmp_path / ".caddie" / "prompts", "ship", "Ship $1")
    skill = write_skill(agent_dir() / "skills" / "tidy", "tidy", "Tidies code.", body="Tidy.\n")
    app, faux = make_app(tmp_path, [faux_message("done"), faux_message("tidied")], trust=True)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await type_text(pilot, "/")
        menu = {c.label: c.description for c in app.menu.completions}
        await pilot.press("escape")
        await submit(pilot, app, '/review src/app.py "error handling" naming')
        await settle(app, pilot)
        first = last_user_text(faux)
        await submit(pilot, app, "/skill:tidy quickly")
        await settle(app, pilot)
        second = last_user_text(faux)
    assert menu["/review"] == "Review code  (prompt · user)"
    assert menu["/ship"] == "Ship $1  (prompt · project)"
    assert menu["/skill:tidy"] == "Tidies code.  (skill · user)"
    assert first == "Review src/app.py for error handling naming"
    assert second == (
        f'<skill name="tidy" location="{skill}">\nReferences are relative to {skill.parent}.\n\nTidy.\n</skill>'
        "\n\nquickly"
    )
    assert template.exists()


async def test_a_skill_invocation_shows_as_one_collapsed_line_and_the_users_words(tmp_path: Path) -> None:
    write_skill(agent_dir() / "skills" / "tidy", "tidy", "Tidies code.", body="Step one.\nStep two.\n")
    app, _ = make_app(tmp_path, [faux_message("tidied")])
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        await submit(pilot, app, "/skill:tidy quickly")
        await settle(app, pilot)
        skill = app.conversation.blocks_of(SkillBlock)[0]
        collapsed = widget_text(skill)
        users = [b.text for b in app.conversation.blocks_of(UserBlock)]
        await pilot.press("ctrl+o")
        await pilot.pause()
        expanded = widget_text(skill)
        app.editor.set_text("")
        await pilot.press("up")
        recalled = app.editor.text
    assert collapsed.strip().endswith("[skill] tidy (ctrl+o to expand)") and "Step one" not in collapsed
    assert users == ["quickly"]
    assert "Step one." in expanded and "Step two." in expanded
    assert recalled == "/skill:tidy quickly"


async def test_the_startup_header_lists_what_was_loaded_and_quiet_startup_hides_it(tmp_path: Path) -> None:
    from caddie.modes.interactive.conversation import StartupHeader
    from tests.tui.harness import write_settings

    write_template(agent_dir() / "prompts", "review", "Review $1", description="Review code")
    write_skill(agent_dir() / "skills" / "tidy", "tidy", "Tidies code.", body="Tidy.\n")
    app, _ = make_app(tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        await ready(app, pilot)
        header = app.conversation.blocks_of(StartupHeader)[0]
        listed = widget_text(header)
        await pilot.press("ctrl+o")
        await pilot.pause()
        files = widget_text(header)
    write_settings(quietStartup=True)
    quiet_app, _ = make_app(tmp_path)
    async with quiet_app.run_test(size=SMALL) as pilot:
        await ready(quiet_app, pilot)
        quiet = widget_text(quiet_app.conversation.blocks_of(StartupHeader)[0])
    assert "[Skills]" in listed and "tidy" in listed and "[Prompts]" in listed and "/review" in listed
    assert "SKILL.md" not in listed and "SKILL.md" in files and "review.md" in files
    assert "[Skills]" not in quiet and quiet.strip().startswith("caddie")
