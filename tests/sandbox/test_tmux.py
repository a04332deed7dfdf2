"""``caddie --sandbox workspace-write`` in a real terminal (tmux): the footer names the mode, and a ``!cmd``
that writes outside the project or reads an ssh key is refused with the sandbox's note on screen."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.sandbox.conftest import SECRET, require_bwrap
from tests.tui.test_tmux_smoke import tmux  # noqa: F401 (the fixture)
from tests.tui.tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_a_sandboxed_interactive_session(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    require_bwrap()
    project, outside, temp = tmp_path / "project", tmp_path / "outside.txt", tmp_path / "tmp"
    project.mkdir()
    temp.mkdir()
    (tmp_path / ".ssh").mkdir()  # the terminal's HOME is tmp_path
    (tmp_path / ".ssh" / "id_ed25519").write_text(SECRET)
    command = (
        f"cd {shlex.quote(str(project))} && TMPDIR={shlex.quote(str(temp))} "
        f"CADDIE_DIR={shlex.quote(str(tmp_path / 'caddie-home'))} "
        f"CADDIE_OLLAMA_URL=http://127.0.0.1:9 {shlex.quote(sys.executable)} -m caddie --model faux/echo "
        "--sandbox workspace-write"
    )
    tmux.type(command)
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "sandbox: workspace-write, network off" in s, "the footer with the sandbox")
    assert len(list(temp.glob("caddie-sandbox-*"))) == 1  # its private directory, while it runs

    tmux.type(f"!echo pwned > {outside}; cat ~/.ssh/id_ed25519; echo inside > in.txt")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "Blocked by the sandbox" in s, "the sandbox's note")
    assert "Read-only file system" in screen and SECRET not in screen
    assert not outside.exists() and (project / "in.txt").read_text() == "inside\n"

    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for(lambda s: s.rstrip().endswith("\n$"), "caddie to exit")
    assert list(temp.iterdir()) == [], "the sandbox's private directory outlived caddie"
