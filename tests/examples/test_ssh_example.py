"""Pi's ssh example as a Python extension: read, write, edit, bash and ``!`` commands run "remotely" — through
a stand-in ``ssh`` program that runs the command in another folder — with caddie's own tools."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from caddie.ai.messages import ToolCall, ToolResultMessage, text_of
from caddie.ai.providers.faux import faux_message, faux_tool_call
from tests.examples.harness import with_example


def _fake_ssh(tmp_path: Path) -> Path:
    script = tmp_path / "fake-ssh"
    script.write_text(
        "#!/bin/bash\n"
        'echo "$1" >> "$(dirname "$0")/hosts.log"\n'
        "shift\n"
        # FAKE_SSH_DOWN: the connection cannot be made (ssh's own failures exit 255)
        'if [ -n "$FAKE_SSH_DOWN" ]; then echo "ssh: connect to host box port 22: Connection refused" >&2; exit 255; fi\n'
        # FAKE_SSH_CUT=N: the connection drops after N bytes of input (the remote sees the input end early)
        'if [ -n "$FAKE_SSH_CUT" ]; then head -c "$FAKE_SSH_CUT" | bash -c "$1"; exit 255; fi\n'
        'exec bash -c "$1"\n'
    )
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


def _results(run: object) -> list[ToolResultMessage]:
    return [m for m in run.session.messages if isinstance(m, ToolResultMessage)]  # type: ignore[attr-defined]


async def test_a_write_cut_off_halfway_leaves_the_old_file_and_a_whole_write_keeps_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local"
    remote = tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    (remote / "run.sh").write_text("echo old\n")
    (remote / "run.sh").chmod(0o754)
    ssh = _fake_ssh(tmp_path)
    run = await with_example(local, "ssh.py", flags={"ssh": f"dev@box:{remote}", "ssh-command": str(ssh)})
    run.faux.set_responses(
        [
            faux_message([faux_tool_call("write", {"path": "run.sh", "content": "echo new, longer\n" * 10})]),
            faux_message("cut"),
            faux_message([faux_tool_call("write", {"path": "run.sh", "content": "echo new\n"})]),
            faux_message("done"),
        ]
    )
    monkeypatch.setenv("FAKE_SSH_CUT", "12")
    await run.session.prompt("write while the connection drops")
    cut = _results(run)[-1]
    assert cut.is_error and text_of(cut.content).startswith("SSH connection to dev@box failed"), cut
    assert (remote / "run.sh").read_text() == "echo old\n"
    assert sorted(p.name for p in remote.iterdir()) == ["run.sh"]  # no temporary file left behind
    monkeypatch.delenv("FAKE_SSH_CUT")
    await run.session.prompt("write again")
    assert not _results(run)[-1].is_error, text_of(_results(run)[-1].content)
    assert (remote / "run.sh").read_text() == "echo new\n"
    assert stat.S_IMODE((remote / "run.sh").stat().st_mode) == 0o754
    assert sorted(p.name for p in remote.iterdir()) == ["run.sh"]
    await run.session.shutdown("quit")


@pytest.fixture
def shared_remote() -> Iterator[Path]:
    """A remote folder anyone may use: as root, the stand-in ssh runs its commands as ``nobody`` (root may
    read and write anything, which would leave nothing refused to check)."""
    folder = Path(tempfile.mkdtemp(prefix="caddie-ssh-"))
    folder.chmod(0o755)
    (folder / "remote").mkdir(mode=0o777)
    (folder / "remote").chmod(0o777)
    (folder / "hosts.log").touch(mode=0o666)
    (folder / "hosts.log").chmod(0o666)
    yield folder
    shutil.rmtree(folder)


async def test_missing_refused_and_unreachable_files_fail_as_the_tools_word_them(
    tmp_path: Path, shared_remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local"
    local.mkdir()
    remote = shared_remote / "remote"
    (remote / "secret.txt").write_text("hidden\n")
    (remote / "secret.txt").chmod(0o000)
    (remote / "frozen.txt").write_text("frozen\n")
    (remote / "frozen.txt").chmod(0o444)
    (remote / "open.txt").write_text("open\n")
    (remote / "open.txt").chmod(0o666)
    ssh = _fake_ssh(shared_remote)
    if os.geteuid() == 0:
        as_nobody = tmp_path / "ssh-as-nobody"
        as_nobody.write_text(
            f'#!/bin/bash\nhost=$1; shift\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {ssh} "$host" "$@"\n'
        )
        as_nobody.chmod(0o755)
        ssh = as_nobody
    run = await with_example(local, "ssh.py", flags={"ssh": f"dev@box:{remote}", "ssh-command": str(ssh)})

    def edit(path: str, old: str) -> ToolCall:
        return faux_tool_call("edit", {"path": path, "edits": [{"oldText": old, "newText": "changed"}]})

    run.faux.set_responses(
        [
            faux_message(
                [
                    faux_tool_call("read", {"path": "gone.txt"}),
                    faux_tool_call("read", {"path": "secret.txt"}),
                    faux_tool_call("read", {"path": "frozen.txt"}),
                    edit("frozen.txt", "frozen"),
                    edit("gone.txt", "x"),
                    edit("open.txt", "open"),
                ]
            ),
            faux_message("seen"),
            faux_message([faux_tool_call("read", {"path": "open.txt"})]),
            faux_message("down"),
        ]
    )
    await run.session.prompt("look around")
    texts = [(r.is_error, text_of(r.content)) for r in _results(run)]
    assert texts == [
        (True, f"ENOENT: no such file or directory, access '{local}/gone.txt'"),
        (True, f"EACCES: permission denied, access '{local}/secret.txt'"),
        (False, "frozen\n"),  # readable: reading is all read asks for
        (True, "Could not edit file: frozen.txt. Error code: EACCES."),  # edit asks for writing too
        (True, "Could not edit file: gone.txt. Error code: ENOENT."),
        (False, "Successfully replaced 1 block(s) in open.txt."),
    ], texts
    assert (remote / "open.txt").read_text() == "changed\n" and (
        remote / "frozen.txt"
    ).read_text() == "frozen\n"
    monkeypatch.setenv("FAKE_SSH_DOWN", "1")
    await run.session.prompt("and now")
    down = _results(run)[-1]
    assert down.is_error and text_of(down.content) == (
        "SSH connection to dev@box failed: ssh: connect to host box port 22: Connection refused. "
        "Check that `ssh dev@box` works without a password prompt."
    )
    await run.session.shutdown("quit")
