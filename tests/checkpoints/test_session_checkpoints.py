"""Checkpoints in a running session: one before each prompt and each goal-style iteration, recording what
the file tools and bash changed; restoring files, the conversation, or both; refused while a run goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.checkpoints.service import RestoreRefused
from caddie.extensions.api import ExtensionAPI
from caddie.session.entries import CustomEntry
from tests.checkpoints.conftest import fingerprint
from tests.runtime.harness import inline_extension, start_session


def _files(checkpoint: Any) -> set[tuple[str, str]]:
    return {(f["status"], f["path"]) for f in checkpoint.files}


async def test_each_prompt_takes_a_checkpoint_and_restore_brings_back_files_and_conversation(
    project: Path,
) -> None:
    before_git = fingerprint(project)
    run = await start_session(project, session="new", tools=["read", "write", "edit", "bash"])
    session = run.session
    run.faux.set_responses(
        [
            faux_message([faux_tool_call("write", {"path": "notes.md", "content": "hello\n"})]),
            faux_message(
                [faux_tool_call("edit", {"path": "app.py", "edits": [{"oldText": "v1", "newText": "v2"}]})]
            ),
            faux_message(
                [faux_tool_call("bash", {"command": "rm lib/util.py && mkdir -p gen && echo 1 > gen/x"})]
            ),
            faux_message("Done."),
            faux_message("Second answer."),
        ]
    )
    await session.prompt("make changes")
    await session.wait_for_idle()
    assert (project / "app.py").read_text() == "print('v2')\n"
    await session.prompt("and now?")
    await session.wait_for_idle()

    found = session.checkpoints.all()
    assert [c.reason for c in found] == ["prompt", "prompt"]
    assert found[0].prompt == "make changes" and found[1].prompt == "and now?"
    assert _files(found[1]) == {("A", "notes.md"), ("M", "app.py"), ("D", "lib/util.py"), ("A", "gen/x")}
    # The checkpoint entry is the prompt's parent in the tree (what /tree and /fork go by).
    store = session.store
    prompt_entry = store.children(found[0].entry_id)[0]
    assert prompt_entry.type == "message"

    report = await session.checkpoints.restore(found[0].id[:8], conversation=True)
    assert report is not None
    assert sorted(report.written) == ["app.py", "lib/util.py"]
    assert sorted(report.removed) == ["gen/x", "notes.md"]
    assert (project / "app.py").read_text() == "print('v1')\n" and not (project / "gen").exists()
    assert store.leaf_id == found[0].entry_id  # the conversation as it was before "make changes"
    assert session.messages == [] and run.ui.editor_text == "make changes"
    restore_points = [c for c in session.checkpoints.all() if c.reason == "restore"]
    assert len(restore_points) == 1 and restore_points[0].restores == found[0].id
    assert fingerprint(project) == before_git

    # Undo: the files as they were before the restore.
    await session.checkpoints.restore(report.before)
    assert (project / "app.py").read_text() == "print('v2')\n" and (project / "gen" / "x").exists()

    # The session file holds every checkpoint: a resumed session knows them.
    assert store.session_file is not None
    raw = Path(store.session_file).read_text()
    assert raw.count('"customType":"checkpoint"') == 4
    await session.shutdown()


async def test_a_follow_up_iteration_takes_its_own_checkpoint(project: Path) -> None:
    def register(api: ExtensionAPI) -> None:
        state = {"sent": False}

        def on_end(event: Any, ctx: Any) -> None:
            if not state["sent"]:
                state["sent"] = True
                api.send_message("goal-continue", "keep going", deliver_as="follow_up", trigger_turn=True)

        api.on("agent_end", on_end)

    run = await start_session(
        project, session="new", tools=["write"], extensions=[inline_extension(register)]
    )
    run.faux.set_responses(
        [
            faux_message([faux_tool_call("write", {"path": "a.txt", "content": "1\n"})]),
            faux_message("first"),
            faux_message([faux_tool_call("write", {"path": "a.txt", "content": "2\n"})]),
            faux_message("second"),
        ]
    )
    await run.session.prompt("go")
    await run.session.wait_for_idle()
    found = run.session.checkpoints.all()
    assert [c.prompt for c in found] == ["go", "keep going"]
    assert _files(found[1]) == {("A", "a.txt")}
    await run.session.shutdown()


async def test_restore_is_refused_while_the_agent_works_and_in_memory_sessions_take_none(
    project: Path,
) -> None:
    run = await start_session(project, session="new", tools=["bash"])
    session = run.session
    run.faux.set_responses([faux_message("ok")])
    await session.prompt("first")
    await session.wait_for_idle()
    started = asyncio.Event()
    session.subscribe(lambda e: started.set() if e.type == "tool_execution_start" else None)
    run.faux.set_responses(
        [faux_message([faux_tool_call("bash", {"command": "sleep 5"})]), faux_message("x")]
    )
    task = asyncio.create_task(session.prompt("slow"))
    await started.wait()
    with pytest.raises(RestoreRefused, match="The agent is working"):
        await session.checkpoints.restore(session.checkpoints.all()[0].id)
    session.abort()
    await task
    await session.wait_for_idle()
    await session.shutdown()

    memory = await start_session(project, tools=["write"])
    memory.faux.set_responses([faux_message("ok")])
    await memory.session.prompt("hi")
    await memory.session.wait_for_idle()
    assert memory.session.checkpoints.all() == []
    assert not any(isinstance(e, CustomEntry) for e in memory.session.store.entries())
    with pytest.raises(RestoreRefused, match="no file checkpoints: it has no session file"):
        await memory.session.checkpoints.restore("abcd")
    await memory.session.shutdown()


async def test_without_git_the_prompt_still_runs_and_says_once_why_there_is_no_checkpoint(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    run = await start_session(project, session="new", tools=["write"])
    run.faux.set_responses([faux_message("one"), faux_message("two")])
    for prompt in ("first", "second"):
        await run.session.prompt(prompt)
        await run.session.wait_for_idle()
    assert [m.role for m in run.session.messages] == ["user", "assistant", "user", "assistant"]
    notices = [e.message for e in run.events if e.type == "notice" and "checkpoint" in e.message]
    assert len(notices) == 1 and "need git, which is not installed" in notices[0]
    assert run.session.checkpoints.all() == []
    await run.session.shutdown()
