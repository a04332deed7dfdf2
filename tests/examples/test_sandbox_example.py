"""Pi's sandbox example on top of caddie's own sandbox: the status and ``/sandbox`` describe the active policy,
and ``--require-sandbox`` refuses commands while there is none."""

from __future__ import annotations

from pathlib import Path

from caddie.ai.messages import ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from caddie.sandbox import backend_for_platform
from tests.examples.harness import with_example
from tests.interop.pi import skip_or_fail


async def test_the_status_and_slash_sandbox_describe_the_policy(tmp_path: Path) -> None:
    problem = backend_for_platform().unavailable()
    if problem is not None:
        skip_or_fail(f"the sandbox cannot start here: {problem}")
    sandbox = {"mode": "workspace-write", "network": ["github.com", "pypi.org"], "denyWrite": [".env"]}
    run = await with_example(tmp_path, "sandbox.py", settings={"sandbox": sandbox})
    policy = run.session.core.sandbox.policy
    assert policy is not None and str(tmp_path) in policy.writable
    assert run.ui.statuses["sandbox"] == f"🔒 Sandbox: 2 domains, {len(policy.writable)} write paths"
    assert ("Sandbox initialized", "info") in run.ui.notices
    await run.session.prompt("/sandbox")
    shown, level = run.ui.notices[-1]
    lines = shown.splitlines()
    assert level == "info" and lines[0] == "Sandbox Configuration:"
    assert "  Allowed: github.com, pypi.org" in lines and "  Deny Write: .env" in lines
    assert f"  Allow Write: {', '.join(policy.writable)}" in lines
    await run.session.shutdown("quit")


async def test_require_sandbox_refuses_commands_while_it_is_off(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "sandbox.py", flags={"require-sandbox": True})
    assert run.ui.notices[0][1] == "error" and run.ui.notices[0][0].startswith("Sandbox is off")
    run.faux.set_responses([faux_message(faux_tool_call("bash", {"command": "echo hi"})), faux_message("ok")])
    await run.session.prompt("run it")
    [result] = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "--require-sandbox" in text_of(result.content)
    ran = await run.session.run_bash("echo hi")
    assert ran.exit_code == 1 and ran.output.startswith("The sandbox is off")
    await run.session.prompt("/sandbox")
    assert run.ui.notices[-1] == ("Sandbox is disabled", "info")
    await run.session.shutdown("quit")


async def test_without_the_flag_commands_run_and_a_warning_says_they_are_unconfined(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "sandbox.py")
    assert run.ui.notices[0][1] == "warning"
    ran = await run.session.run_bash("echo hi")
    assert ran.exit_code == 0 and ran.output.strip() == "hi"
    await run.session.shutdown("quit")
