"""Pi's subagent example as a Python package (examples/extensions/subagent/): agents run as real caddie
child processes (``--mode json``) on the faux echo model, alone, in parallel and chained."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.config.paths import agent_dir
from tests.examples.harness import with_example

ECHO_AGENT = """---
name: {name}
description: answers with its task
tools: read, ls
model: faux/echo
---

You repeat the task.
"""


def _agents(*names: str, folder: Path | None = None) -> None:
    target = folder or agent_dir() / "agents"
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        (target / f"{name}.md").write_text(ECHO_AGENT.format(name=name))
    (target / "notes.md").write_text("# not an agent: no front matter\n")


def _result(run: object) -> ToolResultMessage:
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)][-1]  # type: ignore[attr-defined]


async def test_a_chain_passes_each_answer_on_as_previous(tmp_path: Path) -> None:
    _agents("scout", "worker")
    run = await with_example(tmp_path, "subagent")
    chain = [
        {"agent": "scout", "task": "find the parser"},
        {"agent": "worker", "task": "fix what {previous} says"},
    ]
    run.faux.set_responses([faux_message(faux_tool_call("subagent", {"chain": chain})), faux_message("done")])
    await run.session.prompt("delegate")
    result = _result(run)
    assert not result.is_error, text_of(result.content)
    assert text_of(result.content) == "Task: fix what Task: find the parser says"
    details = result.details
    assert [d["agent"] for d in details] == ["scout", "worker"] and all(d["exit_code"] == 0 for d in details)
    assert details[0]["turns"] == 1
    await run.session.shutdown("quit")


async def test_parallel_tasks_all_run_and_are_summarised(tmp_path: Path) -> None:
    _agents("scout")
    run = await with_example(tmp_path, "subagent")
    tasks = [{"agent": "scout", "task": "models"}, {"agent": "scout", "task": "providers"}]
    run.faux.set_responses([faux_message(faux_tool_call("subagent", {"tasks": tasks})), faux_message("done")])
    await run.session.prompt("look in parallel")
    text = text_of(_result(run).content)
    assert text.startswith("Parallel: 2/2 succeeded\n\n")
    assert "[scout] completed: Task: models" in text and "[scout] completed: Task: providers" in text
    updates = [e for e in run.events if e.type == "tool_execution_update"]
    assert len(updates) == 2
    await run.session.shutdown("quit")


async def test_bad_calls_are_errors_that_name_the_agents(tmp_path: Path) -> None:
    _agents("scout")
    run = await with_example(tmp_path, "subagent")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("subagent", {"agent": "ghost", "task": "boo"}),
                    faux_tool_call("subagent", {"agent": "scout"}),
                    faux_tool_call("subagent", {"tasks": [{"agent": "scout", "task": "x"}] * 9}),
                ]
            ),
            faux_message("ok"),
        ]
    )
    await run.session.prompt("try")
    results = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [True, True, True]
    assert text_of(results[0].content) == 'Unknown agent: "ghost". Available agents: "scout".'
    assert text_of(results[1].content).startswith("Invalid parameters. Provide exactly one mode.")
    assert text_of(results[2].content) == "Too many parallel tasks (9). Max is 8."
    await run.session.shutdown("quit")


async def test_project_agents_need_a_yes_in_an_untrusted_project(tmp_path: Path) -> None:
    _agents("local", folder=tmp_path / ".caddie" / "agents")
    run = await with_example(tmp_path, "subagent")
    run.ui.answers = [False]
    call = {"agent": "local", "task": "x", "agentScope": "both"}
    run.faux.set_responses([faux_message(faux_tool_call("subagent", call)), faux_message("ok")])
    await run.session.prompt("use the project agent")
    assert text_of(_result(run).content) == "Canceled: project-local agents not approved."
    assert run.ui.asked[-1] == ("confirm", "Run project-local agents?")
    await run.session.shutdown("quit")
