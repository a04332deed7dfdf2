"""Pi's workflow examples as Python twins (todo, handoff), loaded from examples/extensions/ and exercised
through a real session on the faux model."""

from __future__ import annotations

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
