"""Sandbox fixtures: a fake home full of secrets, workspaces, and the real bubblewrap (required under CI=1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caddie.sandbox import NetworkRule, Sandbox, SandboxConfig, SandboxMode, open_sandbox
from caddie.sandbox.bubblewrap import BubblewrapBackend
from tests.interop.pi import skip_or_fail

SECRET = "SECRET-KEY-MATERIAL"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_caddie_dir: Path) -> Path:
    """``HOME`` with an ssh key, AWS credentials and both auth.json files — everything a sandbox hides."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(SECRET)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(SECRET)
    (home / "notes.txt").write_text("ordinary file\n")
    pi_dir = tmp_path / "pi-agent"
    pi_dir.mkdir()
    (pi_dir / "auth.json").write_text(SECRET)
    (isolated_caddie_dir / "agent").mkdir(parents=True, exist_ok=True)
    (isolated_caddie_dir / "agent" / "auth.json").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(pi_dir))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the workspace, with a file the sandbox must not change."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "keep.txt").write_text("original\n")
    return path


def require_bwrap() -> None:
    problem = BubblewrapBackend().unavailable()
    if problem is not None:
        skip_or_fail(f"the sandbox cannot start here: {problem}")


MakeSandbox = Callable[..., Sandbox]


@pytest.fixture
def make_sandbox(home: Path) -> Iterator[MakeSandbox]:
    """``make_sandbox(workspace, mode="workspace-write", network=NetworkRule())``: a real one."""
    require_bwrap()
    made: list[Sandbox] = []

    def make(
        workspace: Path,
        mode: SandboxMode = "workspace-write",
        network: NetworkRule | None = None,
    ) -> Sandbox:
        sandbox = open_sandbox(mode, str(workspace), SandboxConfig(network=network or NetworkRule()))
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.close()
