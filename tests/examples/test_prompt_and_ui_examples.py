"""Pi's prompt, resource and small UI examples as Python twins (prompt-customizer, bash-spawn-hook,
dynamic-resources, qna, titlebar-spinner, message-renderer, timed-confirm, tools), each loaded from
examples/extensions/ and exercised through a real session on the faux model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.text import Text

from caddie.ai.messages import CustomMessage, ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import MessageRenderOptions
from tests.examples.harness import with_example


async def test_prompt_customizer_adds_guidance_for_the_active_tools(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "prompt_customizer.py", tools=["read", "ls"])
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("hi")
    prompt = run.requests[0].system_prompt or ""
    assert "## Tool Guidance\n\n• Use the `read` tool" in prompt
    assert "`bash` tool" not in prompt.split("## Tool Guidance")[1]
    assert prompt.rstrip().endswith("configure them via --append-system-prompt or project context files.")
    await run.session.shutdown("quit")


async def test_bash_spawn_hook_prefixes_commands_and_adds_the_variable(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "bash_spawn_hook.py")
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("bash", {"command": "echo hook=$CADDIE_SPAWN_HOOK"})),
            faux_message("ok"),
        ]
    )
    await run.session.prompt("run")
    result = next(m for m in run.session.messages if isinstance(m, ToolResultMessage))
    assert text_of(result.content) == "hook=1\n"
    await run.session.shutdown("quit")


async def test_dynamic_resources_bring_a_skill_and_a_template(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "dynamic_resources")
    names = [c.name for c in run.session.commands()]
    assert "skill:dynamic-resources" in names and "repo-summary" in names
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("/repo-summary")
    assert run.request_texts()[-1].startswith("Describe how this repository is organised")
    await run.session.shutdown("quit")


async def test_qna_puts_the_extracted_questions_in_the_editor(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "qna.py")
    run.faux.set_responses(
        [faux_message("Which database? And which port?"), faux_message("Q: Which database?\nA:")]
    )
    await run.session.prompt("set it up")
    await run.session.prompt("/qna")
    asked = run.faux.requests[-1]
    assert (asked.system_prompt or "").startswith("You are a question extractor.")
    assert text_of(asked.messages[0].content) == "Which database? And which port?"
    assert run.ui.editor_text == "Q: Which database?\nA:"
    assert run.ui.notices[-1] == ("Questions loaded. Edit and submit when ready.", "info")
    await run.session.shutdown("quit")


async def test_titlebar_spinner_spins_while_running_and_restores_the_title(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "titlebar_spinner.py")
    titles: list[str] = []
    run.ui.set_title = titles.append  # type: ignore[method-assign,assignment]
    run.faux.set_responses([faux_message("ok")])
    run.session.set_session_name("demo")
    await run.session.prompt("hi")
    await asyncio.sleep(0)
    assert titles[-1] == f"caddie - demo - {tmp_path.name}"
    await run.session.shutdown("quit")


async def test_titlebar_spinner_frames(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "titlebar_spinner.py")
    titles: list[str] = []
    run.ui.set_title = titles.append  # type: ignore[method-assign,assignment]
    handlers = run.session.extensions.extensions[0].handlers
    ctx = run.session.extensions.context()
    handlers["agent_start"][0](None, ctx)
    await asyncio.sleep(0.2)
    handlers["agent_settled"][0](None, ctx)
    spun = [t for t in titles if t[0] in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"]
    assert len(spun) >= 2 and spun[0].startswith("⠋ caddie - ") and spun[1].startswith("⠙ ")
    assert titles[-1] == f"caddie - {tmp_path.name}"
    await run.session.shutdown("quit")


async def test_message_renderer_draws_status_updates(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "message_renderer.py")
    await run.session.prompt("/status warn disk almost full")
    message = next(m for m in run.session.messages if isinstance(m, CustomMessage))
    assert message.content == "disk almost full" and message.details["level"] == "warn"
    spec = run.session.extensions.message_renderer("status-update")
    assert spec is not None
    short = spec.renderer(message, MessageRenderOptions(expanded=False))
    long = spec.renderer(message, MessageRenderOptions(expanded=True))
    assert isinstance(short, Text) and short.plain == "[WARN] disk almost full"
    assert isinstance(long, Text) and long.plain.startswith("[WARN] disk almost full\n  at ")
    await run.session.shutdown("quit")


async def test_timed_confirm_passes_its_timeouts(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "timed_confirm.py")
    timeouts: list[Any] = []

    async def confirm(title: str, message: str, timeout: float | None = None, *, signal: Any = None) -> bool:
        timeouts.append(timeout)
        return False

    async def select(
        title: str, options: Any, timeout: float | None = None, *, signal: Any = None
    ) -> str | None:
        timeouts.append(timeout)
        return "Option B"

    run.ui.confirm = confirm  # type: ignore[method-assign]
    run.ui.select = select  # type: ignore[method-assign]
    await run.session.prompt("/timed")
    await run.session.prompt("/timed-select")
    assert timeouts == [5, 10]
    assert [n for n, _ in run.ui.notices[-2:]] == ["Cancelled or timed out", "Selected: Option B"]
    await run.session.shutdown("quit")


async def test_tools_switches_tools_and_each_branch_keeps_its_choice(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "tools.py")
    run.faux.set_responses([faux_message("first"), faux_message("second")])
    run.ui.answers = ["☑ bash", "Done"]
    await run.session.prompt("/tools")
    assert "bash" not in [t.name for t in run.session.state().tools]
    await run.session.prompt("hello")
    without_bash = run.session.store.leaf_id  # the reply, after the first choice
    run.ui.answers = ["☐ bash", "Done"]
    await run.session.prompt("/tools")
    assert "bash" in [t.name for t in run.session.state().tools]
    assert without_bash is not None and await run.session.navigate_tree(without_bash)
    assert "bash" not in [t.name for t in run.session.state().tools]  # that branch's choice
    headless = await with_example(tmp_path, "tools.py", mode="print")
    await headless.session.prompt("/tools")
    assert headless.ui.notices[-1] == ("/tools requires TUI mode", "error")
    await headless.session.shutdown("quit")
    await run.session.shutdown("quit")
