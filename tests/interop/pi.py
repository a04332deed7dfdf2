"""Finding the reference Pi (Node ≥ 22.19 + @earendil-works/pi-coding-agent 0.84.4) for interop tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parent.parent
PI_DIR = Path(os.environ.get("CADDIE_PI_DIR") or REPO / ".cache" / "pi")
"""Where Node 22 and Pi are installed (``npm install node@22 @earendil-works/pi-coding-agent@0.84.4``);
``.ci/run`` installs them into ``.cache/pi`` of the checkout."""
PI_PACKAGE = PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent"
MIN_NODE = (22, 19)


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
        if candidate and (version := _node_version(str(candidate))) and version >= MIN_NODE:
            return str(candidate)
    return None


def pi_problem() -> str | None:
    """Why the reference Pi cannot run here (None when it can)."""
    if find_node() is None:
        return f"reference Pi not available: Node >= 22.19 not found (set CADDIE_PI_DIR, now {PI_DIR})"
    if not (PI_PACKAGE / "package.json").exists():
        return f"reference Pi not available: {PI_PACKAGE} not installed (set CADDIE_PI_DIR)"
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def skip_or_fail(reason: str) -> None:
    """Skip outside CI; in CI (``CI=1``) a test that cannot find what it compares against fails."""
    if in_ci():
        pytest.fail(f"{reason} — CI must install it (.ci/run)", pytrace=False)
    pytest.skip(reason)


def require_pi() -> str:
    """The node binary to run Pi with; skips the test (with the reason) when Pi is not available, and
    fails it under CI."""
    problem = pi_problem()
    if problem is not None:
        skip_or_fail(problem)
    node = find_node()
    assert node is not None
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
