"""examples/sdk/remote.py's ``OverSsh`` on its own, through a stand-in ``ssh`` that runs the script here: a write
that the connection drops halfway leaves the old file, a whole one keeps the file's mode, and ssh failing to
connect says so. (tests/sdk/test_tool_operations.py runs the whole example against a fake model.)"""

from __future__ import annotations

import importlib.util
import stat
from pathlib import Path
from types import ModuleType

import pytest

from caddie.sdk import ToolError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sdk" / "remote.py"

FAKE_SSH = """#!/bin/sh
# ssh stand-in: FAKE_SSH_DOWN — no connection (ssh exits 255); FAKE_SSH_CUT=N — the connection drops after
# N bytes of input (the remote script sees its input end early)
shift
if [ -n "$FAKE_SSH_DOWN" ]; then echo "ssh: connect to host build-box port 22: Connection refused" >&2; exit 255; fi
if [ -n "$FAKE_SSH_CUT" ]; then head -c "$FAKE_SSH_CUT" | sh -c "$1"; exit 255; fi
exec sh -c "$1"
"""


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("remote_sdk_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_writes_land_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    script = project / "deploy.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    remote = _example().OverSsh("build-box", str(ssh))

    monkeypatch.setenv("FAKE_SSH_CUT", "10")
    with pytest.raises(ToolError, match=r"^SSH connection to build-box failed"):
        await remote.write_file(str(script), "echo new and longer\n" * 20)
    assert script.read_text() == "echo old\n"
    assert [p.name for p in project.iterdir()] == ["deploy.sh"]  # no temporary file left behind

    monkeypatch.delenv("FAKE_SSH_CUT")
    await remote.write_file(str(script), "echo new\n")
    await remote.write_file(str(project / "fresh.txt"), "")
    assert script.read_text() == "echo new\n" and stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(p.name for p in project.iterdir()) == ["deploy.sh", "fresh.txt"]

    monkeypatch.setenv("FAKE_SSH_DOWN", "1")
    with pytest.raises(ToolError) as failed:
        await remote.access(str(script))
    assert str(failed.value) == (
        "SSH connection to build-box failed: ssh: connect to host build-box port 22: Connection refused. "
        "Check that `ssh build-box` works without a password prompt."
    )
