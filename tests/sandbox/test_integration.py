"""The sandbox wired through caddie: settings and Pi's files, the agent's tools, ``!cmd``, ``api.exec``, the TUI
footer, RPC ``get_state``, a headless goal's check, ``caddie batch``, and the refusal when it cannot start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from caddie.ai.messages import TextContent, ToolResultMessage
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.extensions.api import ExtensionAPI
from tests.batch.helpers import SCRIPT, bash, batch, make_repo, read_results, tool, write_tasks
from tests.runtime.harness import inline_extension, start_session
from tests.sandbox.conftest import SECRET, require_bwrap
from tests.tui.harness import (
    SMALL,
    make_app,
    ready,
    screen_text,
    settle,
    submit,
    until,
    widget_text,
    write_settings,
)

ON = {"sandbox": {"mode": "workspace-write"}}


@pytest.fixture(autouse=True)
def bwrap(home: Path) -> None:
    require_bwrap()


def results_text(messages: list[Any]) -> list[str]:
    return [
        "".join(b.text for b in m.content if isinstance(b, TextContent))
        for m in messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_off_unless_configured_then_the_agents_tools_run_inside(workspace: Path, outside: Path) -> None:
    plain = await start_session(workspace)
    assert (
        plain.session.state().sandbox.mode == "off" and "sandbox" not in plain.session.state().system_prompt
    )
    await plain.session.shutdown("quit")

    run = await start_session(workspace, settings=ON)
    assert run.session.state().sandbox.summary() == "workspace-write, network off"
    assert (
        "- Commands run in a sandbox (workspace-write): they can write only in the project (not its .git) and "
        "$TMPDIR; credentials such as ~/.ssh are unreadable; there is no network."
        in run.session.state().system_prompt
    )
    run.faux.set_responses(
        [
            faux_message(
                [faux_tool_call("bash", {"command": f"echo x > {outside}/keep.txt; echo ok > in.txt"})]
            ),
            faux_message([faux_tool_call("write", {"path": str(outside / "new.txt"), "content": "x"})]),
            faux_message("done"),
        ]
    )
    await run.session.prompt("go")
    await run.session.wait_for_idle()
    bash_result, write_result = results_text(run.session.messages)
    assert "Blocked by the sandbox (workspace-write)" in bash_result
    assert write_result.startswith("Blocked by the sandbox (workspace-write)")
    assert (outside / "keep.txt").read_text() == "original\n" and not (outside / "new.txt").exists()
    assert (workspace / "in.txt").read_text() == "ok\n"
    await run.session.shutdown("quit")


async def test_user_commands_and_api_exec_run_inside(workspace: Path, outside: Path) -> None:
    captured: list[ExtensionAPI] = []
    run = await start_session(workspace, settings=ON, extensions=[inline_extension(captured.append)])
    message = await run.session.run_bash(f"echo x > {outside}/keep.txt")
    assert message.exit_code != 0 and "Blocked by the sandbox (workspace-write)" in message.output
    result = await captured[0].exec("sh", ["-c", f"cat ~/.ssh/id_ed25519; echo x > {outside}/new.txt"])
    assert result.code != 0 and SECRET not in result.stdout
    assert "Blocked by the sandbox (workspace-write)" in result.stderr
    assert (outside / "keep.txt").read_text() == "original\n" and not (outside / "new.txt").exists()
    assert (await captured[0].exec("no-such-program-x")).code == 127
    await run.session.shutdown("quit")


async def test_a_pi_users_sandbox_json_carries_over(workspace: Path, home: Path) -> None:
    pi_dir = Path(os.environ["PI_CODING_AGENT_DIR"])
    (pi_dir / "extensions").mkdir(parents=True)
    (pi_dir / "extensions" / "sandbox.json").write_text(
        json.dumps({"filesystem": {"denyRead": ["~/notes.txt"]}})
    )
    run = await start_session(workspace)
    sandbox = run.session.state().sandbox
    assert sandbox.mode == "workspace-write"
    assert sandbox.policy is not None and "registry.npmjs.org" in sandbox.policy.network.allowed
    message = await run.session.run_bash("cat ~/notes.txt")
    assert "ordinary file" not in message.output
    await run.session.shutdown("quit")


async def test_the_footer_shows_the_mode(workspace: Path) -> None:
    write_settings(**ON)
    app, _ = make_app(workspace)
    async with app.run_test(size=(120, 24)) as pilot:
        await ready(app, pilot)
        await until(pilot, lambda: "sandbox: workspace-write, network off" in widget_text(app.footer))
        await submit(pilot, app, "!touch /etc/caddie-sandbox-test")
        await settle(app, pilot)
        await until(pilot, lambda: "Blocked by the sandbox (workspace-write)" in screen_text(app))
    assert not Path("/etc/caddie-sandbox-test").exists()
    plain, _ = make_app(workspace.parent)
    write_settings(sandbox={"mode": "off"})
    async with plain.run_test(size=SMALL) as pilot:
        await ready(plain, pilot)
        assert "sandbox" not in widget_text(plain.footer)


def caddie(
    cwd: Path,
    *args: str,
    env: dict[str, str] | None = None,
    script: list[Any] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    run_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    if script is not None:
        script_file = cwd.parent / f"{cwd.name}-script.json"
        script_file.write_text(json.dumps(script))
        run_env["CADDIE_FAUX_SCRIPT"] = str(script_file)
    return subprocess.run(
        [sys.executable, "-m", "caddie", *args], cwd=cwd, env=run_env, capture_output=True, text=True,
        timeout=120, input=stdin,
    )  # fmt: skip


def test_rpc_get_state_reports_the_sandbox(workspace: Path) -> None:
    ask = json.dumps({"id": "1", "type": "get_state"}) + "\n"
    on = caddie(workspace, "--mode", "rpc", "--model", "faux/echo", "--sandbox", "read-only", stdin=ask)
    state = next(json.loads(line) for line in on.stdout.splitlines() if '"id":"1"' in line)["data"]
    assert state["sandbox"] == {"mode": "read-only", "network": {"mode": "off"}, "backend": "bubblewrap"}
    off = caddie(workspace, "--mode", "rpc", "--model", "faux/echo", stdin=ask)
    assert (
        "sandbox"
        not in next(json.loads(line) for line in off.stdout.splitlines() if '"id":"1"' in line)["data"]
    )


def test_caddie_refuses_to_run_when_the_sandbox_cannot_start(workspace: Path) -> None:
    done = caddie(
        workspace,
        "-p",
        "--model",
        "faux/echo",
        "--sandbox",
        "workspace-write",
        "hi",
        env={"PATH": str(workspace)},
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "caddie: the sandbox (workspace-write) cannot start: it needs bubblewrap (bwrap), which is not installed: "
        "install it (Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap; "
        "Arch: sudo pacman -S bubblewrap); or run with --sandbox off."
    ]
    assert done.stdout == ""


def test_caddie_refuses_to_run_where_bubblewrap_cannot_make_its_namespaces(
    workspace: Path, tmp_path: Path
) -> None:
    """A bwrap that fails the way it does where user namespaces are off: one line naming the setting."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    done = caddie(
        workspace, "-p", "--model", "faux/echo", "--sandbox", "read-only", "hi", env={"PATH": str(bin_dir)}
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "caddie: the sandbox (read-only) cannot start: bubblewrap cannot create its namespaces here (bwrap: "
        "setting up uid map: Permission denied): unprivileged user namespaces may be disabled (sysctl "
        "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ allow bwrap in AppArmor; in a container, allow "
        "user namespaces); or run with --sandbox off."
    ]


def test_a_headless_goal_is_sandboxed_by_default_and_its_check_too(workspace: Path, outside: Path) -> None:
    check = f"echo checked > {outside}/keep.txt"
    script = [
        tool("bash", {"command": f"echo x > {outside}/new.txt"}),
        tool("update_goal", {"status": "complete"}),
        tool("update_goal", {"status": "blocked"}),
        tool("update_goal", {"status": "blocked"}),
        "stuck",
    ]
    args = ["--mode", "json", "--model", "faux/faux-1", "--goal", "finish", "--goal-check", check]
    done = caddie(workspace, *args, script=script)
    results = [
        json.loads(line)["message"]
        for line in done.stdout.splitlines()
        if line.startswith('{"type":"message_end"') and '"toolResult"' in line
    ]
    texts = ["".join(c.get("text", "") for c in r["content"]) for r in results]
    assert "Blocked by the sandbox (workspace-write)" in texts[0]
    assert "Blocked by the sandbox (workspace-write)" in texts[1]  # the check's own output says it
    assert (outside / "keep.txt").read_text() == "original\n" and not (outside / "new.txt").exists()
    assert done.returncode != 0

    opted_out = caddie(
        workspace, *args, "--sandbox", "off", script=[tool("update_goal", {"status": "complete"}), "ok"]
    )
    assert opted_out.returncode == 0, opted_out.stderr
    assert (outside / "keep.txt").read_text() == "checked\n"


def test_a_batch_runs_setup_goal_and_check_sandboxed(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CADDIE_FAUX_SCRIPT", SCRIPT)  # each task plays the script committed in its repo
    script = [
        bash(f"echo x > {outside}/from-goal.txt; echo ok > done.txt"),
        tool("update_goal", {"status": "complete"}),
        "Done.",
    ]
    repo = make_repo(tmp_path / "repo", script)
    tasks = write_tasks(
        tmp_path / "t.jsonl",
        [
            {
                "id": "setup",
                "repo": str(repo),
                "objective": "x",
                "setup": f"echo x > {outside}/from-setup.txt",
            },
            {
                "id": "check",
                "repo": str(repo),
                "check": f"test -f done.txt && echo x > {outside}/from-check.txt",
            },
        ],
    )
    code, _, err = batch(str(tasks))
    assert code == 1, err
    records = {r["id"]: r for r in read_results(tmp_path / "t-results.jsonl")}
    assert records["setup"]["status"] == "error"
    assert (
        "setup exited" in records["setup"]["detail"]
        and "Blocked by the sandbox" in records["setup"]["detail"]
    )
    assert records["check"]["check_exit"] not in (0, None)
    assert "Blocked by the sandbox (workspace-write)" in records["check"]["check_tail"]
    assert (Path(records["check"]["workspace"]) / "done.txt").exists()  # the goal wrote its workspace
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]  # and nothing outside it

    again = write_tasks(
        tmp_path / "u.jsonl", [{"id": "open", "repo": str(repo), "check": "test -f done.txt"}]
    )
    code, _, err = batch(str(again), "--sandbox", "off")
    assert code == 0, err
    assert (outside / "from-goal.txt").exists()  # --sandbox off: the goal's command ran with full rights


async def test_an_editors_operations_combine_with_the_sandbox(workspace: Path, outside: Path) -> None:
    """ACP: file tools still go through the editor's buffers, but only where the sandbox allows; bash runs
    confined in caddie instead of the editor's terminal (which could not be confined)."""
    from caddie.sandbox import SandboxConfig, open_sandbox
    from caddie.tools import ToolOperations, create_builtin_tools
    from tests.acp.test_operations import Buffers, Shell
    from tests.tools.conftest import run_tool

    buffers, terminal = Buffers(workspace), Shell(0)
    sandbox = open_sandbox("workspace-write", str(workspace), SandboxConfig())
    try:
        tools = create_builtin_tools(
            str(workspace),
            operations=ToolOperations(files=_files(buffers), shell=terminal),
            sandbox=sandbox,
        )
        refused = await run_tool(tools["write"], {"path": str(outside / "x.txt"), "content": "x"})
        allowed = await run_tool(tools["write"], {"path": "in.txt", "content": "x"})
        ran = await run_tool(tools["bash"], {"command": f"echo x > {outside}/y.txt; echo $CADDIE_SANDBOXED"})
    finally:
        sandbox.close()
    assert refused.error is not None and refused.error.startswith("Blocked by the sandbox (workspace-write)")
    assert allowed.error is None and buffers.writes == [(str(workspace / "in.txt"), "x")]
    assert terminal.calls == [] and "workspace-write" in ran.text and not (outside / "y.txt").exists()


def _files(buffers: Any) -> Any:
    from caddie.tools import FileOperations

    return FileOperations(buffers.read_file, buffers.write_file)
