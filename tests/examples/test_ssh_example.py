"""Pi's ssh example as a Python extension: read, write, edit, bash and ``!`` commands run "remotely" — through
a stand-in ``ssh`` program that runs the command in another folder — with caddie's own tools."""

from __future__ import annotations

import stat
from pathlib import Path

from caddie.ai.messages import ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from tests.examples.harness import with_example


def _fake_ssh(tmp_path: Path) -> Path:
    script = tmp_path / "fake-ssh"
    script.write_text('#!/bin/bash\necho "$1" >> "$(dirname "$0")/hosts.log"\nshift\nexec bash -c "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


async def test_tools_and_user_commands_run_on_the_remote(tmp_path: Path) -> None:
    local = tmp_path / "local"
    remote = tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    (remote / "notes.txt").write_text("remote notes\n")
    ssh = _fake_ssh(tmp_path)
    run = await with_example(local, "ssh.py", flags={"ssh": f"dev@box:{remote}", "ssh-command": str(ssh)})
    assert run.ui.statuses["ssh"] == f"SSH: dev@box:{remote}"
    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("read", {"path": "notes.txt"}),
                    faux_tool_call("write", {"path": "sub/new.txt", "content": "made remotely\n"}),
                ]
            ),
            faux_message(
                [
                    faux_tool_call(
                        "edit", {"path": "notes.txt", "edits": [{"oldText": "remote", "newText": "edited"}]}
                    ),
                    faux_tool_call("bash", {"command": "pwd; ls"}),
                ]
            ),
            faux_message("done"),
        ]
    )
    await run.session.prompt("work remotely")
    results = [m for m in run.session.messages if isinstance(m, ToolResultMessage)]
    assert [r.is_error for r in results] == [False] * 4, [text_of(r.content) for r in results]
    assert text_of(results[0].content) == "remote notes\n"
    assert (remote / "sub" / "new.txt").read_text() == "made remotely\n" and not (
        local / "sub" / "new.txt"
    ).exists()
    assert (remote / "notes.txt").read_text() == "edited notes\n"
    assert text_of(results[3].content).startswith(f"{remote}\nnotes.txt\nsub")
    prompt = run.requests[0].system_prompt or ""
    assert f"Current working directory: {remote} (via SSH: dev@box)" in prompt
    message = await run.session.run_bash("cat notes.txt")
    assert (message.output, message.exit_code) == ("edited notes\n", 0)
    assert set((tmp_path / "hosts.log").read_text().split()) == {"dev@box"}
    await run.session.shutdown("quit")


async def test_without_the_flag_everything_stays_local(tmp_path: Path) -> None:
    run = await with_example(tmp_path, "ssh.py")
    message = await run.session.run_bash("echo here")
    assert message.output == "here\n" and "ssh" not in run.ui.statuses
    await run.session.shutdown("quit")
