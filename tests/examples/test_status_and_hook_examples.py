"""Pi's status, hook and command examples as Python twins (model-status, status-line, notify,
auto-commit-on-exit, file-trigger, system-prompt-header, input-transform-streaming, reload-runtime,
widget-placement), each loaded from examples/extensions/ and exercised through a real session."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from caddie.ai.messages import CustomMessage
from caddie.ai.providers.faux import faux_message, faux_model, faux_tool_call
from tests.examples.harness import with_example


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


async def test_model_status_shows_the_model_after_a_switch(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "model_status.py")
    await run.session.set_model(faux_model(model_id="faux-2"))
    assert run.ui.statuses["model"] == "🤖 faux-2"
    assert ("Model: faux/faux-2", "info") in run.ui.notices
    await run.session.shutdown("quit")


async def test_status_line_counts_turns(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "status_line.py")
    assert run.ui.statuses["status-demo"] == "Ready"
    run.faux.set_responses([faux_message(faux_tool_call("bash", {"command": "true"})), faux_message("done")])
    await run.session.prompt("go")
    assert run.ui.statuses["status-demo"] == "✓ Turn 2 complete"
    await run.session.shutdown("quit")


def test_notify_picks_the_terminal_protocol() -> None:
    import importlib.util

    from tests.examples.harness import example

    spec = importlib.util.spec_from_file_location("notify_example", example("notify.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.terminal_sequence("caddie", "Ready", {}) == "\x1b]777;notify;caddie;Ready\x07"
    assert module.terminal_sequence("caddie", "Ready", {"KITTY_WINDOW_ID": "1"}).startswith(
        "\x1b]99;i=1:d=0;caddie"
    )
    assert module.terminal_sequence("caddie", "Ready", {"WT_SESSION": "x"}) is None
    assert "CreateToastNotifier('caddie')" in module.windows_toast_script("caddie", "Ready")


async def test_auto_commit_on_exit_commits_with_the_last_answer(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "a@b")
    _git(tmp_path, "config", "user.name", "a")
    run = await with_example(tmp_path, "auto_commit_on_exit.py")
    run.faux.set_responses(
        [
            faux_message(faux_tool_call("write", {"path": "feature.py", "content": "x = 1\n"})),
            faux_message("Added the feature flag\nMore details"),
        ]
    )
    await run.session.prompt("add it")
    await run.session.shutdown("quit")
    assert _git(tmp_path, "log", "--format=%s") == "[caddie] Added the feature flag\n"
    assert ("Auto-committed: [caddie] Added the feature flag", "info") in run.ui.notices


async def test_file_trigger_sends_what_is_written_to_the_file(tmp_path: Path) -> None:
    trigger = tmp_path / "trigger.txt"
    trigger.write_text("")
    run = await with_example(tmp_path, "file_trigger.py", flags={"trigger-file": str(trigger)})
    run.faux.set_responses([faux_message("running the tests")])
    trigger.write_text("Run the tests\n")
    for _ in range(100):
        if run.faux.call_count:
            break
        await asyncio.sleep(0.05)
    await run.session.wait_for_idle(background=False)
    customs = [m for m in run.session.messages if isinstance(m, CustomMessage)]
    assert [m.content for m in customs] == ["External trigger: Run the tests"]
    assert trigger.read_text() == ""
    assert (f"Watching {trigger}", "info") in run.ui.notices
    await run.session.shutdown("quit")


async def test_system_prompt_header_reports_the_prompt_size(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "system_prompt_header.py")
    run.faux.set_responses([faux_message("ok")])
    await run.session.prompt("hi")
    assert run.ui.statuses["system-prompt"] == f"System: {len(run.requests[0].system_prompt or '')} chars"
    await run.session.shutdown("quit")
    assert "system-prompt" not in run.ui.statuses


async def test_input_transform_streaming_adds_the_diff_stat(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "a")
    (tmp_path / "a.py").write_text("2\n")
    run = await with_example(tmp_path, "input_transform_streaming.py")
    run.faux.set_responses([faux_message("ok"), faux_message("ok")])
    await run.session.prompt("review my changes")
    await run.session.prompt("hello")
    first, second = run.request_texts(0), run.request_texts(1)
    assert first[0].startswith("review my changes\n\nCurrent uncommitted changes:\n```\na.py | 2 +-")
    assert second[-1] == "hello"
    await run.session.shutdown("quit")


async def test_reload_runtime_reloads_and_its_tool_queues_a_follow_up(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "reload_runtime.py", "widget_placement.py")
    assert run.ui.widgets["widget-below"] == (["Below editor widget"], "belowEditor")
    assert run.ui.widgets["widget-above"] == (["Above editor widget"], "aboveEditor")
    before = run.session.extensions.extensions[0]
    await run.session.prompt("/reload-runtime")
    assert run.session.extensions.extensions[0] is not before  # imported and registered again
    assert run.types().count("extension_error") == 0
    run.faux.set_responses(
        [faux_message(faux_tool_call("reload_runtime", {})), faux_message("asked"), faux_message("ok")]
    )
    await run.session.prompt("reload yourself")
    await run.session.wait_for_idle()
    assert run.request_texts(-1)[-1] == "/reload-runtime"  # as in Pi: a follow-up message, not a command
    await run.session.shutdown("quit")
