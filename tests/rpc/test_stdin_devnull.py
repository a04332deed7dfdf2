"""``caddie --mode rpc < /dev/null``: a device the event loop cannot watch is read in a thread, so the empty
input ends the process at once (it used to hang with a traceback from the loop's reader)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.rpc.conftest import Host


def test_rpc_mode_with_stdin_from_dev_null_ends_cleanly(host: Host) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "caddie", "--mode", "rpc", "--model", "fake/fake-model"],
        cwd=host.project,
        env={**os.environ, "CADDIE_DIR": str(host.home)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Operation not permitted" not in done.stderr
