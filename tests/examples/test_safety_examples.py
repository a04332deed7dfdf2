"""The safety examples (Pi's permission-gate, protected-paths, confirm-destructive, dirty-repo-guard,
project-trust), each loaded from examples/extensions/ and driven through a real session on the faux model,
with the real tools on real files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from caddie.ai.messages import ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.loader import load_extensions, path_source
from caddie.runtime.project_trust import decide_project_trust
from tests.examples.harness import example, with_example
from tests.runtime.harness import RecordingUI


def _results(run: object) -> list[ToolResultMessage]:
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)]  # type: ignore[attr-defined]


async def test_permission_gate_asks_before_rm_rf_and_obeys_the_answer(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    run = await with_example(tmp_path, "permission_gate.py")
    rm = faux_tool_call("bash", {"command": "rm -rf build"})
    run.faux.set_responses(
        [faux_message(rm), faux_message("stopped"), faux_message(rm), faux_message("gone")]
    )
    run.ui.answers = ["No"]
    await run.session.prompt("clean")
    assert (tmp_path / "build").exists()
    assert "Blocked by user" in _results(run)[-1].content[0].text  # type: ignore[union-attr]
    assert run.ui.asked[-1][0] == "select" and "rm -rf build" in run.ui.asked[-1][1]
    run.ui.answers = ["Yes"]
    await run.session.prompt("clean, really")
    assert not (tmp_path / "build").exists()
    await run.session.shutdown("quit")


async def test_permission_gate_blocks_without_a_ui_and_lets_safe_commands_through(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "permission_gate.py", mode="print")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("bash", {"command": "sudo ls"}),
                    faux_tool_call("bash", {"command": "echo ok"}),
                ]
            ),
            faux_message("done"),
        ]
    )
    await run.session.prompt("go")
    blocked, fine = _results(run)
    assert blocked.is_error and "no UI for confirmation" in blocked.content[0].text  # type: ignore[union-attr]
    assert not fine.is_error and fine.content[0].text == "ok\n"  # type: ignore[union-attr]
    assert run.ui.asked == []
    await run.session.shutdown("quit")


async def test_protected_paths_refuses_env_and_git_but_writes_elsewhere(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "protected_paths.py")
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("write", {"path": ".env", "content": "KEY=1"}),
                    faux_tool_call("write", {"path": "notes.txt", "content": "hi"}),
                ]
            ),
            faux_message("done"),
        ]
    )
    await run.session.prompt("write")
    env, notes = _results(run)
    assert not notes.is_error
    assert env.is_error and 'Path ".env" is protected' in env.content[0].text  # type: ignore[union-attr]
    assert not (tmp_path / ".env").exists() and (tmp_path / "notes.txt").read_text() == "hi"
    assert ("Blocked write to protected path: .env", "warning") in run.ui.notices
    await run.session.shutdown("quit")


async def test_confirm_destructive_keeps_the_session_unless_the_user_agrees(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "confirm_destructive.py", session="new")
    first = run.session.store.session_id
    run.ui.answers = [False]
    assert await run.session.new_session() is False
    assert run.session.store.session_id == first and ("Clear cancelled", "info") in run.ui.notices
    run.ui.answers = [True]
    assert await run.session.new_session() is True
    assert run.session.store.session_id != first
    await run.session.shutdown("quit")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


async def test_dirty_repo_guard_refuses_a_new_session_while_changes_are_uncommitted(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "work.py").write_text("print(1)\n")
    run = await with_example(tmp_path, "dirty_repo_guard.py", mode="print", session="new")
    assert await run.session.new_session() is False  # headless: refused
    _git(tmp_path, "add", "work.py")
    _git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "work")
    assert await run.session.new_session() is True
    await run.session.shutdown("quit")


async def test_dirty_repo_guard_asks_in_the_ui(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "work.py").write_text("print(1)\n")
    run = await with_example(tmp_path, "dirty_repo_guard.py", session="new")
    run.ui.answers = ["No, let me commit first"]
    assert await run.session.new_session() is False
    assert "1 uncommitted file(s). new session anyway?" in run.ui.asked[-1][1]
    run.ui.answers = ["Yes, proceed anyway"]
    assert await run.session.new_session() is True
    await run.session.shutdown("quit")


async def test_the_project_trust_example_answers_from_its_dialog(tmp_path: Path) -> None:
    loaded = await load_extensions([path_source(example("project_trust.py"), tmp_path)])
    ui = RecordingUI(answers=["Trust this session", "Do not trust this session", None])
    assert (await decide_project_trust(loaded.extensions, str(tmp_path), "tui", ui))[0] is True
    assert (await decide_project_trust(loaded.extensions, str(tmp_path), "tui", ui))[0] is False
    assert (await decide_project_trust(loaded.extensions, str(tmp_path), "tui", ui))[0] is None
    assert (await decide_project_trust(loaded.extensions, str(tmp_path), "print", ui))[0] is None
    assert ui.asked[0] == ("select", f"Project trust for:\n{tmp_path}")
