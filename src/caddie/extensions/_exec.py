"""``api.exec``: run a program without a shell and collect its output (in the session's sandbox, if any)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal as signals
from dataclasses import dataclass

from caddie.ai.abort import AbortSignal
from caddie.sandbox import Sandbox


@dataclass(slots=True)
class ExecResult:
    stdout: str
    stderr: str
    code: int
    killed: bool


async def run_process(
    command: str,
    args: list[str],
    *,
    timeout: float | None = None,
    cwd: str | None = None,
    signal: AbortSignal | None = None,
    sandbox: Sandbox | None = None,
) -> ExecResult:
    sandbox = sandbox or Sandbox.off()
    if sandbox.active and "/" not in command and shutil.which(command, path=os.environ.get("PATH")) is None:
        return ExecResult("", f"{command}: No such file or directory", 127, False)
    prepared = sandbox.prepare([command, *args], cwd or os.getcwd())
    try:
        proc = await asyncio.create_subprocess_exec(
            *prepared.argv,
            cwd=cwd,
            env=prepared.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=prepared.pass_fds,
        )
    except OSError as e:
        prepared.close()
        return ExecResult("", f"{command}: {e.strerror or e}", 127, False)

    killed = False

    def kill() -> None:
        nonlocal killed
        killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signals.SIGKILL)

    remove = signal.add_listener(kill) if signal is not None else (lambda: None)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        kill()
        out, err = await proc.communicate()
    finally:
        remove()
        prepared.close()
    code = proc.returncode if proc.returncode is not None else -1
    stderr = err.decode("utf-8", "replace")
    note = prepared.explain(stderr)
    return ExecResult(out.decode("utf-8", "replace"), f"{stderr}{note}\n" if note else stderr, code, killed)
