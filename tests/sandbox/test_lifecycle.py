"""The sandbox's private directory: made per sandbox, removed at the end, and swept after a crash."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from caddie.sandbox import SandboxConfig
from caddie.sandbox.sandbox import PRIVATE_PREFIX, open_sandbox, remove_tree
from tests.sandbox.conftest import MakeSandbox


def test_remove_tree_gets_through_unreadable_and_read_only_directories(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "locked" / "deep").mkdir(parents=True)
    (root / "locked" / "deep" / "f").write_text("x")
    (root / "sealed").mkdir()
    (root / "sealed" / "f").write_text("x")
    (root / "link").symlink_to(tmp_path / "keep")
    (tmp_path / "keep").write_text("kept")
    os.chmod(root / "sealed", 0o555)
    os.chmod(root / "locked", 0o000)
    remove_tree(str(root))
    assert not root.exists() and (tmp_path / "keep").read_text() == "kept"  # a symlink is not followed


def test_the_private_directory_lives_as_long_as_the_sandbox(
    make_sandbox: MakeSandbox, workspace: Path
) -> None:
    sandbox = make_sandbox(workspace)
    assert sandbox.policy is not None
    temp = Path(sandbox.policy.temp_dir)
    assert temp.is_dir() and stat.S_IMODE(temp.stat().st_mode) == 0o700
    (temp / "scratch").write_text("x")
    sandbox.close()
    assert not temp.parent.exists()


def test_a_crashed_caddies_private_directory_is_swept(home: Path, workspace: Path) -> None:
    from tests.sandbox.conftest import require_bwrap

    require_bwrap()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = Path(tempfile.gettempdir()) / f"{PRIVATE_PREFIX}{dead.stdout.strip()}-crashed"
    (stale / "tmp").mkdir(parents=True)
    (stale / "unreadable").mkdir(mode=0)
    sandbox = open_sandbox("read-only", str(workspace), SandboxConfig())
    try:
        assert not stale.exists()
    finally:
        sandbox.close()
