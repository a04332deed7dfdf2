"""mulligan's rewind restoring the files its hidden span changed, under ``mulligan.rewind.restoreFiles``: a
real session with the bundled extension, real tools on real files, and the note the model gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import CustomMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.checkpoints.records import checkpoint_for_span
from caddie.session.store import SessionStore
from tests.runtime.harness import start_session

NOTE = {"what_happened": "wrong file edited", "true_current_state": "a.txt is v1", "next": "edit b instead"}


def _steps() -> list[Any]:
    return [
        faux_message([faux_tool_call("write", {"path": "a.txt", "content": "v1\n"})]),
        faux_message("set up"),
        faux_message(
            [
                faux_tool_call("write", {"path": "a.txt", "content": "v2 wrong\n"}, id="w1"),
                faux_tool_call("bash", {"command": "echo junk > junk.txt"}, id="b1"),
            ]
        ),
        faux_message(
            [faux_tool_call("mulligan_rewind", {"note": NOTE, "granularity": "last_turn"}, id="rw")]
        ),
        faux_message("retrying"),
    ]


async def _run(project: Path, mode: str, restore: str | None, answers: list[Any]) -> tuple[Any, str]:
    rewind: dict[str, Any] = {} if restore is None else {"restoreFiles": restore}
    run = await start_session(
        project,
        session="new",
        bundled=True,
        mode=mode,
        tools=["write", "bash", "mulligan_rewind"],
        settings={"disabledExtensions": ["goal", "mcp"], "mulligan": {"rewind": rewind}},
    )
    run.ui.answers = answers
    run.faux.set_responses(_steps())
    for prompt in ("set up a.txt", "now change it"):
        await run.session.prompt(prompt)
        await run.session.wait_for_idle()
    notes = [
        m
        for m in run.session.messages
        if isinstance(m, CustomMessage) and "Mulligan rewind" in text_of(m.content)
    ]
    await run.session.shutdown()
    return run, text_of(notes[-1].content)


async def test_always_restores_the_span_files_and_the_note_says_which(project: Path) -> None:
    _, note = await _run(project, "print", "always", [])
    assert (project / "a.txt").read_text() == "v1\n" and not (project / "junk.txt").exists()
    assert "<files-restored>\na.txt\njunk.txt\n</files-restored>" in note
    assert "is not undone" in note


async def test_ask_in_the_tui_keeps_the_files_when_the_user_says_no(project: Path) -> None:
    run, note = await _run(project, "tui", None, [False])
    assert ("confirm", "Restore files?") in run.ui.asked
    assert (project / "a.txt").read_text() == "v2 wrong\n" and (project / "junk.txt").exists()
    assert "**Files:** not restored (the user chose to keep them)" in note


async def test_headless_default_is_never(project: Path) -> None:
    run, note = await _run(project, "print", None, [])
    assert run.ui.asked == []
    assert (project / "a.txt").read_text() == "v2 wrong\n" and "**Files:**" not in note


@pytest.mark.parametrize("marker_then_prompt", [False, True])
def test_the_checkpoint_for_a_span_is_the_one_at_its_start(project: Path, marker_then_prompt: bool) -> None:
    store = SessionStore.in_memory(project)
    store.append_custom("checkpoint", {"commit": "a" * 40})
    store.append_message(faux_message("earlier work"))
    if marker_then_prompt:
        start = store.append_custom("mulligan-checkpoint", {"name": "cp"})
        store.append_custom("checkpoint", {"commit": "b" * 40})
    else:
        store.append_custom("checkpoint", {"commit": "b" * 40})
        start = store.append_custom("span-start", {})
    store.append_message(faux_message("hidden work"))
    found = checkpoint_for_span(store.branch(), start)
    assert found is not None and found.id == "b" * 40
