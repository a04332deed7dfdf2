"""The system prompt: tools, guidelines, project instructions from the cwd upwards, date and cwd."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from caddie.config.paths import agent_dir
from caddie.runtime.system_prompt import ToolLine, build_system_prompt, load_context_files
from tests.runtime.harness import start_session


def test_context_files_come_global_first_then_root_down_to_cwd(tmp_path: Path) -> None:
    (agent_dir()).mkdir(parents=True, exist_ok=True)
    (agent_dir() / "AGENTS.md").write_text("global rules")
    repo = tmp_path / "repo"
    pkg = repo / "pkg"
    pkg.mkdir(parents=True)
    (repo / "AGENTS.md").write_text("repo rules")
    (repo / "CLAUDE.md").write_text("ignored: AGENTS.md wins in the same directory")
    (pkg / "CLAUDE.md").write_text("package rules")
    files = load_context_files(pkg, agent_dir())
    assert [f.content for f in files] == ["global rules", "repo rules", "package rules"]


def test_the_prompt_lists_tools_guidelines_instructions_date_and_cwd() -> None:
    from caddie.runtime.system_prompt import ContextFile

    prompt = build_system_prompt(
        cwd="/work/proj",
        tools=[
            ToolLine("read", "Read file contents", ["Read before you edit"]),
            ToolLine("bash", "Run commands"),
            ToolLine("secret", None),
        ],
        context_files=[ContextFile("/work/proj/AGENTS.md", "Use tabs.")],
        today=dt.date(2026, 11, 30),
    )
    assert "Available tools:\n- read: Read file contents\n- bash: Run commands\n\n" in prompt
    assert "secret" not in prompt
    assert (
        "- Use bash for file operations like ls, rg, find\n- Read before you edit\n- Be concise in your responses"
        in prompt
    )
    assert '<project_instructions path="/work/proj/AGENTS.md">\nUse tabs.\n</project_instructions>' in prompt
    assert prompt.endswith("\nCurrent date: 2026-11-30\nCurrent working directory: /work/proj")


async def test_the_session_prompt_changes_with_the_active_tools(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Project says hi.")
    run = await start_session(tmp_path, tools=["read", "ls", "bash"])
    run.session.core.tools.set_active(["read", "ls"])
    prompt = run.session.state().system_prompt
    assert "- read:" in prompt and "- ls:" in prompt and "- bash:" not in prompt
    assert "Project says hi." in prompt
    run.session.core.tools.set_active(["read", "bash", "edit"])  # edit: not in the --tools allowlist
    prompt = run.session.state().system_prompt
    assert "- bash:" in prompt and "- ls:" not in prompt and "- edit:" not in prompt


async def test_reload_reads_context_files_append_system_md_skills_and_templates_again(tmp_path: Path) -> None:
    """``/reload`` (here an extension command's ``ctx.reload()``, the path every mode shares) reads what the
    prompt is built from again, as Pi does: the next request carries the edited AGENTS.md and
    APPEND_SYSTEM.md and a new skill, and a new prompt template expands."""
    from caddie.ai.providers.faux import faux_message
    from caddie.extensions.api import ExtensionAPI
    from tests.resources.helpers import write_skill, write_template
    from tests.runtime.harness import inline_extension

    def register(api: ExtensionAPI) -> None:
        async def reload(_args: str, ctx: object) -> None:
            await ctx.reload()  # type: ignore[attr-defined]

        api.register_command("do-reload", reload)

    (tmp_path / "AGENTS.md").write_text("Rules, first edition.")
    run = await start_session(tmp_path, extensions=[inline_extension(register)])
    run.faux.set_responses([faux_message("one"), faux_message("two")])
    await run.session.prompt("hello")
    first = run.requests[0].system_prompt or ""
    assert "Rules, first edition." in first

    (tmp_path / "AGENTS.md").write_text("Rules, second edition.")
    (agent_dir() / "APPEND_SYSTEM.md").write_text("Appended after the reload.")
    write_skill(agent_dir() / "skills" / "fresh", "fresh", "A skill added while running.")
    write_template(agent_dir() / "prompts", "greet", "Greet $1 warmly.")
    await run.session.prompt("/do-reload")
    assert run.session.state().context_files == [str(tmp_path / "AGENTS.md")]
    await run.session.prompt("/greet Ada")

    second = run.requests[1].system_prompt or ""
    assert "Rules, second edition." in second and "first edition" not in second
    assert "Appended after the reload." in second
    assert "<name>fresh</name>" in second
    assert run.request_texts(1)[-1] == "Greet Ada warmly."
