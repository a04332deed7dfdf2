"""Pi's workflow examples as Python twins (todo, handoff), loaded from examples/extensions/ and exercised
through a real session on the faux model."""

from __future__ import annotations

import json
from pathlib import Path

from caddie.ai.messages import ToolResultMessage, UserMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.session.entries import MessageEntry
from tests.examples.harness import with_example


async def test_todo_keeps_its_list_in_the_results_and_follows_the_tree(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "todo.py")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("todo", {"action": "add", "text": "write tests"}),
                    faux_tool_call("todo", {"action": "add", "text": "ship"}),
                ]
            ),
            faux_message("added"),
            faux_message(faux_tool_call("todo", {"action": "toggle", "id": 1})),
            faux_message("done"),
            faux_message(
                [
                    faux_tool_call("todo", {"action": "toggle", "id": 9}),
                    faux_tool_call("todo", {"action": "add"}),
                ]
            ),
            faux_message("errors"),
        ]
    )
    await run.session.prompt("plan")
    second_prompt_leaf = run.session.store.leaf_id
    await run.session.prompt("finish one")
    await run.session.prompt("bad calls")
    results = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results] == [
        "Added todo #1: write tests",
        "Added todo #2: ship",
        "Todo #1 completed",
        "Todo #9 not found",
        "Error: text required for add",
    ]
    await run.session.prompt("/todos")
    assert run.ui.notices[-1] == ("Todos: 1/2 completed\n[x] #1: write tests\n[ ] #2: ship", "info")
    # back to before the toggle: the list is what it was there
    assert second_prompt_leaf is not None
    assert await run.session.navigate_tree(second_prompt_leaf)
    await run.session.prompt("/todos")
    assert run.ui.notices[-1] == ("Todos: 0/2 completed\n[ ] #1: write tests\n[ ] #2: ship", "info")
    await run.session.shutdown("quit")


async def test_handoff_writes_a_prompt_and_starts_a_new_session_with_it(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "handoff.py", session="new")
    run.faux.set_responses(
        [faux_message("we fixed the parser"), faux_message("## Context\nparser fixed\n## Task\nteams")]
    )
    await run.session.prompt("fix the parser")
    old_file = run.session.store.session_file
    run.ui.answers = ["## Context\nparser fixed\n## Task\nteams, carefully"]
    await run.session.prompt("/handoff now do it for teams")
    asked = run.faux.requests[-1]
    request = text_of(asked.messages[0].content)
    assert asked.system_prompt is not None and asked.system_prompt.startswith(
        "You are a context transfer assistant."
    )
    assert "[User]: fix the parser" in request and request.endswith(
        "## User's Goal for New Thread\n\nnow do it for teams"
    )
    assert run.ui.asked[-1] == ("editor", "Edit handoff prompt")
    assert run.session.store.session_file != old_file
    assert run.session.store.header.parent_session == old_file
    assert not any(
        isinstance(e, MessageEntry) and isinstance(e.message, UserMessage)
        for e in run.session.store.entries()
    )
    assert run.ui.editor_text == "## Context\nparser fixed\n## Task\nteams, carefully"
    assert run.ui.notices[-1] == ("Handoff ready. Submit when ready.", "info")
    await run.session.shutdown("quit")


async def test_handoff_needs_a_goal_and_the_terminal_ui(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "handoff.py")
    await run.session.prompt("/handoff")
    assert run.ui.notices[-1] == ("Usage: /handoff <goal for new thread>", "error")
    await run.session.prompt("/handoff something")
    assert run.ui.notices[-1] == ("No conversation to hand off", "error")
    await run.session.shutdown("quit")
    headless = await with_example(tmp_path, "handoff.py", mode="print")
    await headless.session.prompt("/handoff something")
    assert headless.ui.notices[-1] == ("handoff requires interactive mode", "error")
    await headless.session.shutdown("quit")


def _presets(tmp_path: Path) -> None:
    from caddie.config.paths import agent_dir

    agent = agent_dir()
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "presets.json").write_text(
        json.dumps(
            {
                "plan": {
                    "thinkingLevel": "high",
                    "tools": ["read", "ls", "nope"],
                    "instructions": "PLAN ONLY.",
                },
                "fast": {"provider": "faux", "model": "faux-2", "thinkingLevel": "low"},
            }
        )
    )
    (tmp_path / ".caddie").mkdir()
    (tmp_path / ".caddie" / "presets.json").write_text(json.dumps({"fast": {"thinkingLevel": "minimal"}}))


async def test_preset_from_the_flag_applies_tools_thinking_and_instructions(tmp_path: Path) -> None:
    _presets(tmp_path)
    run = await with_example(tmp_path, "preset.py", flags={"preset": "plan"})
    assert run.session.thinking_level == "high"
    assert [t.name for t in run.session.state().tools] == ["read", "ls"]
    assert ('Preset "plan": Unknown tools: nope', "warning") in run.ui.notices
    assert run.ui.statuses["preset"] == "preset:plan"
    run.faux.set_responses([faux_message("planned")])
    await run.session.prompt("plan it")
    assert (run.requests[0].system_prompt or "").endswith("\n\nPLAN ONLY.")
    saved = [e for e in run.session.store.entries() if getattr(e, "custom_type", None) == "preset-state"]
    assert saved and saved[-1].data == {"name": "plan"}  # type: ignore[union-attr]
    await run.session.shutdown("quit")


async def test_preset_command_switches_and_none_restores(tmp_path: Path) -> None:
    _presets(tmp_path)
    run = await with_example(tmp_path, "preset.py")
    before_tools = [t.name for t in run.session.state().tools]
    before_level = run.session.thinking_level
    await run.session.prompt("/preset fast")  # the project's "fast" replaced the global one
    assert run.session.thinking_level == "minimal" and run.ui.statuses["preset"] == "preset:fast"
    await run.session.prompt("/preset missing")
    assert run.ui.notices[-1] == ('Unknown preset "missing". Available: plan, fast', "error")
    run.ui.answers = ["(none) — Clear active preset, restore defaults"]
    await run.session.prompt("/preset")
    assert run.ui.asked[-1] == ("select", "Select Preset")
    assert run.session.thinking_level == before_level
    assert [t.name for t in run.session.state().tools] == before_tools
    assert "preset" not in run.ui.statuses
    await run.session.shutdown("quit")
