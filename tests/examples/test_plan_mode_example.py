"""Pi's plan-mode example as a Python package (examples/extensions/plan_mode/): read-only exploration,
then a tracked plan — through a real session on the faux model, with the real tools."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import CustomMessage, ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from tests.examples.harness import with_example

PLAN = "Looked around.\n\n**Plan:**\n1. Create the `config` loader module\n2. **Write tests for the loader**\n3. ok\n"


async def test_plan_mode_is_read_only_and_says_so_to_the_model(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "plan_mode")
    await run.session.prompt("/plan")
    tools = [t.name for t in run.session.state().tools]
    assert "edit" not in tools and "write" not in tools and {"read", "bash", "grep", "ls"} <= set(tools)
    assert run.ui.statuses["plan-mode"] == "⏸ plan"
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("bash", {"command": "ls"}),
                    faux_tool_call("bash", {"command": "rm -rf src"}),
                    faux_tool_call("bash", {"command": "cat a > b"}),
                ]
            ),
            faux_message("no plan yet"),
        ]
    )
    await run.session.prompt("look around")
    ls, rm, redirect = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert not ls.is_error
    assert rm.is_error and text_of(rm.content).startswith("Plan mode: command blocked (not allowlisted).")
    assert redirect.is_error
    sent = run.requests[0].messages
    assert any("[PLAN MODE ACTIVE]" in text_of(m.content) for m in sent if m.role == "user")
    await run.session.prompt("/plan")
    assert {"edit", "write"} <= {t.name for t in run.session.state().tools}
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("carry on")
    assert not any(
        "[PLAN MODE ACTIVE]" in text_of(m.content) for m in run.requests[-1].messages if m.role == "user"
    )
    await run.session.shutdown("quit")


async def test_a_plan_is_executed_and_its_steps_tracked_to_the_end(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "plan_mode", flags={"plan": True})
    assert "write" not in [t.name for t in run.session.state().tools]
    run.ui.answers = ["Execute the plan (track progress)"]
    run.faux.set_responses(
        [
            faux_message(PLAN),
            faux_message("Noted the steps."),  # the step list arrives as a follow-up of its own
            faux_message("Loader added. [DONE:1]"),
            faux_message("Tests written [DONE:2]"),
            faux_message("All done."),
        ]
    )
    await run.session.prompt("plan the config work")
    await run.session.wait_for_idle()
    assert run.ui.asked[0] == ("select", "Plan mode - what next?")
    assert "write" in [t.name for t in run.session.state().tools]
    await run.session.prompt("continue")
    await run.session.wait_for_idle()
    customs = {
        m.custom_type: text_of(m.content) for m in run.session.messages if isinstance(m, CustomMessage)
    }
    assert (
        customs["plan-todo-list"]
        == "**Plan Steps (2):**\n\n1. ☐ Config loader module\n2. ☐ Tests for the loader"
    )
    assert (
        "Remaining steps:\n1. Config loader module\n2. Tests for the loader" in customs["plan-mode-execute"]
    )
    assert (
        customs["plan-complete"]
        == "**Plan Complete!** ✓\n\n~~Config loader module~~\n~~Tests for the loader~~"
    )
    assert "plan-mode" not in run.ui.statuses and "plan-todos" not in run.ui.widgets
    await run.session.prompt("/todos")
    assert run.ui.notices[-1] == ("No todos. Create a plan first with /plan", "info")
    await run.session.shutdown("quit")


async def test_progress_shows_in_the_status_and_widget_while_executing(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "plan_mode", flags={"plan": True})
    run.ui.answers = ["Execute the plan (track progress)"]
    run.faux.set_responses(
        [faux_message(PLAN), faux_message("Loader added. [DONE:1]"), faux_message("next?")]
    )
    await run.session.prompt("plan the config work")
    await run.session.wait_for_idle()
    assert run.ui.statuses["plan-mode"] == "📋 1/2"
    assert run.ui.widgets["plan-todos"][0] == ["☑ Config loader module", "☐ Tests for the loader"]
    await run.session.shutdown("quit")


async def test_plan_state_survives_a_resume(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "plan_mode", session="new", flags={"plan": True})
    run.ui.answers = ["Stay in plan mode"]
    run.faux.set_responses([faux_message(PLAN)])
    await run.session.prompt("plan")
    await run.session.wait_for_idle()
    path = run.session.store.session_file
    await run.session.shutdown("quit")
    assert path is not None
    again = await with_example(tmp_path, "plan_mode", session="file", session_file=path)
    assert "write" not in [t.name for t in again.session.state().tools]
    await again.session.prompt("/todos")
    assert again.ui.notices[-1] == (
        "Plan Progress:\n1. ○ Config loader module\n2. ○ Tests for the loader",
        "info",
    )
    await again.session.shutdown("quit")


def test_the_allowlist_and_step_extraction() -> None:
    import importlib.util
    import sys

    from tests.examples.harness import EXAMPLES

    spec = importlib.util.spec_from_file_location("plan_mode_steps", EXAMPLES / "plan_mode" / "steps.py")
    assert spec is not None and spec.loader is not None
    steps = importlib.util.module_from_spec(spec)
    sys.modules["plan_mode_steps"] = steps
    spec.loader.exec_module(steps)
    assert steps.is_safe_command("git log --oneline") and steps.is_safe_command("grep -rn foo src")
    assert not steps.is_safe_command("git commit -am x") and not steps.is_safe_command("echo hi > f")
    assert not steps.is_safe_command("python script.py")  # not on the allowlist
    found = steps.extract_steps(PLAN)
    assert [(s.step, s.text) for s in found] == [(1, "Config loader module"), (2, "Tests for the loader")]
    assert steps.clean_step_text("Run the " + "x" * 60).endswith("...")
    assert steps.mark_completed("[DONE:2] and [done:7]", found) == 2 and found[1].completed
