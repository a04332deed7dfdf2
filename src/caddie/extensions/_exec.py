"""``api.exec``: run a program without a shell and collect its output."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal as signals
from dataclasses import dataclass

from caddie.ai.abort import AbortSignal


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
) -> ExecResult:
    try:
        proc = await asyncio.create_subprocess_exec(
            command,
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
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
    code = proc.returncode if proc.returncode is not None else -1
    return ExecResult(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), code, killed)
