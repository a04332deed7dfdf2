"""Finding the reference Pi (Node ≥ 22.19 + @earendil-works/pi-coding-agent 0.84.4) for interop tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
PI_DIR = Path(os.environ.get("CADDIE_PI_DIR", "/work/piref"))
PI_PACKAGE = PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent"


def _node_version(node: str) -> tuple[int, ...] | None:
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    try:
        return tuple(int(p) for p in out.strip().lstrip("v").split("."))
    except ValueError:
        return None


def find_node() -> str | None:
    for candidate in (PI_DIR / "node_modules" / "node" / "bin" / "node", shutil.which("node")):
        if candidate and (version := _node_version(str(candidate))) and version >= (22, 19):
            return str(candidate)
    return None


def _unavailable(reason: str) -> None:
    """Outside CI a missing Pi skips the test; under CI it fails it (CI installs Pi, so it must be there)."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason}; CI must install it (CI is set)")
    pytest.skip(reason)


def require_pi() -> str:
    """The node binary to run Pi with; skips the test (with the reason) when Pi is not available, and fails
    it under CI."""
    node = find_node()
    if node is None:
        _unavailable("reference Pi not available: Node >= 22.19 not found (set CADDIE_PI_DIR)")
        raise AssertionError("unreachable")
    if not (PI_PACKAGE / "package.json").exists():
        _unavailable(f"reference Pi not available: {PI_PACKAGE} not installed (set CADDIE_PI_DIR)")
    return node


def pi_session_context(path: Path) -> dict[str, object]:
    """What Pi's own SessionManager builds from ``path``."""
    node = require_pi()
    proc = subprocess.run(
        [node, str(HERE / "pi_session.mjs"), "context", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CADDIE_PI_DIR": str(PI_DIR)},
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result
